//! What every ringlab command shares, at the bottom of the crate graph:
//! usage errors and the exit-code contract ([`error`]), the start gate and
//! the signal flag ([`gate`]), CPU lists and pinning ([`cpus`]), and
//! `--output` files that are written whole or not at all ([`output`]).

pub mod cpus;
pub mod error;
pub mod gate;
pub mod limits;
pub mod output;

pub use error::{usage_error, UsageError};
pub use gate::{interrupt_flag, StartGate};
