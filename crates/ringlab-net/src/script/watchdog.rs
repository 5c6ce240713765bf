//! The script's functions under watch, and its `os.exit`.
//!
//! A call into the script (its top level, `setup`, `init`, `request`,
//! `delay`, `response`, `done`) that runs longer than the whole run may
//! last (-d plus --timeout) never returns: LuaJIT runs a compiled loop with
//! no hook to stop it. A watchdog thread then ends the process with a
//! message naming the function (exit code 1); ringlab's temporary files
//! are unlinked first.
//!
//! `os.exit(code)` in a script does not end the process from inside Lua:
//! it stops the run as an interruption does, and ringlab exits with the
//! script's code after the results, naming it ([`exit_requested`]).

use std::cell::Cell;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The functions a call can be in, by index.
const NAMES: [&str; 7] = [
    "the script's top level",
    "setup()",
    "init()",
    "request()",
    "delay()",
    "response()",
    "done()",
];

const SLOTS: usize = 1024;
/// Per thread: when its current call started (ms since [`base`], plus 1;
/// 0: not in a call) and which function it is.
static STARTED: [AtomicU64; SLOTS] = [const { AtomicU64::new(0) }; SLOTS];
static WHICH: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);
/// The limit in ms (0: no watchdog running).
static LIMIT_MS: AtomicU64 = AtomicU64::new(0);
static WHAT: OnceLock<String> = OnceLock::new();

/// os.exit's code (i64::MIN: not called) and the function it was called
/// in.
static EXIT_CODE: AtomicI64 = AtomicI64::new(i64::MIN);
static EXIT_IN: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static SLOT: Cell<Option<usize>> = const { Cell::new(None) };
}

fn base() -> Instant {
    static BASE: OnceLock<Instant> = OnceLock::new();
    *BASE.get_or_init(Instant::now)
}

fn now_ms() -> u64 {
    base().elapsed().as_millis() as u64 + 1
}

fn my_slot() -> Option<usize> {
    SLOT.with(|s| {
        if s.get().is_none() {
            let n = NEXT_SLOT.fetch_add(1, Ordering::Relaxed);
            if n < SLOTS {
                s.set(Some(n));
            }
        }
        s.get()
    })
}

/// One call into the script, watched until dropped.
pub struct Call {
    slot: Option<usize>,
    outer: (u64, usize),
}

impl Call {
    pub fn enter(name: &str) -> Call {
        let slot = my_slot();
        let mut outer = (0, 0);
        if let Some(s) = slot {
            let which = NAMES.iter().position(|n| *n == name).unwrap_or(0);
            outer = (
                STARTED[s].load(Ordering::Relaxed),
                WHICH[s].load(Ordering::Relaxed),
            );
            // A call made from inside another (none today) keeps the outer
            // start time.
            if outer.0 == 0 {
                WHICH[s].store(which, Ordering::Relaxed);
                STARTED[s].store(now_ms(), Ordering::Release);
            }
        }
        Call { slot, outer }
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        if let Some(s) = self.slot {
            WHICH[s].store(self.outer.1, Ordering::Relaxed);
            STARTED[s].store(self.outer.0, Ordering::Release);
        }
    }
}

/// Starts the watchdog (once): a call lasting longer than `limit` ends
/// the process. `what` names the script and the limit for the message.
pub fn start(limit: Duration, what: String) {
    let ms = limit.as_millis().max(1) as u64;
    if LIMIT_MS.swap(ms, Ordering::SeqCst) != 0 {
        return;
    }
    let _ = WHAT.set(what);
    base();
    let _ = std::thread::Builder::new()
        .name("ringlab-lua-watch".into())
        .spawn(watch);
}

fn watch() {
    loop {
        std::thread::sleep(Duration::from_millis(50));
        let limit = LIMIT_MS.load(Ordering::Relaxed);
        let now = now_ms();
        let used = NEXT_SLOT.load(Ordering::Relaxed).min(SLOTS);
        for s in 0..used {
            let started = STARTED[s].load(Ordering::Acquire);
            if started == 0 || now.saturating_sub(started) <= limit {
                continue;
            }
            let name = NAMES[WHICH[s].load(Ordering::Relaxed).min(NAMES.len() - 1)];
            // done() runs after the report: what was measured is out.
            let measured = if name == "done()" {
                "the results above were measured before done() was called"
            } else {
                "nothing was measured that can be reported"
            };
            eprintln!(
                "ringlab: {}: {name} has run for {:.1} s without returning, longer than the whole run may last ({}): stopped (an endless loop?); {measured}",
                WHAT.get().map(String::as_str).unwrap_or("--script"),
                (now - started) as f64 / 1e3,
                format_args!("{:.1} s", limit as f64 / 1e3)
            );
            ringlab_core::files::unlink_temps();
            // SAFETY: _exit ends the process at once; Lua threads are
            // stuck and could not be joined.
            unsafe { libc::_exit(1) };
        }
    }
}

/// Records `os.exit(code)` from the function the thread is in, and stops
/// the run as an interruption would.
pub fn request_exit(code: i64) {
    let which = my_slot()
        .map(|s| WHICH[s].load(Ordering::Relaxed))
        .unwrap_or(0);
    if EXIT_CODE
        .compare_exchange(i64::MIN, code, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok()
    {
        EXIT_IN.store(which, Ordering::SeqCst);
    }
    if let Ok(flag) = ringlab_core::interrupt_flag() {
        flag.store(true, Ordering::SeqCst);
    }
}

/// `Some((code, function))` when the script called os.exit.
pub fn exit_requested() -> Option<(i32, &'static str)> {
    let code = EXIT_CODE.load(Ordering::SeqCst);
    (code != i64::MIN).then(|| {
        (
            code.clamp(0, 255) as i32,
            NAMES[EXIT_IN.load(Ordering::SeqCst).min(NAMES.len() - 1)],
        )
    })
}
