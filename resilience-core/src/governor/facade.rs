//! [`Governor`]: the handle agents use, over any [`GovernorStore`].

use super::config::{GovernorConfig, ResourceConfig};
use super::decision::{AgentId, Decision, Grant, ResourceId, Ticket};
use super::memory::InProcessStore;
use super::observation::Observation;
use super::priority::Priority;
use super::request::Request;
use super::store::{GovernorError, GovernorStore, Now, ObserveOutcome, Snapshot};
use crate::clock::{Clock, MonotonicClock};
use crate::sleep::AsyncSleeper;
use std::any::Any;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// The rate governor: agents ask it before each call and tell it what the response said.
/// Cheap to clone (clones share state). See the [module docs](super) for the patterns.
#[derive(Clone)]
pub struct Governor {
    pub(super) store: Arc<dyn GovernorStore>,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) sleeper: Arc<dyn AsyncSleeper>,
    /// The same store when it is the built-in one, and the same clock when it is the real
    /// one: the default pair is called without dynamic dispatch on the hot path.
    local: Option<Arc<InProcessStore>>,
    mono: Option<MonotonicClock>,
}

impl fmt::Debug for Governor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Governor")
            .field("store", &self.store)
            .field("clock", &self.clock)
            .finish_non_exhaustive()
    }
}

impl Default for Governor {
    /// An in-process governor on the real clock with default settings.
    fn default() -> Self {
        Self::builder().build_default()
    }
}

impl Governor {
    /// Starts building a governor: in-process store, real clock, tokio sleeper by default.
    pub fn builder() -> GovernorBuilder {
        GovernorBuilder {
            config: GovernorConfig::default(),
            clock: None,
            mono: None,
            sleeper: None,
            store: None,
        }
    }

    /// Adds a resource (a quota bucket such as GitHub's `core`).
    pub fn add_resource(
        &self,
        name: &str,
        config: ResourceConfig,
    ) -> Result<ResourceId, GovernorError> {
        self.store.add_resource(name, config, self.clock.now())
    }

    /// The resource registered under `name`.
    pub fn resource(&self, name: &str) -> Option<ResourceId> {
        self.store.resource_id(name)
    }

    /// Registers an agent and starts its lease (G5). Registering a known name again renews
    /// its lease and returns the same id.
    pub fn register(&self, name: &str, priority: Priority) -> Result<AgentId, GovernorError> {
        self.store.register(name, priority, self.clock.now())
    }

    /// An agent's name and priority.
    pub fn agent(&self, agent: AgentId) -> Option<(Arc<str>, Priority)> {
        self.store.agent(agent)
    }

    /// G4 dependency graph: when `upstream` is rate limited, `downstream` (and everything
    /// downstream of it) is warned on its next grant ([`Grant::upstream_limited`]).
    pub fn add_dependency(
        &self,
        upstream: AgentId,
        downstream: AgentId,
    ) -> Result<(), GovernorError> {
        self.store.add_dependency(upstream, downstream)
    }

    /// G5: renews the agent's lease. Every decide and observe renews it too.
    pub fn heartbeat(&self, agent: AgentId) {
        self.store.heartbeat(agent, self.clock.now());
    }

    /// Decides a new request without sleeping: go, wait (with a ticket), or a refusal.
    /// This is the entry point for a discrete-event simulator.
    #[inline]
    pub fn decide(&self, agent: AgentId, resource: ResourceId, request: &Request<'_>) -> Decision {
        match (&self.local, &self.mono) {
            (Some(store), Some(clock)) => store.decide_with(agent, resource, request, None, clock),
            (Some(store), None) => store.decide_with(agent, resource, request, None, &*self.clock),
            (None, _) => self
                .store
                .decide_on(agent, resource, request, None, &*self.clock),
        }
    }

    /// Asks again for a waiting request, keeping its place in line. Pass the same request.
    pub fn resume(&self, ticket: &Ticket, request: &Request<'_>) -> Decision {
        self.store.decide_on(
            ticket.agent(),
            ticket.resource(),
            request,
            Some(ticket),
            &*self.clock,
        )
    }

    /// Leaves the line (the caller gave up waiting).
    pub fn cancel(&self, ticket: &Ticket) {
        self.store.cancel(ticket, self.clock.now());
    }

    /// Reports the response to a granted call and frees its in-flight slot.
    pub fn observe(&self, grant: Grant, observation: &Observation) -> ObserveOutcome {
        let (agent, resource) = (grant.agent(), grant.resource());
        self.store
            .observe(agent, resource, Some(grant), observation, self.now2())
    }

    /// Reports a response to a call made without a grant (e.g. before the governor existed).
    pub fn observe_without_grant(
        &self,
        agent: AgentId,
        resource: ResourceId,
        observation: &Observation,
    ) -> ObserveOutcome {
        self.store
            .observe(agent, resource, None, observation, self.now2())
    }

