//! What the shared quota answers: grants (with their fencing epoch), waits, snapshots.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Permission to spend `cost` of a shared resource's quota. Carries the fencing epoch of the
/// lease it was granted under: releasing or observing it after that lease expired is refused.
#[derive(Debug, PartialEq, Eq)]
#[must_use = "observe the response or release the grant"]
pub struct QuotaGrant {
    pub(crate) resource: Arc<str>,
    pub(crate) cost: u32,
    pub(crate) epoch: u64,
    /// The id of the state that lease belongs to: another than the newest reply's is one
    /// Redis has lost, whose window, ledger, time and slot mean nothing to the new state.
    pub(crate) state: u64,
    pub(crate) window: u64,
    pub(crate) reset_at_ms: u64,
    pub(crate) ledger: u64,
    /// When the server granted it (server ms; 0 for an express or offline grant).
    pub(crate) granted_ms: u64,
    /// Units granted before it and still in flight then: its reading may not count them.
    pub(crate) in_flight: u64,
    /// The server's in-flight slot it was counted in.
    pub(crate) slot: u64,
    pub(crate) from_reserve: bool,
    /// `Some(generation)` for a grant spent from the reservation before the server heard
    /// of it: offline (degraded mode), or through the express lane.
    pub(crate) offline: Option<u64>,
    /// Paid through the express lane while connected: its response is still reported.
    pub(crate) express: bool,
    /// The agent it was made for, if known: the shared G4 detector counts distinct agents.
    pub(crate) agent: Option<Arc<str>>,
    /// Its ask's id in the process's log of shared-rule grants (0: none): counted there as a
    /// call in flight until observed or released (`PaceLog::landed`).
    pub(crate) pace_id: u64,
}

impl QuotaGrant {
    /// The resource.
    pub fn resource(&self) -> &str {
        &self.resource
    }
    /// The quota spent.
    pub fn cost(&self) -> u32 {
        self.cost
    }
    /// The fencing epoch of the lease it was granted under.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }
    /// The lease it was granted under, and that lease's state.
    pub(crate) fn lease(&self) -> crate::local::LeaseId {
        crate::local::LeaseId {
            epoch: self.epoch,
            state: self.state,
        }
    }
    /// The server's id of the window it was granted in (changes at every reset).
    pub fn window(&self) -> u64 {
        self.window
    }
    /// The window's reset, in ms of the Redis server's clock: the same for every grant of one
    /// window, on every host.
    pub fn reset_at_ms(&self) -> u64 {
        self.reset_at_ms
    }
    /// When the server granted it, in ms of the Redis server's clock (0 if it was paid
    /// without asking the server: offline or through the express lane). Shared G8 rules
    /// count it at this time.
    pub fn granted_at_ms(&self) -> u64 {
        self.granted_ms
    }
    /// Whether it was paid from this process's reservation rather than the pool.
    pub fn from_reserve(&self) -> bool {
        self.from_reserve
    }
    /// Whether it was granted offline (degraded mode, Redis unreachable).
    pub fn is_offline(&self) -> bool {
        self.offline.is_some() && !self.express
    }
    /// Whether it was paid through the express lane: from this process's reservation with
    /// no round trip ([`RedisQuotaConfig::express`](crate::RedisQuotaConfig::express)).
    pub fn is_express(&self) -> bool {
        self.express
    }

    /// The agent it was made for, if named ([`for_agent`](Self::for_agent)).
    pub fn agent(&self) -> Option<&str> {
        self.agent.as_deref()
    }

    /// Names the agent the call is made for: a rate limit its response reports counts as
    /// that agent's in the shared G4 detector
    /// ([`QuotaSpec::shared_cascade`](crate::QuotaSpec::shared_cascade)); without a name,
    /// this process counts as one agent. [`acquire_shared`](crate::acquire_shared) names the
    /// governor's agent.
    pub fn for_agent(mut self, agent: impl Into<Arc<str>>) -> Self {
        self.agent = Some(agent.into());
        self
    }
}

