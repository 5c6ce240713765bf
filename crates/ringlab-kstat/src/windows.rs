//! System calls counted in windows (the default evidence).
//!
//! Attaching a program to `raw_syscalls:sys_enter` puts every system call
//! of every process on the kernel's slow path (the syscall-work flag) and
//! runs the program on each: at depth 1 on zram (one `io_uring_enter` a
//! request) that was about 1.4% of the CPU in a profile, most of the
//! default evidence's cost. So by default the program is attached for a
//! window of [`WINDOW`] every [`PERIOD`], by a thread of its own, and the
//! per-op figures divide the calls inside the windows by the operations
//! completed inside them. `--evidence full` counts the whole run.
//! The thread's own calls inside a window (reading the counters, its
//! sleep) are a handful per window against thousands of operations.

use crate::bpf::{Counted, TgidCounters};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The operations completed so far in the run (all jobs).
pub type OpsNow = Arc<dyn Fn() -> u64 + Send + Sync>;

/// How long each window counts.
pub const WINDOW: Duration = Duration::from_millis(100);
/// A window opens this often; the first at the start of the run.
pub const PERIOD: Duration = Duration::from_secs(1);

/// What the windows counted.
#[derive(Clone, Copy, Debug, Default)]
pub struct Totals {
    pub syscalls: u64,
    pub io_uring_enter: u64,
    /// Operations completed inside the windows.
    pub ops: u64,
    pub windows: u32,
}

type Stop = Arc<(Mutex<bool>, Condvar)>;

pub struct SyscallWindows {
    stop: Stop,
    thread: Option<JoinHandle<Result<Totals, String>>>,
}

/// Waits `d` or until stopped; whether stopped.
fn wait(stop: &Stop, d: Duration) -> bool {
    let deadline = Instant::now() + d;
    let (lock, cv) = &**stop;
    let mut stopped = lock.lock().unwrap_or_else(|p| p.into_inner());
    while !*stopped {
        let now = Instant::now();
        if now >= deadline {
            return false;
        }
        stopped = cv
            .wait_timeout(stopped, deadline - now)
            .unwrap_or_else(|p| p.into_inner())
            .0;
    }
    true
}

impl SyscallWindows {
    /// Loads the counter for thread group `tgid` and starts the windows
    /// (the first opens now); `ops_now` gives the run's operations so far.
    pub fn start(tgid: u32, ops_now: OpsNow) -> Result<SyscallWindows, String> {
        let points = [Counted {
            tracepoint: "raw_syscalls:sys_enter",
            with_io_uring_enter: true,
        }];
        let (mut c, failed) = TgidCounters::attach(tgid, &points)?;
        if let Some((_, why)) = failed.into_iter().next() {
            return Err(why);
        }
        let stop: Stop = Arc::new((Mutex::new(false), Condvar::new()));
        let stop2 = stop.clone();
        let thread = std::thread::Builder::new()
            .name("ringlab-windows".into())
            .spawn(move || {
                let mut t = Totals::default();
                loop {
                    c.reattach()?;
                    let read = |c: &TgidCounters| -> Result<(u64, u64), String> {
                        Ok((
                            c.read(0).map_err(|e| e.to_string())?,
                            c.read(1).map_err(|e| e.to_string())?,
                        ))
                    };
                    let (s0, e0) = read(&c)?;
                    let o0 = ops_now();
                    let stopped = wait(&stop2, WINDOW);
                    let (s1, e1) = read(&c)?;
                    let o1 = ops_now();
                    c.detach();
                    t.syscalls += s1.saturating_sub(s0);
                    t.io_uring_enter += e1.saturating_sub(e0);
                    t.ops += o1.saturating_sub(o0);
                    t.windows += 1;
                    if stopped || wait(&stop2, PERIOD - WINDOW) {
                        return Ok(t);
                    }
                }
            })
            .map_err(|e| format!("starting the sampling thread: {e}"))?;
        Ok(SyscallWindows {
            stop,
            thread: Some(thread),
        })
    }

    /// Ends the windows (the one open now ends here) and returns their
    /// counts.
    pub fn finish(mut self) -> Result<Totals, String> {
        {
            let (lock, cv) = &*self.stop;
            *lock.lock().unwrap_or_else(|p| p.into_inner()) = true;
            cv.notify_all();
        }
        match self.thread.take().map(|h| h.join()) {
            Some(Ok(r)) => r,
            _ => Err("the sampling thread ended abnormally".into()),
        }
    }
}
