//! Sampling windows for the per-request io_uring tracepoints, run by a
//! thread of their own.
//!
//! A tracepoint with a perf event attached costs at every hit, even while
//! the event is disabled, so these tracepoints are attached only for a
//! window and detached after it. Attaching and detaching are slow and
//! unpredictable: both take the kernel's `event_mutex`, and detaching the
//! last event of a tracepoint waits for an RCU grace period under it
//! (25-45 ms each on the development VM, so about 0.4 s for eleven, and
//! longer while another process does the same). None of that may stall the
//! runner, whose ticks end the run on time, so this thread does it: it
//! attaches the counters to every thread of the process, takes the
//! operation count, counts for [`WINDOW`] (or [`WINDOW_OPS`]), takes the count again and
//! detaches. It is started before the whole-run counters are opened, so
//! its own system calls are not counted, and it leaves itself out of the
//! windows.

use crate::perf::TracepointCounter;
use std::fs;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// How long one window counts at most.
pub const WINDOW: Duration = Duration::from_millis(50);

/// A window ends early once this many operations completed inside it:
/// enough for per-op figures to three places, and on a path as fast as
/// NOP requests (millions per second, slowed by two thirds while counted)
/// it keeps the window to a few milliseconds.
pub const WINDOW_OPS: u64 = 20_000;

/// The operations completed so far in the run (all jobs).
pub type OpsNow = Arc<dyn Fn() -> u64 + Send + Sync>;

enum Request {
    /// A window; told on the sender once its counters count.
    Window(OpsNow, Option<mpsc::Sender<()>>),
    Stop,
}

/// What the windows counted so far.
#[derive(Default)]
pub struct WindowTotals {
    /// Per tracepoint (in the order given to [`Sampler::start`]): the
    /// count over all windows, or why it could not be counted.
    pub counts: Vec<Result<u64, String>>,
    /// Operations completed inside the windows.
    pub ops: u64,
    /// System calls this thread made during the measured run (attaching,
    /// reading and detaching counters), which the process-wide counters
    /// leave out; `None` where they could not be counted.
    pub own_syscalls: Option<u64>,
}

