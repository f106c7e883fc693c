//! BARRIER_REPLY waits for workers inside a burst, and only for them.
//!
//! The datapath runs with one real worker thread and two in-memory test
//! ports added through the same `Shared::add_port` the control thread
//! uses: a source that hands out queued frames and a sink whose transmit
//! blocks until the test opens its gate. A frame forwarded from the source
//! to the sink therefore holds the worker inside its burst (the transmit
//! half, which keeps the burst's pipeline version), which is what the real
//! barrier wait has to sit out. Every wait is bounded; the gate is opened
//! on drop so a failing test cannot hang in `Datapath`'s join.

use std::collections::VecDeque;
use std::io;
use std::os::fd::RawFd;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use sluice_ofp::message::{flow_mod_command, Message, Outgoing};
use sluice_ofp::ofctl::{parse_flow, Usage};
use sluice_ports::testutil::test_frame;
use sluice_ports::{Port, RxBuf};

use crate::{Datapath, DatapathConfig, DatapathSwitch};

/// Generous bound for things that must happen (no speed is asserted).
const BOUND: Duration = Duration::from_secs(30);
/// How long a barrier must stay unanswered while a worker is held.
const NOT_YET: Duration = Duration::from_millis(600);

/// Frames for the source port to hand out.
#[derive(Default)]
struct Queue(Mutex<VecDeque<Vec<u8>>>);

struct Source(Arc<Queue>);

impl Port for Source {
    fn rx_burst(&mut self, bufs: &mut [RxBuf]) -> io::Result<usize> {
        let mut q = self.0 .0.lock().unwrap_or_else(|e| e.into_inner());
        let mut n = 0;
        while n < bufs.len() {
            let Some(f) = q.pop_front() else { break };
            bufs[n].load(&f);
            n += 1;
        }
        Ok(n)
    }
    fn tx_burst(&mut self, frames: &[&[u8]]) -> io::Result<usize> {
        Ok(frames.len())
    }
    fn link_up(&self) -> bool {
        true
    }
    fn name(&self) -> &str {
        "test-source"
    }
    fn hw_addr(&self) -> [u8; 6] {
        [2, 0, 0, 0, 0, 1]
    }
    fn raw_fd(&self) -> Option<RawFd> {
        None
    }
}

#[derive(Default)]
struct GateState {
    /// `tx_burst` calls so far.
    entered: usize,
    /// Frames transmitted.
    sent: usize,
    open: bool,
    /// Panic inside `tx_burst` instead of waiting.
    panic: bool,
}

/// Controls the sink: transmit blocks while closed.
#[derive(Default)]
struct Gate {
    state: Mutex<GateState>,
    cv: Condvar,
}

impl Gate {
    fn state(&self) -> std::sync::MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn open(&self) {
        self.state().open = true;
        self.cv.notify_all();
    }

    /// Waits (bounded) until `tx_burst` was entered `n` times.
    fn wait_entered(&self, n: usize) {
        let deadline = Instant::now() + BOUND;
        let mut s = self.state();
        while s.entered < n {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "the worker never transmitted to the sink");
            s = self.cv.wait_timeout(s, left).unwrap_or_else(|e| e.into_inner()).0;
        }
    }
}

/// Opens the gate when dropped (declared after the datapath, so dropped
/// first: a failing assertion cannot leave the worker stuck at join).
struct OpenOnDrop(Arc<Gate>);

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        self.0.open();
    }
}

struct Sink(Arc<Gate>);

impl Port for Sink {
    fn rx_burst(&mut self, _bufs: &mut [RxBuf]) -> io::Result<usize> {
        Ok(0)
    }
    fn tx_burst(&mut self, frames: &[&[u8]]) -> io::Result<usize> {
        let mut s = self.0.state();
        s.entered += 1;
        self.0.cv.notify_all();
        if s.panic {
            drop(s);
            panic!("test sink: simulated worker panic inside a burst (expected by this test)");
        }
        let deadline = Instant::now() + BOUND * 2;
        while !s.open {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break; // never hang a test run for good
            }
            s = self.0.cv.wait_timeout(s, left).unwrap_or_else(|e| e.into_inner()).0;
        }
        s.sent += frames.len();
        Ok(frames.len())
    }
    fn link_up(&self) -> bool {
        true
    }
    fn name(&self) -> &str {
        "test-sink"
    }
    fn hw_addr(&self) -> [u8; 6] {
        [2, 0, 0, 0, 0, 2]
    }
    fn raw_fd(&self) -> Option<RawFd> {
        None
    }
}

