//! io_uring knowledge stated once: the knob table ([`knobs`]), its
//! command-line flags ([`cli`]) and the one ring builder ([`ring`]).

pub mod cli;
pub mod knobs;
pub mod ring;

pub use knobs::{Knob, Mode, ReapMode, UringOptions, KNOBS};
pub use ring::{build_ring, explain_setup_error};
