//! The structured events of the retry loop (R8). Error text always goes through the sanitizer.

use crate::sanitize::sanitize;
use std::fmt;
use std::time::Duration;

/// Formats an error's `Display` text through [`sanitize`]; only runs when an event is enabled.
pub(crate) struct Sanitized<'a, E>(pub &'a E);

impl<E: fmt::Display> fmt::Display for Sanitized<'_, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&sanitize(&self.0.to_string()))
    }
}

/// An attempt failed and another will follow after `delay`.
#[cold]
pub(crate) fn retrying<E: fmt::Display>(
    service: &str,
    operation: &str,
    attempt: u32,
    error: &E,
    delay: Duration,
) {
    tracing::warn!(
        target: "resilience::retry",
        service,
        operation,
        attempt,
        error = %Sanitized(error),
        delay_s = delay.as_secs_f64(),
        "attempt failed; retrying"
    );
}

/// An attempt failed and the loop stops here, for `reason`.
#[cold]
pub(crate) fn giving_up<E: fmt::Display>(
    service: &str,
    operation: &str,
    attempt: u32,
    error: &E,
    reason: &'static str,
) {
    tracing::warn!(
        target: "resilience::retry",
        service,
        operation,
        attempt,
        error = %Sanitized(error),
        reason,
        "attempt failed; not retrying"
    );
}

/// The in-flight attempt was cancelled at the total deadline.
#[cold]
pub(crate) fn deadline_cancelled(service: &str, operation: &str, attempt: u32, elapsed: Duration) {
    tracing::warn!(
        target: "resilience::retry",
        service,
        operation,
        attempt,
        error = "total timeout reached; attempt cancelled",
        elapsed_s = elapsed.as_secs_f64(),
        "attempt cancelled at the total deadline"
    );
}
