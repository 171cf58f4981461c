//! Shared by the attribute's behaviour tests: error types that carry the framework's
//! refusals (one of them with Retry-After hints), and a counter of attempts.

#![allow(dead_code)]

use resilience::retry::{ErrorClass, RetryHint};
use resilience::ResilienceError;
use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// The operation's own error, or a refusal of the framework.
#[derive(Debug, Clone, PartialEq)]
pub enum ApiError {
    /// A transient failure of attempt number `.0`.
    Flaky(u32),
    /// The framework refused or stopped the call.
    Refused(ResilienceError),
}

impl From<ResilienceError> for ApiError {
    fn from(e: ResilienceError) -> Self {
        ApiError::Refused(e)
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApiError::Flaky(n) => write!(f, "flaky failure on attempt {n}"),
            ApiError::Refused(e) => write!(f, "refused: {e}"),
        }
    }
}

/// Counts attempts; `fail_until(n)` fails the first `n - 1` of them.
#[derive(Debug, Default)]
pub struct Attempts(AtomicU32);

impl Attempts {
    /// A counter at zero, usable in a `static`.
    pub const fn new() -> Self {
        Attempts(AtomicU32::new(0))
    }

    /// Records an attempt and returns its number (from 1).
    pub fn next(&self) -> u32 {
        self.0.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// Records an attempt; `Err` until attempt `n`, then `Ok(attempt)`.
    pub fn fail_until(&self, n: u32) -> Result<u32, ApiError> {
        let a = self.next();
        if a < n {
            Err(ApiError::Flaky(a))
        } else {
            Ok(a)
        }
    }

    /// How many attempts ran.
    pub fn count(&self) -> u32 {
        self.0.load(Ordering::SeqCst)
    }
}

/// An error of a GitHub-like API that says how to retry it (R12): `classify = ByHint`.
#[derive(Debug, Clone, PartialEq)]
pub enum GhError {
    /// Retrying cannot help.
    NotFound,
    /// The server asked for this many seconds of quiet.
    Throttled(u64),
    /// A plain transient failure.
    Reset,
    Refused(ResilienceError),
}

impl From<ResilienceError> for GhError {
    fn from(e: ResilienceError) -> Self {
        GhError::Refused(e)
    }
}

impl fmt::Display for GhError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

impl RetryHint for GhError {
    fn retry_hint(&self) -> ErrorClass {
        match self {
            GhError::NotFound | GhError::Refused(_) => ErrorClass::Permanent,
            GhError::Throttled(s) => ErrorClass::RetryAfter(Duration::from_secs(*s)),
            GhError::Reset => ErrorClass::Transient,
        }
    }
}
