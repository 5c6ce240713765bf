//! fio's language for `ringlab io`: its option names on the command line
//! ([`cli`]), its INI job files ([`jobfile`]), both translated by one table
//! ([`options`]), and its JSON output shape ([`json`]).

pub mod cli;
pub mod content;
pub mod jobfile;
pub mod json;
pub mod names;
pub mod normal;
pub mod options;
pub mod value;

pub use options::help_text;
