//! What every ringlab command shares, at the bottom of the crate graph:
//! usage errors and the exit-code contract ([`error`]), the start gate and
//! the signal flag ([`gate`]), CPU lists and pinning ([`cpus`]), resource
//! limits ([`limits`]), `--output` files written whole or not at all
//! ([`output`]), the io_uring knob table with the one ring builder
//! ([`uring`]), the run harness that starts, supervises and collects job
//! threads ([`harness`]), and command lines quoted for a shell ([`shell`]).

pub mod child;
pub mod cleaner;
pub mod clock;
pub mod cpus;
pub mod error;
pub mod files;
pub mod gate;
pub mod harness;
pub mod limits;
pub mod output;
pub mod shard;
pub mod shell;
pub mod uring;

pub use error::{usage_error, UsageError};
pub use gate::{interrupt_flag, StartGate};
