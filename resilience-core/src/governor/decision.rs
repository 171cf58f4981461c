//! What the governor answers: go now, wait, or a typed refusal.

use super::priority::Priority;
use crate::error::ResilienceError;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// A registered agent. Cheap to copy; issued by [`Governor::register`](super::Governor::register).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AgentId(pub(crate) u32);

impl AgentId {
    /// For [`GovernorStore`](super::GovernorStore) implementations: the id with this index.
    pub const fn from_index(index: u32) -> Self {
        Self(index)
    }
    /// The index of this agent in its store.
    pub const fn index(self) -> u32 {
        self.0
    }
}

/// A rate-limited resource (one quota bucket, e.g. GitHub's `core`). Issued by
/// [`Governor::add_resource`](super::Governor::add_resource).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResourceId(pub(crate) u32);

impl ResourceId {
    /// For [`GovernorStore`](super::GovernorStore) implementations: the id with this index.
    pub const fn from_index(index: u32) -> Self {
        Self(index)
    }
    /// The index of this resource in its store.
    pub const fn index(self) -> u32 {
        self.0
    }
}

/// The governor's answer to one request.
#[derive(Debug)]
#[must_use = "a Go decision holds quota until observed or released"]
pub enum Decision {
    /// Make the call now; then report the response with
    /// [`Governor::observe`](super::Governor::observe) (or
    /// [`release`](super::Governor::release) the grant if the call was not made).
    Go(Grant),
    /// Come back at [`Wait::until`] with the ticket
    /// ([`Governor::resume`](super::Governor::resume)); the place in line is kept.
    Wait(Wait),
    /// Refused: do not call; ask again after [`Refusal::retry_after`].
    Refuse(Refusal),
}

impl Decision {
    /// Whether this is [`Decision::Go`].
    pub fn is_go(&self) -> bool {
        matches!(self, Self::Go(_))
    }
}

/// Permission to make one call. Not `Clone`: each grant is observed or released once. A
/// grant dropped without either stays in flight (its cost held back from the quota
/// estimate, its slot under a concurrency cap taken) until
/// [`Leases::call_bound`](super::Leases::call_bound) has passed (30 s by default; the
/// in-process store settles it within twice that), or its agent's lease expires; then it
/// counts as a call made without a reading. A
/// [`Permit`](super::Permit) releases it on drop.
#[derive(Debug, PartialEq, Eq)]
#[must_use = "observe the response or release the grant"]
pub struct Grant {
    resource: ResourceId,
    agent: AgentId,
    priority: Priority,
    cost: u32,
    ledger: u64,
    granted_at: Duration,
    upstream_limited: Option<AgentId>,
    footprint: Option<Footprint>,
}

/// What a grant counted in the in-process store's pacing rules, so that a release can take
/// it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Footprint {
    pub kind: super::request::RequestKind,
    pub points: u32,
    pub endpoint: bool,
    /// The agent's lease episode when granted: a grant from before its lease expired was
    /// already settled by the sweep.
    pub lease: u32,
    /// The epoch it was counted in among its agent's grants in flight (G5).
    pub epoch: u64,
}

impl Grant {
    /// For [`GovernorStore`](super::GovernorStore) implementations. `ledger` is the store's
    /// running total of granted cost including this grant.
    pub fn new(
        resource: ResourceId,
        agent: AgentId,
        priority: Priority,
        cost: u32,
        ledger: u64,
        granted_at: Duration,
    ) -> Self {
        Self {
            resource,
            agent,
            priority,
            cost,
            ledger,
            granted_at,
            upstream_limited: None,
            footprint: None,
        }
    }

    /// Records what `req` counted in the pacing rules, and the agent's lease episode
    /// (in-process store).
    #[inline]
    pub(crate) fn with_footprint(
        mut self,
        req: &super::request::Request<'_>,
        lease: u32,
        epoch: u64,
    ) -> Self {
        self.footprint = Some(Footprint {
            kind: req.kind(),
            points: req.points(),
            endpoint: req.endpoint().is_some(),
            lease,
            epoch,
        });
        self
    }

    pub(crate) fn footprint(&self) -> Option<Footprint> {
        self.footprint
    }

    /// Marks the grant with a G4 warning: an upstream agent was recently rate limited.
    pub fn with_upstream_limited(mut self, upstream: Option<AgentId>) -> Self {
        self.upstream_limited = upstream;
        self
    }

    /// The resource.
    pub fn resource(&self) -> ResourceId {
        self.resource
    }
    /// The agent.
    pub fn agent(&self) -> AgentId {
        self.agent
    }
    /// The priority the call was granted at (after any G2 promotion).
    pub fn priority(&self) -> Priority {
        self.priority
    }
    /// The primary-quota cost reserved.
    pub fn cost(&self) -> u32 {
        self.cost
    }
    /// The store's granted-cost total including this grant.
    pub fn ledger(&self) -> u64 {
        self.ledger
    }
    /// Clock time of the grant. On the in-process store's fast path this is the coarse
    /// reading ([`Clock::now_coarse`](crate::clock::Clock::now_coarse)), up to
    /// [`Clock::coarse_lag`](crate::clock::Clock::coarse_lag) before the true time.
    pub fn granted_at(&self) -> Duration {
        self.granted_at
    }
    /// G4: an agent this one depends on was rate limited within the cascade window; the
    /// call may meet the same limit.
    pub fn upstream_limited(&self) -> Option<AgentId> {
        self.upstream_limited
    }
}

