//! Starting job threads together, and stopping them on SIGINT/SIGTERM.

use anyhow::{Context, Result};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Condvar, Mutex};

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

/// A flag SIGINT and SIGTERM set, so a run or sweep ends cleanly; a second
/// signal ends the process at once (exit code 130).
pub fn interrupt_flag() -> Result<Arc<AtomicBool>> {
    let interrupted = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // A second signal ends the process at once.
        signal_hook::flag::register_conditional_shutdown(sig, 130, interrupted.clone())
            .context("installing the signal handler")?;
        signal_hook::flag::register(sig, interrupted.clone())
            .context("installing the signal handler")?;
    }
    Ok(interrupted)
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
