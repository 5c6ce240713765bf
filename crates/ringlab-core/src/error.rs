//! The error that means "the invocation or its environment is wrong": the
//! binary exits with code 2 for it, and 1 for every other failure.

use thiserror::Error;

/// Bad input or an unusable setup, found before anything was measured. The
/// message says what is wrong and how to fix it.
#[derive(Debug, Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Returns early with a [`UsageError`] built like `format!`.
#[macro_export]
macro_rules! usage {
    ($($arg:tt)*) => {
        return Err(anyhow::Error::new($crate::error::UsageError(format!($($arg)*))))
    };
}

/// Builds a [`UsageError`] wrapped as `anyhow::Error`.
pub fn usage_error(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(msg.into()))
}

/// The user stopped the command (SIGINT, SIGTERM) before it had anything to
/// report: the binary exits with code 130.
#[derive(Debug, Error)]
#[error("{0}")]
pub struct Interrupted(pub String);
