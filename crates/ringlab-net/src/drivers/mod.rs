//! The drivers: each supplies the mechanics of one interface (readiness
//! with epoll, completions with io_uring) around the shared
//! [`Client`](crate::client::Client) state machine.

pub mod epoll;
pub mod uring;

use crate::client::Client;
use crate::sys::RawAddr;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// What a driver needs to know about the run.
pub struct RunCtx<'a> {
    pub addr: RawAddr,
    /// End of the run on the client's clock.
    pub end_ns: u64,
    /// Set when the run is interrupted or another thread failed.
    pub stop: &'a AtomicBool,
    /// Responses so far, published once per loop turn for the kernel
    /// evidence's sampling windows.
    pub progress: &'a AtomicU64,
}

impl RunCtx<'_> {
    #[inline]
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    #[inline]
    pub fn publish(&self, client: &Client) {
        self.progress
            .store(client.stats.responses.ops, Ordering::Relaxed);
    }
}

/// One client thread's event loop over an interface.
pub trait Driver {
    /// Opens every connection and drives them until the end of the run,
    /// then closes them all. Errors are setup failures; socket errors are
    /// counted in the client and the run goes on.
    fn run(&mut self, client: &mut Client, ctx: &RunCtx) -> io::Result<()>;
}
