//! io_uring knowledge stated once: the knob table ([`knobs`]), its
//! command-line flags ([`cli`]), the one ring builder ([`ring`]) and the
//! one `io_uring_enter` ([`enter`]).

pub mod cli;
pub mod enter;
pub mod knobs;
pub mod ring;

pub use enter::enter;
pub use knobs::{Knob, Mode, ReapMode, UringOptions, KNOBS};
pub use ring::{build_ring, explain_setup_error};
