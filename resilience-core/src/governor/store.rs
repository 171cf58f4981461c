//! Where governor state lives: the [`GovernorStore`] trait and what it reports.
//!
//! Every pattern's state for a resource (quota estimate, reservations and leases, breaker,
//! cascade log, block, pacing logs, the line of waiters) sits behind this trait, and each
//! operation is one call: the in-process [`InProcessStore`](super::InProcessStore) makes each
//! one short critical section. Times are the governor's [`Clock`](crate::clock::Clock)
//! readings.
//!
//! An implementation logs nothing while it holds a lock that a call of its own would take:
//! a `tracing` subscriber may call the governor (an agent shipping its alerts through a
//! governed call), and would hang on it. The in-process store keeps its log lines until the
//! resource is unlocked (target [`EVENT_TARGET`](super::EVENT_TARGET)).
//!
//! The only implementation is the in-process one. The `resilience-redis` crate does not
//! implement this trait: each process keeps its own governor (and store), and consults a
//! quota shared through Redis before each call, which holds the primary quota, the G6 block,
//! leases and reservations, and, when asked, the G8 rules and the G4 cascade detector; the
//! predictive breaker (G3) stays per process (it reads the headers' global `remaining`).

use super::config::ResourceConfig;
use super::decision::{AgentId, Decision, Grant, ResourceId, Ticket};
use super::observation::{LimitKind, Observation};
use super::priority::Priority;
use super::request::Request;
use crate::clock::Clock;
use crate::error::PolicyError;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Both clock readings: monotonic `mono` for scheduling, `unix` to read epoch headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Now {
    /// [`Clock::now`](crate::clock::Clock::now).
    pub mono: Duration,
    /// [`Clock::unix_time`](crate::clock::Clock::unix_time).
    pub unix: Duration,
}

/// G1 zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Zone {
    /// `remaining / limit` at or above the green threshold.
    Green,
    /// Between red and green.
    Amber,
    /// Below the red threshold.
    Red,
}

/// What an observation changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ObserveOutcome {
    /// The response was a rate limit of this kind.
    pub limited: Option<LimitKind>,
    /// The resource is blocked until this clock time (G6).
    pub blocked_until: Option<Duration>,
    /// Sequential mode is on (G4).
    pub sequential: bool,
    /// The predictive breaker is open (G3).
    pub breaker_open: bool,
}

/// A resource's state at a moment, for dashboards and tests.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// The resource's name.
    pub name: Arc<str>,
    /// The window's quota.
    pub limit: u64,
    /// Estimated quota left: the last header reading less what was granted since.
    pub remaining: u64,
    /// Time until the window resets, once known.
    pub reset_in: Option<Duration>,
    /// G1 zone.
    pub zone: Zone,
    /// G6: time left in the block, if blocked.
    pub blocked_for: Option<Duration>,
    /// G3.
    pub breaker_open: bool,
    /// G4.
    pub sequential: bool,
    /// Granted calls not yet observed or released.
    pub in_flight: u32,
    /// Requests in line.
    pub waiters: usize,
    /// G2: quota not held by any live agent's reservation.
    pub pool_free: u64,
    /// G2: the window's quota less all live reservations.
    pub pool_size: u64,
    /// G5: agents whose lease is live.
    pub live_agents: usize,
}

/// Registration and configuration errors.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GovernorError {
    /// A setting is invalid.
    Config(PolicyError),
    /// A resource with this name exists already.
    DuplicateResource(Arc<str>),
    /// The store is full.
    Capacity {
        /// `"agents"` or `"resources"`.
        what: &'static str,
        /// The configured capacity.
        capacity: u32,
    },
    /// No such agent in this store.
    UnknownAgent(AgentId),
    /// No such resource in this store.
    UnknownResource(ResourceId),
}

impl fmt::Display for GovernorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config(e) => write!(f, "invalid governor setting: {e}"),
            Self::DuplicateResource(n) => write!(f, "resource `{n}` is already registered"),
            Self::Capacity { what, capacity } => {
                write!(f, "governor store is full: at most {capacity} {what}")
            }
            Self::UnknownAgent(a) => write!(f, "unknown agent id {}", a.index()),
            Self::UnknownResource(r) => write!(f, "unknown resource id {}", r.index()),
        }
    }
}

impl std::error::Error for GovernorError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Config(e) => Some(e),
            _ => None,
        }
    }
}

