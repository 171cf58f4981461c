//! Where a registry gets each service's policy.

use crate::breaker::BreakerConfig;
use crate::retry::RetryPolicy;

/// A service's validated settings: its retry policy and its breaker, if it has one (C5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServicePolicy {
    /// How idempotent operations retry.
    pub retry: RetryPolicy,
    /// The breaker settings, or `None` to run with no breaker at all.
    pub breaker: Option<BreakerConfig>,
}

impl Default for ServicePolicy {
    fn default() -> Self {
        Self {
            retry: RetryPolicy::default(),
            breaker: Some(BreakerConfig::DEFAULT),
        }
    }
}

/// Says which policy a service gets. Called once per service (and again on reload), never on
/// the call path. Implemented by closures `Fn(&str) -> ServicePolicy`.
///
/// It runs with the registry's map of services unlocked, so it may log and may look up
/// services already built. It must not ask the registry for a service not built yet: building
/// is serialised by a lock that is not re-entrant, so that call would deadlock. Building
/// services and reloads wait for it, so it should return promptly.
pub trait PolicySource: Send + Sync + 'static {
    /// The policy of `service`.
    fn policy(&self, service: &str) -> ServicePolicy;
}

impl<F: Fn(&str) -> ServicePolicy + Send + Sync + 'static> PolicySource for F {
    fn policy(&self, service: &str) -> ServicePolicy {
        self(service)
    }
}
