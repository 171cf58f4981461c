//! The framework's own refusals.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Why the framework refused or stopped a call, as opposed to the operation's own error.
///
/// A guarded operation keeps its own error type `E`; the framework reaches the caller through
/// `E: From<ResilienceError>`. Exhausted retries return the operation's last error, never a
/// wrapper.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResilienceError {
    /// The service's circuit is open (or half-open with every probe slot taken); the operation
    /// was not run.
    CircuitOpen {
        /// The service whose breaker refused.
        service: Arc<str>,
    },
    /// The total wall-clock budget ran out before the operation succeeded.
    TotalTimeout {
        /// The service called.
        service: Arc<str>,
        /// Time since the first attempt started.
        elapsed: Duration,
        /// Attempts started, including one cancelled at the deadline.
        attempts: u32,
    },
    /// The rate governor shed this call (its priority may not spend quota now).
    GovernorShed {
        /// The rate-limited resource.
        resource: Arc<str>,
        /// When it is worth asking again.
        retry_after: Duration,
    },
    /// The rate governor has paused this priority until the quota window resets.
    GovernorPaused {
        /// The rate-limited resource.
        resource: Arc<str>,
        /// Time until the pause lifts.
        retry_after: Duration,
    },
    /// The rate governor can never grant this call as asked: its cost is above the whole
    /// quota, a rule is too small for it, or the setup is wrong. Asking again will not help
    /// ([`retry_after`](Self::retry_after) is `None`); `reason` says what to change.
    GovernorRejected {
        /// The rate-limited resource.
        resource: Arc<str>,
        /// What is wrong and how to fix it (sanitized).
        reason: Arc<str>,
    },
}

impl ResilienceError {
    /// A hint for when retrying could succeed, if the refusal carries one.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::GovernorShed { retry_after, .. } | Self::GovernorPaused { retry_after, .. } => {
                Some(*retry_after)
            }
            Self::CircuitOpen { .. }
            | Self::TotalTimeout { .. }
            | Self::GovernorRejected { .. } => None,
        }
    }
}

impl fmt::Display for ResilienceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::CircuitOpen { service } => {
                write!(
                    f,
                    "circuit open for service `{service}`: call not attempted"
                )
            }
            Self::TotalTimeout {
                service,
                elapsed,
                attempts,
            } => write!(
                f,
                "total timeout for service `{service}` after {attempts} attempt(s) in {:.3}s",
                elapsed.as_secs_f64()
            ),
            Self::GovernorShed {
                resource,
                retry_after,
            } => write!(
                f,
                "rate governor shed call to `{resource}`; retry in {:.3}s",
                retry_after.as_secs_f64()
            ),
            Self::GovernorPaused {
                resource,
                retry_after,
            } => write!(
                f,
                "rate governor paused calls to `{resource}`; retry in {:.3}s",
                retry_after.as_secs_f64()
            ),
            Self::GovernorRejected { resource, reason } => write!(
                f,
                "rate governor cannot grant the call to `{resource}`, now or later: {reason}"
            ),
        }
    }
}

impl std::error::Error for ResilienceError {}

/// A policy value that cannot be meant: names the field, shows the value, says the rule.
///
/// Returned by every validating constructor ([`Backoff::new`](crate::backoff::Backoff::new),
/// [`BreakerConfig::new`](crate::breaker::BreakerConfig::new),
/// [`RetryPolicy::new`](crate::retry::RetryPolicy::new)); invalid policies are unrepresentable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyError {
    field: &'static str,
    value: String,
    rule: &'static str,
}

impl PolicyError {
    /// A new error for `field` holding `value`, which breaks `rule`.
    pub fn new(field: &'static str, value: impl fmt::Display, rule: &'static str) -> Self {
        Self {
            field,
            value: value.to_string(),
            rule,
        }
    }

    /// The policy field at fault, in the seed's spelling (`max_attempts`, `base_delay`, …).
    pub fn field(&self) -> &'static str {
        self.field
    }

    /// The rejected value as given.
    pub fn value(&self) -> &str {
        &self.value
    }

    /// The rule the value breaks.
    pub fn rule(&self) -> &'static str {
        self.rule
    }
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid `{}` = {}: {}",
            self.field, self.value, self.rule
        )
    }
}

impl std::error::Error for PolicyError {}

/// Checks that `secs` is a finite, non-negative number of seconds and converts it.
pub(crate) fn secs_to_duration(field: &'static str, secs: f64) -> Result<Duration, PolicyError> {
    if !secs.is_finite() || secs < 0.0 {
        return Err(PolicyError::new(
            field,
            secs,
            "must be a finite number of seconds >= 0",
        ));
    }
    Duration::try_from_secs_f64(secs)
        .map_err(|_| PolicyError::new(field, secs, "is too large to be a duration"))
}

/// Lets fns returning `std::io::Result` be guarded: a refusal becomes an `io::Error` whose
/// kind says what happened and whose source is the [`ResilienceError`].
impl From<ResilienceError> for std::io::Error {
    fn from(e: ResilienceError) -> Self {
        let kind = match e {
            ResilienceError::TotalTimeout { .. } => std::io::ErrorKind::TimedOut,
            _ => std::io::ErrorKind::Other,
        };
        std::io::Error::new(kind, e)
    }
}
