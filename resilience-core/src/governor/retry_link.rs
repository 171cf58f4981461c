//! The retry executor's Retry-After path, fed into the governor (G6).

use super::{AgentId, Governor, ResourceId};
use crate::retry::RetryAfterSink;
use std::sync::Arc;
use std::time::Duration;

/// Links a service's retry loop to the governor for one agent and resource.
///
/// A Retry-After seen by the loop sets the resource's shared block
/// ([`Governor::note_retry_after`]); the loop then waits as long as the governor tells this
/// agent to ([`Governor::retry_slot`]): until its release time in its priority's window,
/// kept at least the release spacing (50 ms) from every other linked caller's, so callers
/// come back in priority order and paced, never all at once.
///
/// ```
/// use resilience_core::governor::{Governor, Priority, ResourceConfig, RetryAfterLink};
/// use resilience_core::retry::ServiceGuard;
/// use std::sync::Arc;
///
/// let governor = Arc::new(Governor::builder().build().expect("default config is valid"));
/// let core = governor.add_resource("core", ResourceConfig::github()).unwrap();
/// let agent = governor.register("data", Priority::P1).unwrap();
/// let guard = ServiceGuard::builder("github")
///     .retry_after_sink(Arc::new(RetryAfterLink::new(governor.clone(), core, agent)))
///     .build();
/// # let _ = guard;
/// ```
#[derive(Debug, Clone)]
pub struct RetryAfterLink {
    governor: Arc<Governor>,
    resource: ResourceId,
    agent: AgentId,
}

impl RetryAfterLink {
    /// A link for `agent` calling `resource`.
    pub fn new(governor: Arc<Governor>, resource: ResourceId, agent: AgentId) -> Self {
        Self {
            governor,
            resource,
            agent,
        }
    }
}

impl RetryAfterSink for RetryAfterLink {
    fn retry_after(&self, _service: &str, hint: Duration) -> Duration {
        self.governor.note_retry_after(self.resource, hint);
        // The retry loop (not a governor permit) makes the next attempt, so the governor
        // hands out a spaced release time rather than a place in line.
        match self.governor.retry_slot(self.agent, self.resource) {
            Some(delay) => delay.max(hint),
            None => hint,
        }
    }
}
