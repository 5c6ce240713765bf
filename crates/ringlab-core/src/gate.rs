//! Starting job threads together, and stopping them on SIGINT, SIGTERM or
//! SIGHUP (a closed terminal: handled as SIGTERM).

use anyhow::{Context, Result};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

/// Holds worker threads after their setup until the runner opens it, to
/// start them all at once (`true`) or send them home (`false`). Shared by
/// the storage runner and the HTTP client runner.
#[derive(Default)]
pub struct StartGate {
    state: Mutex<Option<bool>>,
    opened: Condvar,
}

impl StartGate {
    pub fn open(&self, go: bool) {
        *self.state.lock().unwrap_or_else(|p| p.into_inner()) = Some(go);
        self.opened.notify_all();
    }

    pub fn wait(&self) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(go) = *state {
                return go;
            }
            state = self.opened.wait(state).unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// Signals (SIGINT, SIGTERM, SIGHUP) received since [`interrupt_flag`] installed
/// its handler.
static SIGNALS: AtomicUsize = AtomicUsize::new(0);

/// The flag [`interrupt_flag`] hands out: one per process, however many
/// commands ask for it.
static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// How many SIGINT/SIGTERM arrived so far: 1 means "stop and report", 2
/// means "stop waiting as well" (a drain of I/O in flight, a read-back);
/// the third ends the process.
pub fn signals_received() -> usize {
    SIGNALS.load(Ordering::SeqCst)
}

/// A flag SIGINT, SIGTERM and SIGHUP set, so a run or sweep ends cleanly and still
/// reports what it measured. A second signal only makes the waits that are
/// left give up ([`signals_received`] is 2): the run still cleans up and
/// reports. A third ends the process at once (exit code 130); ringlab's
/// files are unlinked as soon as they are created, so even that leaves
/// nothing behind, and the named temporary files of file systems without
/// O_TMPFILE are unlinked first ([`crate::files::unlink_temps`]).
pub fn interrupt_flag() -> Result<Arc<AtomicBool>> {
    if let Some(flag) = FLAG.get() {
        return Ok(flag.clone());
    }
    let interrupted = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        let flag = interrupted.clone();
        // SAFETY: the handler only touches atomics, unlink(2) and _exit
        // (through signal_hook's exit), all async-signal-safe.
        unsafe {
            signal_hook::low_level::register(sig, move || {
                let n = SIGNALS.fetch_add(1, Ordering::SeqCst) + 1;
                flag.store(true, Ordering::SeqCst);
                if n >= 3 {
                    crate::files::unlink_temps();
                    signal_hook::low_level::exit(130);
                }
            })
        }
        .context("installing the signal handler")?;
    }
    Ok(FLAG.get_or_init(|| interrupted).clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gate_releases_every_waiter_with_the_same_answer() {
        let gate = Arc::new(StartGate::default());
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let g = gate.clone();
                std::thread::spawn(move || g.wait())
            })
            .collect();
        gate.open(false);
        for w in waiters {
            assert!(!w.join().unwrap());
        }
    }
}
