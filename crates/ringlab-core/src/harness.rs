//! The one run harness of every command that runs jobs on threads
//! (`ringlab io`, `ringlab http`): spawn the job threads, let each set up
//! and report, start them together (or none), supervise in 50 ms ticks (the
//! caller's sampler and progress hang off the tick), stop on time, signal or
//! a failed job, and collect per-thread failures one way: the first real
//! error wins over the aborts it caused.
//!
//! ```text
//! let mut h = Harness::spawn(&spec, job)?;   // jobs set up, report ready
//! kstat.enable(...);                         // counters follow the jobs
//! let started_at = h.start();                // all go, or none
//! h.supervise(runtime, &interrupted, |tick, elapsed| kstat.tick(tick));
//! kstat.disable();
//! let outcomes = h.finish(|e| e.is::<Aborted>())?;
//! ```

use crate::StartGate;
use anyhow::{anyhow, Context, Result};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime};

/// How often the supervisor wakes: the kernel-evidence sampling window.
pub const TICK: Duration = Duration::from_millis(50);

/// A job told not to start because another job's setup failed.
#[derive(Debug, thiserror::Error)]
#[error("aborted before start: another job failed to set up")]
pub struct Aborted;

/// What the harness runs.
pub struct JobSpec {
    /// Job threads to start.
    pub count: u32,
    /// Thread name prefix; the job index follows (`ringlab-job0`).
    pub thread_name: &'static str,
    /// What one thread is, for messages (`job thread`).
    pub what: &'static str,
    /// The flag that makes fewer threads (`--numjobs`).
    pub fewer: &'static str,
}

/// One job's handle on the harness, given to its thread.
pub struct JobSlot {
    pub index: u32,
    /// Set when the run must end (runtime over, interrupted, a job failed).
    pub stop: Arc<AtomicBool>,
    /// Taken by the first `ready`: the harness counts answers until every
    /// sender is gone, so a job must not keep its own while it waits.
    ready: Cell<Option<mpsc::Sender<bool>>>,
    gate: Arc<StartGate>,
}

impl JobSlot {
    /// Reports whether this job's setup worked and waits until every job
    /// reported; returns whether to go on (all set up).
    pub fn ready(&self, ok: bool) -> bool {
        if let Some(tx) = self.ready.take() {
            let _ = tx.send(ok);
        }
        self.gate.wait()
    }
}

/// The job threads of one run.
pub struct Harness<T> {
    handles: Vec<JoinHandle<Result<T>>>,
    gate: Arc<StartGate>,
    stop: Arc<AtomicBool>,
    all_ready: bool,
    started: Option<Instant>,
    what: &'static str,
}

