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

/// The start line of several runs that must begin together (the jobs of
/// one fio group): each run arrives when its jobs are set up and waits for
/// the others; one that fails to set up releases the rest with `false`.
pub struct GroupGate {
    members: usize,
    state: Mutex<(usize, bool)>,
    all: Condvar,
    /// When each member started (the wall clock right after the gate).
    starts: Mutex<Vec<Option<std::time::SystemTime>>>,
}

impl GroupGate {
    pub fn new(members: usize) -> GroupGate {
        GroupGate {
            members,
            state: Mutex::new((0, false)),
            all: Condvar::new(),
            starts: Mutex::new(vec![None; members]),
        }
    }

    /// Arrives (`ok`: this run is set up) and waits for every member;
    /// returns whether all of them set up.
    pub fn arrive(&self, ok: bool) -> bool {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.0 += 1;
        s.1 |= !ok;
        self.all.notify_all();
        while s.0 < self.members && !s.1 {
            s = self.all.wait(s).unwrap_or_else(|p| p.into_inner());
        }
        !s.1
    }

    /// A member failed before it could arrive: nobody waits for it.
    pub fn fail(&self) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.1 = true;
        self.all.notify_all();
    }

    /// Notes when member `i` started.
    pub fn started(&self, i: usize, at: std::time::SystemTime) {
        if let Some(slot) = self
            .starts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_mut(i)
        {
            *slot = Some(at);
        }
    }

    /// When each member started (None: it never did).
    pub fn starts(&self) -> Vec<Option<std::time::SystemTime>> {
        self.starts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
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
