//! What every ringlab command shares, at the bottom of the crate graph:
//! usage errors and the exit-code contract ([`error`]), the start gate and
//! the signal flag ([`gate`]), CPU lists and pinning ([`cpus`]).

pub mod cpus;
pub mod error;
pub mod gate;

pub use error::{usage_error, UsageError};
pub use gate::{interrupt_flag, StartGate};