impl<T: Send + 'static> Harness<T> {
    /// Starts `spec.count` threads running `job` and waits until each has
    /// reported its setup through [`JobSlot::ready`] (or ended). A job that
    /// fails sets the stop flag, so that nobody waits out the runtime for it.
    pub fn spawn<F>(spec: &JobSpec, job: F) -> Result<Harness<T>>
    where
        F: Fn(JobSlot) -> Result<T> + Send + Sync + 'static,
    {
        let job = Arc::new(job);
        let gate = Arc::new(StartGate::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = mpsc::channel::<bool>();
        let mut handles = Vec::with_capacity(spec.count as usize);
        for index in 0..spec.count {
            let slot = JobSlot {
                index,
                stop: stop.clone(),
                ready: Cell::new(Some(ready_tx.clone())),
                gate: gate.clone(),
            };
            let (job, stop) = (job.clone(), stop.clone());
            let spawned = thread::Builder::new()
                .name(format!("{}{index}", spec.thread_name))
                .spawn(move || {
                    let outcome = job(slot);
                    if outcome.is_err() {
                        stop.store(true, Ordering::SeqCst);
                    }
                    outcome
                });
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    // Send the threads already started home before failing.
                    gate.open(false);
                    for h in handles {
                        let _ = h.join();
                    }
                    let why = if e.raw_os_error() == Some(libc::EAGAIN) {
                        format!(" ({})", crate::limits::thread_limits())
                    } else {
                        String::new()
                    };
                    return Err(e).context(format!(
                        "cannot start {} {index}{why}: lower {}",
                        spec.what, spec.fewer
                    ));
                }
            }
        }
        drop(ready_tx);
        // A thread that ended without reporting (a panic) drops its sender,
        // so this ends with fewer answers than threads.
        let n = handles.len();
        let all_ready = ready_rx.iter().take(n).filter(|&ok| ok).count() == n;
        Ok(Harness {
            handles,
            gate,
            stop,
            all_ready,
            started: None,
            what: spec.what,
        })
    }

    /// Whether every job set up.
    pub fn all_ready(&self) -> bool {
        self.all_ready
    }

    /// Sends every job home at [`Harness::start`] (a run started together
    /// with others whose setup failed).
    pub fn cancel(&mut self) {
        self.all_ready = false;
    }

    /// Tells every job to stop before [`Harness::start`] lets them go:
    /// they start and end without an I/O (a run ended before its start).
    pub fn stop_at_start(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }

    /// Lets every job go (or, if one failed to set up, none); returns the
    /// wall-clock start of the run.
    pub fn start(&mut self) -> SystemTime {
        let at = SystemTime::now();
        self.started = Some(Instant::now());
        self.gate.open(self.all_ready);
        at
    }

    /// Waits in [`TICK`]s until `runtime` is over, `interrupted` is set, a
    /// job failed or every job ended; calls `on_tick(tick, elapsed)` first in
    /// each tick.
    pub fn supervise(
        &self,
        runtime: Option<Duration>,
        interrupted: &AtomicBool,
        mut on_tick: impl FnMut(u64, Duration),
    ) {
        let Some(start) = self.started.filter(|_| self.all_ready) else {
            return;
        };
        let mut tick = 0u64;
        loop {
            let elapsed = start.elapsed();
            on_tick(tick, elapsed);
            tick += 1;
            if self.handles.iter().all(|h| h.is_finished())
                || interrupted.load(Ordering::Relaxed)
                || runtime.is_some_and(|r| elapsed >= r)
            {
                return;
            }
            let left = runtime.map_or(TICK, |r| r.saturating_sub(elapsed));
            thread::sleep(left.min(TICK));
            if self.stop.load(Ordering::Relaxed) {
                return;
            }
        }
    }

    /// Tells every job to stop, joins them, and returns their outcomes in
    /// job order, or the first real failure: an error `is_abort` does not
    /// call an abort (one caused by another job's failure) wins over those.
    pub fn finish(self, is_abort: impl Fn(&anyhow::Error) -> bool) -> Result<Vec<T>> {
        self.stop.store(true, Ordering::SeqCst);
        let what = self.what;
        let mut outcomes = Vec::with_capacity(self.handles.len());
        let mut first_err: Option<anyhow::Error> = None;
        for h in self.handles {
            let o = h
                .join()
                .unwrap_or_else(|_| Err(anyhow!("a {what} panicked")));
            match o {
                Ok(t) => outcomes.push(t),
                Err(e) => {
                    let aborted = |e: &anyhow::Error| e.is::<Aborted>() || is_abort(e);
                    let replace = match &first_err {
                        None => true,
                        Some(first) => aborted(first) && !aborted(&e),
                    };
                    if replace {
                        first_err = Some(e);
                    }
                }
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(outcomes),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(count: u32) -> JobSpec {
        JobSpec {
            count,
            thread_name: "test-job",
            what: "job thread",
            fewer: "--numjobs",
        }
    }

    #[test]
    fn all_start_together_and_return_in_order() {
        let mut h = Harness::spawn(&spec(3), |slot: JobSlot| {
            if !slot.ready(true) {
                return Err(Aborted.into());
            }
            while !slot.stop.load(Ordering::Relaxed) {
                thread::yield_now();
            }
            Ok(slot.index)
        })
        .unwrap();
        assert!(h.all_ready());
        h.start();
        let mut ticks = 0;
        h.supervise(Some(Duration::ZERO), &AtomicBool::new(false), |_, _| {
            ticks += 1
        });
        assert_eq!(ticks, 1, "a zero runtime ends after the first tick");
        assert_eq!(h.finish(|_| false).unwrap(), vec![0, 1, 2]);
    }

    #[test]
    fn the_first_real_error_wins_over_the_aborts_it_caused() {
        let mut h = Harness::spawn(&spec(4), |slot: JobSlot| -> Result<u32> {
            if slot.index == 2 {
                slot.ready(false);
                anyhow::bail!("job 2 could not open its file");
            }
            if !slot.ready(true) {
                return Err(Aborted.into());
            }
            Ok(slot.index)
        })
        .unwrap();
        assert!(!h.all_ready());
        h.start();
        h.supervise(None, &AtomicBool::new(false), |_, _| {
            panic!("no tick when a job failed to set up")
        });
        let err = h.finish(|_| false).unwrap_err();
        assert_eq!(err.to_string(), "job 2 could not open its file");
    }

    #[test]
    fn a_panicking_job_is_an_error_not_a_hang() {
        let mut h = Harness::spawn(&spec(2), |slot: JobSlot| -> Result<u32> {
            if slot.index == 0 {
                panic!("boom");
            }
            if !slot.ready(true) {
                return Err(Aborted.into());
            }
            Ok(1)
        })
        .unwrap();
        h.start();
        let err = h.finish(|_| false).unwrap_err();
        assert!(err.to_string().contains("panicked"), "{err}");
    }
}
