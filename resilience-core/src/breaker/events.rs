//! Structured `tracing` events of the breaker, all with target `resilience::breaker`.
//!
//! Callers emit these only after releasing the breaker's lock (B8): a subscriber may do slow
//! I/O, and must never stall every other caller of the service.

/// The `tracing` target of every breaker event.
pub const TARGET: &str = "resilience::breaker";

/// Why a transition happened, carried so the lock can be released before logging.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "emit the event once the lock is released"]
pub(crate) enum Transition {
    /// Closed or half-open → open after `failure_count` consecutive failures (B1, B4).
    Opened { failure_count: u32 },
    /// Open → half-open (B2).
    HalfOpened,
    /// Half-open → closed after `successes` probe successes (B3).
    Closed { successes: u32 },
}

impl Transition {
    /// Emits the event; call with no lock held.
    pub(crate) fn emit(self, service: &str) {
        match self {
            Self::Opened { failure_count } => tracing::warn!(
                target: TARGET,
                service,
                failure_count,
                "circuit opened"
            ),
            Self::HalfOpened => tracing::info!(target: TARGET, service, "circuit half-open"),
            Self::Closed { successes } => {
                tracing::info!(target: TARGET, service, successes, "circuit closed")
            }
        }
    }
}