/// Why a request must wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QuotaWaitReason {
    /// G6: the resource is blocked after a rate limit, on every host.
    Blocked,
    /// The window's quota is spent (pool and this process's reservation).
    Exhausted,
    /// Redis lost its data and the state is being rebuilt from the processes' reports; the
    /// pool opens when they have all rejoined, or after one lease TTL.
    Recovering,
    /// A higher priority, in this process or another, was refused quota within its poll
    /// bound and will ask again: it goes first.
    Yielding,
    /// A shared G8 window or spacing rule
    /// ([`QuotaSpec::shared_pacing`](crate::QuotaSpec::shared_pacing)) is full: the delay
    /// is the time until enough of it frees (a window's oldest bucket leaves it, the gap
    /// since the last selected grant ends).
    Paced,
    /// The shared concurrency cap is reached: the delay is the most it can last (the oldest
    /// unsettled grants stop counting after the call bound); a settled grant wakes the
    /// waiters sooner.
    InFlight,
    /// G4 sequential mode, shared ([`QuotaSpec::shared_cascade`](crate::QuotaSpec::shared_cascade)):
    /// enough agents, in any processes, were rate limited lately, so one call at a time goes,
    /// higher priorities first, and one is in flight. A settled grant wakes the waiters.
    Sequential,
}

impl fmt::Display for QuotaWaitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Blocked => "blocked after a rate limit",
            Self::Exhausted => "the window's quota is spent until its reset",
            Self::Recovering => "the quota is being rebuilt after Redis lost its data",
            Self::Yielding => "a higher priority waiting in some process goes first",
            Self::Paced => "a shared pacing rule is full",
            Self::InFlight => "the shared concurrency cap is reached",
            Self::Sequential => "one call at a time after a cascade of rate limits",
        })
    }
}

/// Wait, then ask again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotaWait {
    /// How long until asking again can succeed (the block's end, the reset, ...): the same
    /// for every waiter of one block.
    pub delay: Duration,
    /// When *this* caller should ask again, if it loops on
    /// [`try_acquire`](crate::SharedQuota::try_acquire) itself: after a block, or a reset due
    /// within the poll bound, `delay` plus a draw from its priority's G6 window
    /// ([`WaitPolicy::windows`](crate::WaitPolicy::windows)); while the quota is spent, the
    /// jittered poll bound ([`WaitPolicy::poll`](crate::WaitPolicy::poll)). Sleeping `delay`
    /// instead would bring every such caller, in every process, back at one instant (G6: no
    /// herd). [`acquire`](crate::SharedQuota::acquire) sleeps this, and also wakes early
    /// when quota comes back.
    pub retry_in: Duration,
    /// Why.
    pub reason: QuotaWaitReason,
}

/// The answer to one acquire.
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a Go holds quota until observed or released"]
pub enum QuotaDecision {
    /// Spend it.
    Go(QuotaGrant),
    /// Not now.
    Wait(QuotaWait),
}

/// How a release or observation was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settled {
    /// Applied to the shared state.
    Applied,
    /// Refused: the grant's epoch is stale (its lease expired). Nothing was credited, and
    /// the observation's quota reading was ignored (a block it carried still counts).
    Fenced,
    /// Applied to this process's offline share only (Redis unreachable or offline grant).
    Local,
}

/// Whether this process talks to Redis right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkState {
    /// Connected.
    Connected,
    /// Redis is unreachable: spending the local share ([`OnLoss::Degraded`](crate::OnLoss)).
    Degraded,
    /// Redis is unreachable: refusing ([`OnLoss::FailClosed`](crate::OnLoss)).
    Closed,
}

/// A resource's shared state, as Redis reports it (or the last report, offline).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaSnapshot {
    /// Quota per window.
    pub limit: u64,
    /// Unreserved quota left in the window.
    pub pool: u64,
    /// This process's reservation (net of offline spending).
    pub reserved: u64,
    /// All live reservations.
    pub reserved_total: u64,
    /// Reservations of expired degraded leases, held until their holder reports or the
    /// window ends.
    pub held: u64,
    /// Processes holding a lease.
    pub members: u64,
    /// This process's fencing epoch: a number that only grows, counted from the state's
    /// birth in server µs (so 16 digits); 0: no lease; 1: a lease of a state Redis lost,
    /// until it rejoins the new one.
    pub epoch: u64,
    /// The window's id (not its length: that is the resource's
    /// [`QuotaSpec::window`](crate::QuotaSpec::window)).
    pub window: u64,
    /// Time to the reset, once the window is anchored.
    pub reset_in: Option<Duration>,
    /// G6: time left in the shared block.
    pub blocked_for: Option<Duration>,
    /// G4: sequential mode is on (one call at a time across every process).
    pub sequential: bool,
    /// The link.
    pub link: LinkState,
}