pub struct Sampler {
    requests: mpsc::Sender<Request>,
    busy: Arc<AtomicBool>,
    totals: Arc<Mutex<WindowTotals>>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Sampler {
    /// Starts the thread for the tracepoints `names` (all known to exist).
    pub fn start(names: Vec<&'static str>) -> std::io::Result<Sampler> {
        let (tx, rx) = mpsc::channel();
        let busy = Arc::new(AtomicBool::new(false));
        let totals = Arc::new(Mutex::new(WindowTotals {
            counts: vec![Ok(0); names.len()],
            ..WindowTotals::default()
        }));
        let (b, t) = (busy.clone(), totals.clone());
        let thread = thread::Builder::new()
            .name("ringlab-kstat".into())
            .spawn(move || serve(&names, &rx, &b, &t))?;
        Ok(Sampler {
            requests: tx,
            busy,
            totals,
            thread: Some(thread),
        })
    }

    /// Asks for a window unless one is under way; returns at once.
    pub fn request_window(&self, ops_now: &OpsNow) {
        self.request(ops_now, None);
    }

    /// A window that counts from now: returns once its counters count (or
    /// after `limit`). The runner opens the first window so before the run
    /// starts, so every run of [`WINDOW`] or longer has one, however long
    /// attaching takes on a busy machine.
    pub fn window_from_now(&self, ops_now: &OpsNow, limit: Duration) {
        let (tx, rx) = mpsc::channel();
        if self.request(ops_now, Some(tx)) {
            let _ = rx.recv_timeout(limit);
        }
    }

    fn request(&self, ops_now: &OpsNow, counting: Option<mpsc::Sender<()>>) -> bool {
        if self.busy.swap(true, Ordering::AcqRel) {
            return false;
        }
        let sent = self
            .requests
            .send(Request::Window(ops_now.clone(), counting))
            .is_ok();
        if !sent {
            self.busy.store(false, Ordering::Release);
        }
        sent
    }

    /// Ends a window under way at once (its counts and operations up to
    /// now still count) and starts no other; returns at once.
    pub fn stop(&self) {
        let _ = self.requests.send(Request::Stop);
    }

    /// Waits until the thread has detached everything; the totals.
    pub fn finish(mut self) -> WindowTotals {
        self.stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        std::mem::take(&mut *self.totals.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Every thread of this process but the calling one.
fn other_threads() -> Vec<libc::pid_t> {
    let me = rustix::thread::gettid().as_raw_nonzero().get();
    fs::read_dir("/proc/self/task")
        .map(|dir| {
            dir.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .filter(|&t| t != me)
                .collect()
        })
        .unwrap_or_default()
}

fn serve(
    names: &[&'static str],
    rx: &mpsc::Receiver<Request>,
    busy: &AtomicBool,
    totals: &Mutex<WindowTotals>,
) {
    // This thread's own calls, from the first window (the run's start) to
    // the stop, so that a count of the whole process can be compared.
    let own = TracepointCounter::open("raw_syscalls:sys_enter", false).ok();
    let mut first = true;
    while let Ok(Request::Window(ops_now, counting)) = rx.recv() {
        if first {
            if let Some(c) = &own {
                c.enable();
            }
            first = false;
        }
        let stopped = window(names, rx, &ops_now, counting, totals);
        busy.store(false, Ordering::Release);
        if stopped {
            break;
        }
    }
    if let Some(c) = own {
        c.disable();
        let n = if first { Ok(0) } else { c.read() };
        totals
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .own_syscalls = n.ok();
    }
}

/// One window; whether a stop came meanwhile.
fn window(
    names: &[&'static str],
    rx: &mpsc::Receiver<Request>,
    ops_now: &OpsNow,
    counting: Option<mpsc::Sender<()>>,
    totals: &Mutex<WindowTotals>,
) -> bool {
    let tids = other_threads();
    let mut opened: Vec<Option<TracepointCounter>> = Vec::with_capacity(names.len());
    let mut errors: Vec<Option<String>> = vec![None; names.len()];
    for (i, name) in names.iter().enumerate() {
        match TracepointCounter::open_threads(name, &tids) {
            Ok(c) => opened.push(Some(c)),
            Err(e) => {
                errors[i] = Some(e);
                opened.push(None);
            }
        }
    }
    // Attaching may have waited long: if the run ended meanwhile, this
    // window counts nothing.
    let mut stopped = matches!(rx.try_recv(), Ok(Request::Stop));
    if !stopped {
        let at = ops_now();
        for c in opened.iter().flatten() {
            c.enable();
        }
        if let Some(tx) = counting {
            let _ = tx.send(());
        }
        stopped = count_until_enough(rx, ops_now, at);
        for c in opened.iter().flatten() {
            c.disable();
        }
        let ops = ops_now().saturating_sub(at);
        let mut t = totals.lock().unwrap_or_else(|p| p.into_inner());
        t.ops += ops;
        for ((count, c), err) in t.counts.iter_mut().zip(&opened).zip(&mut errors) {
            if let Some(c) = c {
                match c.read() {
                    Ok(v) => {
                        if let Ok(n) = count {
                            *n += v;
                        }
                    }
                    Err(e) => *err = Some(format!("read failed: {e}")),
                }
            }
        }
    }
    let mut t = totals.lock().unwrap_or_else(|p| p.into_inner());
    for (count, err) in t.counts.iter_mut().zip(errors) {
        if let (Some(e), Ok(_)) = (err, &count) {
            *count = Err(e);
        }
    }
    drop(t);
    // Detaching waits for grace periods: done last, off everyone's path.
    drop(opened);
    stopped
}

/// Waits until the window has lasted [`WINDOW`] or seen [`WINDOW_OPS`]
/// operations (looking every 5 ms); whether a stop came meanwhile.
fn count_until_enough(rx: &mpsc::Receiver<Request>, ops_now: &OpsNow, at: u64) -> bool {
    let start = Instant::now();
    loop {
        let left = WINDOW.saturating_sub(start.elapsed());
        if left.is_zero() || ops_now().saturating_sub(at) >= WINDOW_OPS {
            return false;
        }
        match rx.recv_timeout(left.min(Duration::from_millis(5))) {
            Ok(Request::Stop) | Err(RecvTimeoutError::Disconnected) => return true,
            Ok(Request::Window(..)) | Err(RecvTimeoutError::Timeout) => {}
        }
    }
}
