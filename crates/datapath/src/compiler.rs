//! The compiler thread the daemon supplies to the pipeline
//! (`sluice_pipeline::codegen::Compiler`): the pipeline starts no thread
//! and reads no clock of its own, so table code built in the background is
//! built here, and a large table's quiet time is timed by this clock.

use sluice_pipeline::codegen::{Compiler, Job};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// One thread, `sluice-jit`, that builds every submitted job in turn.
#[derive(Debug)]
struct Thread {
    /// `None` if the thread could not be started: jobs run in `submit`.
    tx: Option<Mutex<Sender<Arc<Job>>>>,
    start: Instant,
}

impl Compiler for Thread {
    fn submit(&self, job: Arc<Job>) {
        let sent = self
            .tx
            .as_ref()
            .is_some_and(|t| t.lock().unwrap_or_else(|e| e.into_inner()).send(job.clone()).is_ok());
        if !sent {
            job.run();
        }
    }

    fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }
}

/// The process-wide compiler thread (started on first use).
pub fn compiler() -> Arc<dyn Compiler> {
    static ONE: OnceLock<Arc<Thread>> = OnceLock::new();
    ONE.get_or_init(|| {
        let (tx, rx) = channel::<Arc<Job>>();
        let started = std::thread::Builder::new()
            .name("sluice-jit".into())
            .spawn(move || {
                while let Ok(job) = rx.recv() {
                    job.run();
                }
            })
            .is_ok();
        Arc::new(Thread { tx: started.then(|| Mutex::new(tx)), start: Instant::now() })
    })
    .clone()
}