    /// Frees a grant whose call was not made: its cost, its agent's reservation and its
    /// slot in the pacing windows come back. If the call may have reached the server,
    /// [`observe`](Self::observe) what came back instead (an observation without rate-limit
    /// headers counts the call as spent), or
    /// [`Observation::no_response`](super::Observation::no_response) if nothing did.
    #[inline]
    pub fn release(&self, grant: Grant) {
        match &self.local {
            Some(store) => store.release_grant(&grant),
            None => self.store.release_on(grant, &*self.clock),
        }
    }

    /// G6 hook for a retry executor that saw a `Retry-After`: blocks `resource` for `delay`
    /// (extending, never shortening, the current block), so every agent waits and is then
    /// released in priority order. A delay past [`LONGEST_BLOCK`](super::LONGEST_BLOCK) (a
    /// week) blocks for that long.
    pub fn note_retry_after(&self, resource: ResourceId, delay: Duration) {
        self.store.block(resource, delay, self.clock.now());
    }

    /// G6 for a caller that retries on its own after a block: how long `agent` should wait
    /// before its next attempt on `resource` (`None`: it may go now). See
    /// [`GovernorStore::retry_slot`]; [`RetryAfterLink`](super::RetryAfterLink) uses it.
    pub fn retry_slot(&self, agent: AgentId, resource: ResourceId) -> Option<Duration> {
        self.store.retry_slot(agent, resource, self.clock.now())
    }

    /// The resource's current state.
    pub fn snapshot(&self, resource: ResourceId) -> Option<Snapshot> {
        self.store.snapshot(resource, self.clock.now())
    }

    /// The clock the governor reads.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// The sleeper [`acquire`](Self::acquire) waits with.
    pub fn sleeper(&self) -> &Arc<dyn AsyncSleeper> {
        &self.sleeper
    }

    fn now2(&self) -> Now {
        Now {
            mono: self.clock.now(),
            unix: self.clock.unix_time(),
        }
    }
}

/// Builds a [`Governor`].
#[derive(Debug)]
#[must_use = "call build()"]
pub struct GovernorBuilder {
    config: GovernorConfig,
    clock: Option<Arc<dyn Clock>>,
    mono: Option<MonotonicClock>,
    sleeper: Option<Arc<dyn AsyncSleeper>>,
    store: Option<Arc<dyn GovernorStore>>,
}

impl GovernorBuilder {
    /// Governor-wide settings for the in-process store (leases, seed, capacities).
    pub fn config(mut self, config: GovernorConfig) -> Self {
        self.config = config;
        self
    }

    /// Seeds the G6 jitter for reproducible runs.
    pub fn seed(mut self, seed: u64) -> Self {
        self.config.seed = Some(seed);
        self
    }

    /// Reads time from `clock` (a [`ManualClock`](crate::clock::ManualClock) for virtual time).
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.mono = (&clock as &dyn Any)
            .downcast_ref::<MonotonicClock>()
            .copied();
        self.clock = Some(Arc::new(clock));
        self
    }

    /// Waits in [`Governor::acquire`] through `sleeper`.
    pub fn sleeper(mut self, sleeper: impl AsyncSleeper) -> Self {
        self.sleeper = Some(Arc::new(sleeper));
        self
    }

    /// Uses `store` instead of a new in-process one (the config is then the store's business).
    pub fn store(mut self, store: Arc<dyn GovernorStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Validates the settings and builds.
    pub fn build(self) -> Result<Governor, GovernorError> {
        self.config.validate()?;
        Ok(self.build_default())
    }

    fn build_default(self) -> Governor {
        let config = self.config;
        let (store, local): (Arc<dyn GovernorStore>, _) = match self.store {
            Some(store) => (store, None),
            None => {
                let local = Arc::new(InProcessStore::new(config));
                (local.clone(), Some(local))
            }
        };
        let (clock, mono): (Arc<dyn Clock>, _) = match self.clock {
            Some(clock) => (clock, self.mono),
            None => {
                let mono = MonotonicClock::new();
                (Arc::new(mono), Some(mono))
            }
        };
        Governor {
            store,
            clock,
            sleeper: self.sleeper.unwrap_or_else(default_sleeper),
            local,
            mono,
        }
    }
}

#[cfg(feature = "tokio")]
fn default_sleeper() -> Arc<dyn AsyncSleeper> {
    Arc::new(crate::sleep::TokioSleeper)
}

#[cfg(not(feature = "tokio"))]
fn default_sleeper() -> Arc<dyn AsyncSleeper> {
    Arc::new(crate::sleep::BlockingAsyncSleeper)
}
