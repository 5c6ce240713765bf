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
    /// Per member: whether it goes first, and whether its run ended. A
    /// member that does not go first starts once every one that does has
    /// ended (see [`GroupGate::go_first`]).
    order: Mutex<(Vec<bool>, Vec<bool>)>,
    turn: Condvar,
}

impl GroupGate {
    pub fn new(members: usize) -> GroupGate {
        GroupGate {
            members,
            state: Mutex::new((0, false)),
            all: Condvar::new(),
            starts: Mutex::new(vec![None; members]),
            order: Mutex::new((vec![false; members], vec![false; members])),
            turn: Condvar::new(),
        }
    }

    /// Member `i` goes first: the members that do not go first wait at
    /// [`GroupGate::wait_turn`], after the gate, until it has ended. Set
    /// before the runs start.
    pub fn go_first(&self, i: usize) {
        let mut o = self.order.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(f) = o.0.get_mut(i) {
            *f = true;
        }
    }

    /// Member `i`'s run ended (whatever its outcome).
    pub fn ended(&self, i: usize) {
        let mut o = self.order.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = o.1.get_mut(i) {
            *e = true;
        }
        self.turn.notify_all();
    }

    /// Returns at once for a member that goes first (or when none does);
    /// else waits until every member that goes first has ended.
    pub fn wait_turn(&self, i: usize) {
        let mut o = self.order.lock().unwrap_or_else(|p| p.into_inner());
        if o.0.get(i).copied().unwrap_or(true) {
            return;
        }
        while o.0.iter().zip(&o.1).any(|(&first, &ended)| first && !ended) {
            o = self.turn.wait(o).unwrap_or_else(|p| p.into_inner());
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

    #[test]
    fn a_member_that_does_not_go_first_waits_until_the_first_ones_ended() {
        let gate = Arc::new(GroupGate::new(3));
        gate.go_first(1);
        // The one that goes first, and every member when none does, pass.
        gate.wait_turn(1);
        GroupGate::new(2).wait_turn(0);
        let passed = Arc::new(AtomicUsize::new(0));
        let waiters: Vec<_> = [0, 2]
            .into_iter()
            .map(|i| {
                let (g, p) = (gate.clone(), passed.clone());
                std::thread::spawn(move || {
                    g.wait_turn(i);
                    p.fetch_add(1, Ordering::SeqCst);
                })
            })
            .collect();
        // Another member's end releases nobody.
        gate.ended(0);
        assert_eq!(passed.load(Ordering::SeqCst), 0);
        gate.ended(1);
        for w in waiters {
            w.join().unwrap();
        }
        assert_eq!(passed.load(Ordering::SeqCst), 2);
    }
}
