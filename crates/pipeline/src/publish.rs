//! Publishing the OpenFlow pipeline to forwarding threads: the core's
//! left-right publisher ([`sluice_core::publish`]) instantiated with
//! [`Pipeline`], whose flow tables log their changes (`table.rs`,
//! `TableOp`) so a copy is brought up to date by replay.

use crate::Pipeline;
pub use sluice_core::publish::{Replicated, WAIT_LIMIT};

/// The control side: the master pipeline and the copy being prepared.
pub type Publisher = sluice_core::publish::Publisher<Pipeline>;
/// The workers' side: the current published copy.
pub type Published = sluice_core::publish::Published<Pipeline>;

impl Replicated for Pipeline {
    fn settle(&mut self) {
        Pipeline::settle(self)
    }
    fn start_logs(&mut self) {
        Pipeline::start_logs(self)
    }
    fn replica(&self) -> Pipeline {
        Pipeline::replica(self)
    }
    fn sync_copy(&mut self, copy: &mut Pipeline) {
        Pipeline::sync_copy(self, copy)
    }
    fn logs_skip_copy(&mut self) {
        Pipeline::logs_skip_copy(self)
    }
    /// Table code built on the compiler thread waits to be installed.
    fn publish_pending(&self) -> bool {
        self.jit_waiting()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Config;

    #[test]
    fn a_pipeline_copy_is_synced_by_replay_and_sees_new_flows() {
        use sluice_ofp::message::{flow_mod_command as fc, FlowMod};
        let mut p = Publisher::new(Pipeline::new(Config::default()));
        let pubd = p.published();
        let count = |q: &Pipeline| q.tables().first().map_or(0, |t| t.entries().len());
        assert_eq!(count(&pubd.load()), 0);
        let fm = FlowMod { command: fc::ADD, priority: 7, ..FlowMod::default() };
        p.master_mut().flow_mod(&fm).unwrap();
        p.publish();
        assert_eq!(count(&pubd.load()), 1);
        // The other copy is synced by replaying the log at the next one.
        let fm = FlowMod { command: fc::ADD, priority: 8, ..FlowMod::default() };
        p.master_mut().flow_mod(&fm).unwrap();
        p.publish();
        assert_eq!(count(&pubd.load()), 2);
        assert_eq!(p.fallbacks(), 0);
    }
}
