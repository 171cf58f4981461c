//! Where the retry loop reports a server's Retry-After, so it can be coordinated.

use std::fmt;
use std::time::Duration;

/// Receives every Retry-After hint a service's retry loop sees, and says how long this caller
/// should actually wait.
///
/// Attached with [`ServiceGuardBuilder::retry_after_sink`](super::ServiceGuardBuilder::retry_after_sink).
/// The rate governor's [`RetryAfterLink`](crate::governor::RetryAfterLink) implements it: the
/// hint becomes the governor's one shared block (G6), and the caller waits as long as the
/// governor tells its agent to (the block plus its priority's jitter window) rather than
/// sleeping out the raw hint in step with every other caller.
pub trait RetryAfterSink: Send + Sync + fmt::Debug + 'static {
    /// `service` was told to come back after `hint`; returns the wait before the next attempt.
    fn retry_after(&self, service: &str, hint: Duration) -> Duration;
}