impl From<PolicyError> for GovernorError {
    fn from(e: PolicyError) -> Self {
        Self::Config(e)
    }
}

/// Storage and atomic decisions for the governor. See the module docs.
pub trait GovernorStore: Send + Sync + fmt::Debug + 'static {
    /// Adds a resource; names are unique. Every registered agent is known to it from `now`.
    fn add_resource(
        &self,
        name: &str,
        config: ResourceConfig,
        now: Duration,
    ) -> Result<ResourceId, GovernorError>;

    /// The id of the resource with this name.
    fn resource_id(&self, name: &str) -> Option<ResourceId>;

    /// Registers an agent (starting its G5 lease), or renews the lease of the agent already
    /// registered under `name` and returns its id.
    fn register(
        &self,
        name: &str,
        priority: Priority,
        now: Duration,
    ) -> Result<AgentId, GovernorError>;

    /// The name and priority of an agent.
    fn agent(&self, agent: AgentId) -> Option<(Arc<str>, Priority)>;

    /// G4: `downstream` depends on `upstream`; a limit on `upstream` warns `downstream`.
    fn add_dependency(&self, upstream: AgentId, downstream: AgentId) -> Result<(), GovernorError>;

    /// G5: renews the agent's lease.
    fn heartbeat(&self, agent: AgentId, now: Duration);

    /// Decides one request (new, or resumed with its ticket). Atomic: a `Go` has already
    /// been charged to every rule.
    fn decide(
        &self,
        agent: AgentId,
        resource: ResourceId,
        request: &Request<'_>,
        ticket: Option<&Ticket>,
        now: Duration,
    ) -> Decision;

    /// [`decide`](Self::decide), reading the time from `clock` as the store needs it. The
    /// default reads [`Clock::now`](crate::clock::Clock::now) once; the in-process store
    /// reads the cheap [`now_coarse`](crate::clock::Clock::now_coarse) for its fast path and
    /// the precise clock only when the fast path does not apply. [`Governor`] calls this.
    ///
    /// [`Governor`]: super::Governor
    #[inline]
    fn decide_on(
        &self,
        agent: AgentId,
        resource: ResourceId,
        request: &Request<'_>,
        ticket: Option<&Ticket>,
        clock: &dyn Clock,
    ) -> Decision {
        self.decide(agent, resource, request, ticket, clock.now())
    }

    /// Leaves the line.
    fn cancel(&self, ticket: &Ticket, now: Duration);

    /// Reports a response; `grant` is the grant it was made under, if any (its in-flight slot
    /// is freed).
    fn observe(
        &self,
        agent: AgentId,
        resource: ResourceId,
        grant: Option<Grant>,
        observation: &Observation,
        now: Now,
    ) -> ObserveOutcome;

    /// Frees a grant whose call was not made or whose outcome is unknown.
    fn release(&self, grant: Grant, now: Duration);

    /// [`release`](Self::release), reading the time from `clock` only if the store needs it
    /// (the default reads [`Clock::now`](crate::clock::Clock::now); the in-process store
    /// does not read it).
    #[inline]
    fn release_on(&self, grant: Grant, clock: &dyn Clock) {
        self.release(grant, clock.now());
    }

    /// G6: blocks the resource for `delay` from now (extending, never shortening, a block).
    fn block(&self, resource: ResourceId, delay: Duration, now: Duration);

    /// G6 for a caller that retries on its own after a block (a retry loop fed by
    /// [`RetryAfterLink`](super::RetryAfterLink)): how long `agent` waits before its next
    /// attempt. Its release time in its priority's window, moved to keep at least the
    /// release spacing from every other such caller's, since these callers do not come
    /// back through [`decide`](Self::decide) to be paced. `None` if it may go now. The
    /// default asks `decide` and gives the place back (no spacing between callers).
    fn retry_slot(&self, agent: AgentId, resource: ResourceId, now: Duration) -> Option<Duration> {
        match self.decide(agent, resource, &Request::read(), None, now) {
            Decision::Wait(wait) => {
                self.cancel(&wait.ticket, now);
                Some(wait.delay)
            }
            Decision::Go(grant) => {
                self.release(grant, now);
                None
            }
            Decision::Refuse(refusal) => Some(refusal.retry_after),
        }
    }

    /// The resource's state.
    fn snapshot(&self, resource: ResourceId, now: Duration) -> Option<Snapshot>;
}
