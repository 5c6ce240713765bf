//! ringlab's HTTP side.
//!
//! [`plan::HttpArgs`] (flags) → [`plan::HttpPlan`] (validated) →
//! [`run::run_http`] (threads) → a driver per thread ([`drivers`]: epoll or
//! io_uring mechanics) around the one [`client::Client`] state machine
//! (connect, write, read, [`http`] parse, record, next) → `RunResult`.
//! [`serve`] is the other side: a minimal keep-alive server.

pub mod client;
pub mod config;
pub mod drivers;
pub mod http;
pub mod plan;
pub mod run;
pub mod script;
pub mod serve;
pub mod sys;
pub mod text;
pub mod tls;
pub mod wrk;

pub use plan::{HttpArgs, HttpPlan};
pub use serve::ServeArgs;