/// One worker serving a source (port 1) and a gated sink (port 2).
fn lab(gate: &Arc<Gate>) -> (Datapath, Arc<Queue>) {
    let dp = Datapath::start(DatapathConfig { workers: 1, ..Default::default() })
        .expect("datapath without configured ports");
    let q = Arc::new(Queue::default());
    dp.shared.add_port(1, Box::new(Source(q.clone())));
    dp.shared.add_port(2, Box::new(Sink(gate.clone())));
    (dp, q)
}

fn flow(sw: &DatapathSwitch, text: &str) {
    let spec = parse_flow(text, Usage::Add).expect("flow text");
    let r = sw.apply(1, &Message::FlowMod(spec.to_flow_mod(flow_mod_command::ADD)));
    assert!(r.is_empty(), "flow-mod refused: {r:?}");
}

/// Sends BARRIER_REQUEST from another thread; its reply arrives on the
/// returned channel.
fn barrier_async(dp: &Datapath, xid: u32) -> mpsc::Receiver<Vec<Outgoing>> {
    let sw = dp.switch();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(sw.apply(xid, &Message::BarrierRequest));
    });
    rx
}

fn assert_barrier_reply(out: &[Outgoing], xid: u32) {
    assert!(
        out.iter().any(|o| o.xid == xid && o.msg == Message::BarrierReply),
        "expected BARRIER_REPLY xid {xid}, got {out:?}"
    );
}

/// Waits (bounded) until `f` holds.
fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + BOUND;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn barrier_reply_waits_for_a_worker_held_in_a_burst() {
    let gate = Arc::new(Gate::default());
    let (dp, q) = lab(&gate);
    let _open = OpenOnDrop(gate.clone());
    let sw = dp.switch();
    flow(&sw, "in_port=1,actions=output:2");

    // Idle worker (sleeping between rounds): the barrier does not wait.
    let rx = barrier_async(&dp, 10);
    assert_barrier_reply(&rx.recv_timeout(BOUND).expect("barrier with an idle worker"), 10);

    // Hold the worker inside a burst: its frame is decided by the flow
    // above and now sits in the sink's transmit.
    q.0.lock().unwrap().push_back(test_frame([2, 0, 0, 0, 0, 9], [2, 0, 0, 0, 0, 8], 1, 60));
    gate.wait_entered(1);

    // A change the barrier must cover, then the barrier itself.
    flow(&sw, "in_port=1,actions=drop");
    let rx = barrier_async(&dp, 11);
    match rx.recv_timeout(NOT_YET) {
        Err(RecvTimeoutError::Timeout) => {}
        other => panic!("BARRIER_REPLY went out while a worker held an older version: {other:?}"),
    }

    gate.open();
    assert_barrier_reply(&rx.recv_timeout(BOUND).expect("barrier after release"), 11);
    assert_eq!(gate.state().sent, 1, "the held frame was sent before the reply");
    assert_eq!(
        crate::shared::lock(&dp.shared.publisher).old_readers(),
        0,
        "no worker reads an older version after the reply"
    );

    // Every packet after the reply sees the change: this one is dropped.
    let before = dp.stats().packets;
    q.0.lock().unwrap().push_back(test_frame([2, 0, 0, 0, 0, 9], [2, 0, 0, 0, 0, 8], 2, 60));
    eventually("the second frame to be processed", || dp.stats().packets > before);
    let s = gate.state();
    assert_eq!((s.entered, s.sent), (1, 1), "a frame after the barrier used the old flow");
}

#[test]
fn barrier_is_not_held_by_a_worker_that_panicked_in_a_burst() {
    let gate = Arc::new(Gate::default());
    gate.state().panic = true;
    let (dp, q) = lab(&gate);
    let _open = OpenOnDrop(gate.clone());
    let sw = dp.switch();
    flow(&sw, "in_port=1,actions=output:2");
    q.0.lock().unwrap().push_back(test_frame([2, 0, 0, 0, 0, 9], [2, 0, 0, 0, 0, 8], 1, 60));
    gate.wait_entered(1);
    // threads[0] is the control thread, threads[1] the only worker.
    eventually("the worker thread to end", || dp.threads[1].is_finished());

    flow(&sw, "in_port=1,actions=drop");
    let rx = barrier_async(&dp, 12);
    assert_barrier_reply(&rx.recv_timeout(BOUND).expect("barrier after the worker died"), 12);
    assert_eq!(crate::shared::lock(&dp.shared.publisher).old_readers(), 0);
}
