//! Which errors are worth another attempt.
//!
//! By default every error is transient (retried while attempts and time remain), so error
//! types that don't care need no code at all. Types that do care implement [`RetryHint`] and
//! are classified with [`ByHint`], or a call passes any `Fn(&E) -> ErrorClass`. A call names
//! its classifier: `.classify(ByHint)` on the builder, `classify = ByHint` on a
//! `#[retry_service_operation]` fn; implementing `RetryHint` alone changes nothing.

use crate::error::ResilienceError;
use std::time::Duration;

/// What one failure means for the retry loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// Worth retrying after the backoff delay.
    Transient,
    /// Retrying cannot help: return this error now.
    Permanent,
    /// Worth retrying, but not before this delay (a server's Retry-After, R12). The wait is
    /// `max(hint, backoff delay)`, still capped by the total timeout.
    RetryAfter(Duration),
}

/// Implemented by error types that know whether they are worth retrying.
///
/// ```
/// use resilience_core::retry::{ErrorClass, RetryHint};
/// use std::time::Duration;
///
/// enum ApiError { NotFound, Throttled { retry_after_s: u64 }, Io }
///
/// impl RetryHint for ApiError {
///     fn retry_hint(&self) -> ErrorClass {
///         match self {
///             ApiError::NotFound => ErrorClass::Permanent,
///             ApiError::Throttled { retry_after_s } => {
///                 ErrorClass::RetryAfter(Duration::from_secs(*retry_after_s))
///             }
///             ApiError::Io => ErrorClass::Transient,
///         }
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not implement `RetryHint`, so `ByHint` cannot classify it",
    label = "`ByHint` asks the error type's `RetryHint`",
    note = "implement `retry::RetryHint` for `{Self}` (its `retry_hint` returns `ErrorClass::Permanent`, `Transient` or `RetryAfter(delay)`), or classify with a `fn(&{Self}) -> ErrorClass`"
)]
pub trait RetryHint {
    /// How the retry loop should treat this error. Defaults to [`ErrorClass::Transient`].
    fn retry_hint(&self) -> ErrorClass {
        ErrorClass::Transient
    }
}

impl RetryHint for ResilienceError {
    fn retry_hint(&self) -> ErrorClass {
        match self.retry_after() {
            Some(d) => ErrorClass::RetryAfter(d),
            None => ErrorClass::Permanent,
        }
    }
}

/// Decides the [`ErrorClass`] of an error of type `E`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot classify errors of type `{E}`",
    label = "not a classifier of `{E}`",
    note = "`retry::ByHint` classifies an error type that implements `retry::RetryHint` (implement it for `{E}`); any other classifier is a `fn(&{E}) -> ErrorClass`"
)]
pub trait Classifier<E> {
    /// Classifies `error`.
    fn classify(&self, error: &E) -> ErrorClass;
}

/// Every error is transient: the default.
#[derive(Debug, Clone, Copy, Default)]
pub struct AllTransient;

impl<E> Classifier<E> for AllTransient {
    #[inline]
    fn classify(&self, _: &E) -> ErrorClass {
        ErrorClass::Transient
    }
}

/// Asks the error itself through [`RetryHint`].
#[derive(Debug, Clone, Copy, Default)]
pub struct ByHint;

impl<E: RetryHint> Classifier<E> for ByHint {
    #[inline]
    fn classify(&self, error: &E) -> ErrorClass {
        error.retry_hint()
    }
}

impl<E, F: Fn(&E) -> ErrorClass> Classifier<E> for F {
    #[inline]
    fn classify(&self, error: &E) -> ErrorClass {
        self(error)
    }
}