/// A place in the governor's line. Hand it back with
/// [`Governor::resume`](super::Governor::resume) or [`cancel`](super::Governor::cancel) it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Ticket {
    resource: ResourceId,
    agent: AgentId,
    id: u64,
}

impl Ticket {
    /// For [`GovernorStore`](super::GovernorStore) implementations.
    pub const fn new(resource: ResourceId, agent: AgentId, id: u64) -> Self {
        Self {
            resource,
            agent,
            id,
        }
    }
    /// The resource waited for.
    pub const fn resource(&self) -> ResourceId {
        self.resource
    }
    /// The waiting agent.
    pub const fn agent(&self) -> AgentId {
        self.agent
    }
    /// The store's id for this waiter.
    pub const fn id(&self) -> u64 {
        self.id
    }
}

/// Why a request must wait; the pattern that decided it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WaitReason {
    /// G6: the resource is blocked after a rate limit; this is the release time in the
    /// priority's jitter window.
    Blocked,
    /// G6: released after a block, paced so the waiters do not all go at once.
    Recovery,
    /// G1 amber: the linear delay for this priority.
    Amber,
    /// G1 red: standard-priority calls are paced.
    RedPacing,
    /// G3: the predictive breaker is open; calls are paced to last until reset.
    Predictive,
    /// G8: spending the remaining quota evenly until reset.
    EvenSpend,
    /// G8: a pacing rule (window or spacing), by name.
    Rule(Arc<str>),
    /// G8: the concurrency cap is reached.
    Concurrency,
    /// G4: sequential mode, one call at a time.
    Sequential,
    /// Behind a higher-priority (or earlier, same-priority) waiter.
    Queue,
}

impl fmt::Display for WaitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Blocked => f.write_str("blocked after a rate limit (G6)"),
            Self::Recovery => f.write_str("paced release after a block (G6)"),
            Self::Amber => f.write_str("amber light (G1)"),
            Self::RedPacing => f.write_str("red light pacing (G1)"),
            Self::Predictive => f.write_str("predictive breaker open (G3)"),
            Self::EvenSpend => f.write_str("even spend until reset (G8)"),
            Self::Rule(name) => write!(f, "pacing rule `{name}` (G8)"),
            Self::Concurrency => f.write_str("concurrency cap (G8)"),
            Self::Sequential => f.write_str("sequential mode (G4)"),
            Self::Queue => f.write_str("queued behind higher priority"),
        }
    }
}

/// Wait, then resume with the ticket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wait {
    /// Clock time at which to come back.
    pub until: Duration,
    /// `until` minus the time of the decision.
    pub delay: Duration,
    /// The place in line.
    pub ticket: Ticket,
    /// Why.
    pub reason: WaitReason,
    /// The resource's granted-cost total when this wait was decided. With
    /// [`Grant::ledger`] it orders waits against grants, e.g. to audit priority order from
    /// outside: a grant that costs anything has a ledger larger than that of every decision
    /// before it. A grant of cost 0 (a conditional request) adds nothing, so it carries the
    /// same ledger as the decisions just before it and cannot be ordered among them.
    pub ledger: u64,
}

/// The two refusals, as [`ResilienceError`] names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RefusalKind {
    /// This priority may not spend quota now (breaker open, pool empty, wait too long).
    Shed,
    /// This priority is paused until the quota window resets (red light, quota exhausted).
    Paused,
}

/// Why a request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RefusalReason {
    /// G1 red: background work pauses until reset.
    RedLight,
    /// The quota is spent (remaining 0) until reset.
    Exhausted,
    /// G3: the predictive breaker sheds background work.
    Predictive,
    /// G2: the shared pool is below the background yield threshold.
    PoolYield,
    /// G2: no reservation or pool quota left for this priority.
    PoolEmpty,
    /// The wait would exceed the request's `max_wait`.
    MaxWait,
    /// The agent or resource id is not known to this governor (a programming error).
    Unregistered,
}

impl fmt::Display for RefusalReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::RedLight => "red light: background paused until reset (G1)",
            Self::Exhausted => "quota exhausted until reset",
            Self::Predictive => "predictive breaker open: background shed (G3)",
            Self::PoolYield => "shared pool low: background yields (G2)",
            Self::PoolEmpty => "no reservation or pool quota left (G2)",
            Self::MaxWait => "wait would exceed max_wait",
            Self::Unregistered => "unknown agent or resource id",
        })
    }
}

/// A typed refusal that says when to come back. Converts into
/// [`ResilienceError::GovernorShed`] / [`ResilienceError::GovernorPaused`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// Shed or paused.
    pub kind: RefusalKind,
    /// Why.
    pub reason: RefusalReason,
    /// The resource's name.
    pub resource: Arc<str>,
    /// When asking again can succeed. For [`RefusalKind::Paused`], the time to the reset
    /// plus a draw from the priority's G6 release window, so the paused come back spread
    /// out, not all at the reset's instant.
    pub retry_after: Duration,
}

impl From<Refusal> for ResilienceError {
    fn from(r: Refusal) -> Self {
        match r.kind {
            RefusalKind::Shed => ResilienceError::GovernorShed {
                resource: r.resource,
                retry_after: r.retry_after,
            },
            RefusalKind::Paused => ResilienceError::GovernorPaused {
                resource: r.resource,
                retry_after: r.retry_after,
            },
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} `{}`: {}; retry in {:.3}s",
            match self.kind {
                RefusalKind::Shed => "shed",
                RefusalKind::Paused => "paused",
            },
            self.resource,
            self.reason,
            self.retry_after.as_secs_f64()
        )
    }
}
