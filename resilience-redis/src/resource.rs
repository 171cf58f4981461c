//! [`SharedQuota`]: one resource's acquire, release, observe, block, snapshot and leave.

use crate::config::OnLoss;
use crate::error::RedisQuotaError;
use crate::grant::{
    LinkState, QuotaDecision, QuotaGrant, QuotaSnapshot, QuotaWait, QuotaWaitReason, Settled,
};
use crate::local::{LeaseId, Local, OfflineRefusal};
use crate::pace_log::PendingAsk;
use crate::pacing::Ask;
use crate::quota::{ms, CallError, Inner, ResState};
use crate::script::{self, Op, Reply};
use resilience_core::governor::{Observation, Priority, Request};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// One resource's quota, shared by every process that uses the same Redis and prefix.
/// Cheap to clone. Made by [`RedisQuota::resource`](crate::RedisQuota::resource).
#[derive(Clone)]
pub struct SharedQuota {
    pub(crate) inner: Arc<Inner>,
    pub(crate) state: Arc<ResState>,
}

impl fmt::Debug for SharedQuota {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedQuota")
            .field("resource", &self.state.name)
            .field("link", &self.inner.link_state())
            .finish_non_exhaustive()
    }
}

impl SharedQuota {
    /// The resource's name.
    pub fn name(&self) -> &str {
        &self.state.name
    }

    /// Asks once at `priority`, without waiting: one script call (one round trip) while
    /// Redis is reachable; the local share while it is not ([`OnLoss`]).
    ///
    /// Priority holds across processes: a P0 or P1 ask refused for want of quota makes every
    /// lower priority, in any process, wait ([`QuotaWaitReason::Yielding`]) for this
    /// process's poll bound ([`WaitPolicy::poll`](crate::WaitPolicy::poll)), within which
    /// its waiter asks again; quota returned meanwhile goes to the higher priority.
    ///
    /// On a resource with shared rules ([`QuotaSpec::shared_pacing`](crate::QuotaSpec::shared_pacing))
    /// this counts as a read of one point with no endpoint: use
    /// [`try_acquire_request`](Self::try_acquire_request) to say what the call is.
    ///
    /// It always asks Redis: the express lane serves [`acquire`](Self::acquire) and
    /// [`acquire_within`](Self::acquire_within) only.
    pub async fn try_acquire(
        &self,
        cost: u32,
        priority: Priority,
    ) -> Result<QuotaDecision, RedisQuotaError> {
        self.try_ask(cost, priority, Ask::plain()).await
    }

    /// As [`try_acquire`](Self::try_acquire) for `request`: its cost, and for the shared
    /// rules its kind, points and endpoint. A rule that refuses it says how long until
    /// enough of it frees ([`QuotaWaitReason::Paced`], [`QuotaWaitReason::InFlight`]).
    pub async fn try_acquire_request(
        &self,
        request: &Request<'_>,
        priority: Priority,
    ) -> Result<QuotaDecision, RedisQuotaError> {
        let ask = Ask::of(request, self.state.fixed.pacing.as_deref());
        self.try_ask(request.cost(), priority, ask).await
    }

    async fn try_ask(
        &self,
        cost: u32,
        priority: Priority,
        ask: Ask,
    ) -> Result<QuotaDecision, RedisQuotaError> {
        if let Some((rule, needs, allows)) = self
            .state
            .fixed
            .pacing
            .as_deref()
            .and_then(|rules| rules.never_fits(&ask, cost, priority as u8))
        {
            return Err(RedisQuotaError::RuleTooSmall {
                resource: self.state.name.to_string(),
                rule: rule.to_owned(),
                needs,
                allows,
            });
        }
        let asked = self.inner.clock.now();
        // Noted until its answer is read, so a report made meanwhile counts it (pace_log.rs).
        let pending = self
            .state
            .pace_log
            .as_ref()
            .zip(self.state.fixed.pacing.as_deref())
            .map(|(log, rules)| PendingAsk::send(log, rules, &*self.inner.clock, &ask, cost));
        let op = Op::Acquire {
            cost,
            priority: priority as u8,
            ask,
            pending: pending.as_ref().map(PendingAsk::id),
        };
        let mut decision = match self.inner.call(&self.state, op).await {
            Ok(r) => {
                let mut decision = self.decision(&r, cost);
                if let Some(p) = pending {
                    match &mut decision {
                        Ok(QuotaDecision::Go(g)) => {
                            g.pace_id = p.id();
                            p.settle(Some(g.granted_ms));
                        }
                        _ => p.settle(None),
                    }
                }
                decision
            }
            // A pending ask is given up on when dropped: the call may have been judged.
            Err(CallError::Server(e)) => Err(e),
            Err(CallError::Lost { ran }) => {
                if let (false, Some(p)) = (ran, pending) {
                    // Never judged (never sent, or refused unrun): no grant to count. Given up
                    // on, every try during an outage counted as a grant in the rebuilt rule
                    // counts, and refused asks for a whole span after it.
                    p.settle(None);
                }
                self.offline_acquire(cost)
            }
        }?;
        if let QuotaDecision::Wait(w) = &mut decision {
            let round_trip = self.inner.clock.now().saturating_sub(asked);
            w.retry_in = crate::wait::plan(w, priority, &self.inner.cfg.wait, round_trip).sleep;
        }
        Ok(decision)
    }

    /// Waits until `cost` is granted. `priority` orders the waiters of every process: after
    /// a block (G6) each asks again in its priority's jitter window; while the quota is
    /// spent, a pub/sub message wakes waiters when quota is returned (higher priorities
    /// first), and each re-asks at the latest after the policy's jittered poll bound.
    /// Refusals (offline share spent, fail-closed, too large) are returned at once.
    ///
    /// A cost above the limit is refused ([`RedisQuotaError::CostTooLarge`]); one close to
    /// it may still never fit: the pool holds the window's quota less every process's
    /// reservation (about [`RedisQuotaConfig::reserve_share_permille`](crate::RedisQuotaConfig::reserve_share_permille)
    /// of it), and such an ask waits, window after window. Keep costs well below the limit
    /// (GitHub's are 1 per request), or bound the wait ([`acquire_within`](Self::acquire_within)).
    pub async fn acquire(
        &self,
        cost: u32,
        priority: Priority,
    ) -> Result<QuotaGrant, RedisQuotaError> {
        self.acquire_within(cost, priority, None).await
    }

    /// As [`acquire`](Self::acquire), giving up with [`RedisQuotaError::WaitTooLong`] once
    /// the wait would exceed `max_wait`.
    pub async fn acquire_within(
        &self,
        cost: u32,
        priority: Priority,
        max_wait: Option<Duration>,
    ) -> Result<QuotaGrant, RedisQuotaError> {
        self.ask_within(cost, priority, max_wait, Ask::plain())
            .await
    }

    /// As [`acquire`](Self::acquire) for `request` (see
    /// [`try_acquire_request`](Self::try_acquire_request)), giving up with
    /// [`RedisQuotaError::WaitTooLong`] once the wait would exceed `max_wait`. A wait on a
    /// shared window or spacing rule sleeps until a unit frees; one on the concurrency cap
    /// is woken when a grant is settled.
    pub async fn acquire_request(
        &self,
        request: &Request<'_>,
        priority: Priority,
        max_wait: Option<Duration>,
    ) -> Result<QuotaGrant, RedisQuotaError> {
        let ask = Ask::of(request, self.state.fixed.pacing.as_deref());
        self.ask_within(request.cost(), priority, max_wait, ask)
            .await
    }

    async fn ask_within(
        &self,
        cost: u32,
        priority: Priority,
        max_wait: Option<Duration>,
        ask: Ask,
    ) -> Result<QuotaGrant, RedisQuotaError> {
        if let Some(grant) = self.express(cost, priority) {
            return Ok(grant);
        }
        let clock = &self.inner.clock;
        let start = clock.now();
        // The earliest a spent window can have reset, on this host's clock, while this
        // waiter has not yet slept its priority's G6 window past it.
        let mut reset: Option<Duration> = None;
        loop {
            if let Some(r) = reset.take() {
                let now = clock.now();
                if now >= r {
                    // Back after the reset (woken by the new window, which every waiter
                    // hears at once, or a poll that ended just past it): come back in the
                    // priority's window past it, as a waiter told of the reset does.
                    let back = r + crate::wait::window_draw(priority, &self.inner.cfg.wait);
                    let left = max_wait.map_or(Duration::MAX, |m| {
                        m.saturating_sub(now.saturating_sub(start))
                    });
                    self.inner
                        .sleeper
                        .sleep(back.saturating_sub(now).min(left))
                        .await;
                } else {
                    reset = Some(r);
                }
            }
            // Registered before asking, so a wake-up between the reply and the wait counts.
            let woken = self.state.wake.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            let asked = clock.now();
            let wait = match self.try_ask(cost, priority, ask.clone()).await? {
                QuotaDecision::Go(g) => return Ok(g),
                QuotaDecision::Wait(w) => w,
            };
            let round_trip = clock.now().saturating_sub(asked);
            let plan = crate::wait::plan(&wait, priority, &self.inner.cfg.wait, round_trip);
            match wait.reason {
                // The server answered no earlier than the ask was sent.
                QuotaWaitReason::Exhausted if plan.wakeable => reset = Some(asked + wait.delay),
                // A plan that sleeps past the reset (or a block) includes the draw.
                QuotaWaitReason::Exhausted | QuotaWaitReason::Blocked => reset = None,
                QuotaWaitReason::Recovering
                | QuotaWaitReason::Yielding
                | QuotaWaitReason::Paced
                | QuotaWaitReason::InFlight
                | QuotaWaitReason::Sequential => {}
            }
            let elapsed = clock.now().saturating_sub(start);
            let sleep = match max_wait {
                // Only a block or a window rule is sure to outlast the wait (quota may be
                // returned before a reset).
                Some(max)
                    if elapsed + wait.delay > max
                        && matches!(
                            wait.reason,
                            QuotaWaitReason::Blocked | QuotaWaitReason::Paced
                        ) =>
                {
                    return Err(self.too_long(&wait));
                }
                Some(max) if elapsed >= max => return Err(self.too_long(&wait)),
                Some(max) => plan.sleep.min(max - elapsed),
                None => plan.sleep,
            };
            if plan.wakeable {
                tokio::select! {
                    () = self.inner.sleeper.sleep(sleep) => {}
                    () = &mut woken => {
                        let j = crate::wait::wake_jitter(priority, &self.inner.cfg.wait);
                        self.inner.sleeper.sleep(j).await;
                    }
                }
            } else {
                self.inner.sleeper.sleep(sleep).await;
            }
        }
    }

    /// The handle of the resource `grant` came from, if not this one: a grant settled
    /// through another resource's handle is settled on its own. An error if this connection
    /// has no such resource (the grant came from another [`RedisQuota`](crate::RedisQuota)).
    fn owner_of(&self, grant: &QuotaGrant) -> Result<Option<SharedQuota>, RedisQuotaError> {
        if grant.resource == self.state.name {
            return Ok(None);
        }
        let state = (self.inner.resources().into_iter())
            .find(|r| r.name == grant.resource)
            .ok_or_else(|| RedisQuotaError::Config {
                field: "grant",
                reason: format!(
                    "a grant of `{}` settled on the connection it came from (this handle's \
                     `{}` has no such resource)",
                    grant.resource, self.state.name
                ),
            })?;
        Ok(Some(SharedQuota {
            inner: self.inner.clone(),
            state,
        }))
    }

    /// Returns a grant whose call was not made. Refused ([`Settled::Fenced`]) if the lease
    /// it was granted under has expired: the quota may already be someone else's.
    pub async fn release(&self, grant: QuotaGrant) -> Result<Settled, RedisQuotaError> {
        if let Some(own) = self.owner_of(&grant)? {
            return Box::pin(own.release(grant)).await;
        }
        self.landed(&grant);
        if let Some(generation) = grant.offline {
            self.state
                .local
                .lock()
                .offline_release(grant.cost, generation, grant.window);
            return Ok(Settled::Local);
        }
        let op = Op::Release {
            cost: grant.cost,
            window: grant.window,
            from_reserve: grant.from_reserve,
            ledger: grant.ledger,
            granted_ms: grant.granted_ms,
            slot: grant.slot,
        };
        self.settle(grant.lease(), op).await
    }

    /// Reports the response to a call (made under `grant`, if any): its quota headers update
    /// the shared pool, a rate limit blocks the resource for every process (G6: `retry-after`,
    /// else 60 s for a secondary limit, doubled for each one in a row seen by any process up
    /// to [`WaitPolicy::max_secondary_block`](crate::WaitPolicy::max_secondary_block), a good
    /// response starting over; a primary limit empties the pool until reset).
    /// A stale grant's reading is ignored ([`Settled::Fenced`]); its block still counts.
    pub async fn observe(
        &self,
        grant: Option<QuotaGrant>,
        observation: &Observation,
    ) -> Result<Settled, RedisQuotaError> {
        if let Some(own) = grant
            .as_ref()
            .map(|g| self.owner_of(g))
            .transpose()?
            .flatten()
        {
            return Box::pin(own.observe(grant, observation)).await;
        }
        if let Some(g) = &grant {
            self.landed(g);
        }
        let window = grant
            .as_ref()
            .map_or_else(|| self.state.local.lock().window, |g| g.window);
        let bucket = self.state.spec.bucket.as_deref();
        let args =
            crate::observe::args(observation, grant.as_ref(), window, bucket, &self.inner.cfg);
        let offline_block = {
            let mut local = self.state.local.lock();
            let blocked = local.blocked_for(self.inner.clock.now()).is_some();
            crate::observe::offline_block_ms(&args, &mut local.strikes, blocked)
        };
        let offline = grant.as_ref().is_some_and(QuotaGrant::is_offline);
        if offline || !self.inner.link.is_up() {
            return Ok(self.observe_offline(&args, offline_block));
        }
        let lease = grant
            .as_ref()
            .map_or_else(|| self.state.local.lock().lease(), QuotaGrant::lease);
        match self.settle(lease, Op::Observe(args.clone())).await? {
            Settled::Local => Ok(self.observe_offline(&args, offline_block)),
            s => Ok(s),
        }
    }

    /// `grant`'s call is no longer on its way (observed, or not made): it leaves the calls in
    /// flight this process would report after a data loss.
    fn landed(&self, grant: &QuotaGrant) {
        if let (Some(log), true) = (&self.state.pace_log, grant.pace_id != 0) {
            log.lock().landed(grant.pace_id);
        }
    }

    /// G6 hook for a retry executor that saw a `Retry-After`: blocks the resource on every
    /// host for `delay` (extending, never shortening, the block), at most
    /// [`LONGEST_BLOCK`](resilience_core::governor::LONGEST_BLOCK) (a week).
    pub async fn note_retry_after(&self, delay: Duration) -> Result<Settled, RedisQuotaError> {
        let delay = delay.min(resilience_core::governor::LONGEST_BLOCK);
        let lease = self.state.local.lock().lease();
        match self.settle(lease, Op::Block { ms: ms(delay) }).await? {
            Settled::Local => {
                let until = self.inner.clock.now() + delay;
                self.state.local.lock().block_locally(until);
                Ok(Settled::Local)
            }
            s => Ok(s),
        }
    }

    /// Renews this process's lease now (the background heartbeat does it every
    /// `heartbeat`), reporting any offline spending.
    pub async fn renew(&self) -> Result<Settled, RedisQuotaError> {
        match self.inner.call(&self.state, Op::Renew).await {
            Ok(_) => Ok(Settled::Applied),
            Err(CallError::Lost { .. }) => Ok(Settled::Local),
            Err(CallError::Server(e)) => Err(e),
        }
    }

    /// Gives the lease up and returns this process's unspent reservation to the pool (on
    /// shutdown; [`RedisQuota::shutdown`](crate::RedisQuota::shutdown) leaves every
    /// resource). The next acquire starts a new lease. [`Settled::Local`]: Redis could not
    /// be reached and nothing was given up (the lease ends as a killed process's would).
    pub async fn leave(&self) -> Result<Settled, RedisQuotaError> {
        let lease = {
            let mut l = self.state.local.lock();
            // Before the call takes its report: nothing the lane spends can miss it.
            l.start_leaving();
            l.lease()
        };
        let now = self.inner.clock.now();
        let log = (self.state.pace_log.as_ref())
            .zip(self.state.fixed.pacing.as_deref())
            .map(|(l, rules)| l.lock().report(rules, None, now));
        let op = Op::Leave {
            log: log.unwrap_or_default(),
        };
        let settled = self.settle(lease, op).await;
        if matches!(settled, Ok(Settled::Local)) {
            // Never sent (no connection): nothing was given up.
            self.state.local.lock().leave_unsent();
        }
        settled
    }

    /// The shared state (from Redis; the last known one while it is unreachable).
    pub async fn snapshot(&self) -> Result<QuotaSnapshot, RedisQuotaError> {
        let reply = match self.inner.call(&self.state, Op::Snapshot).await {
            Ok(r) => Some(r),
            Err(CallError::Lost { .. }) => None,
            Err(CallError::Server(e)) => return Err(e),
        };
        let now = self.inner.clock.now();
        let l = self.state.local.lock();
        let (reset_in, blocked_for) = match &reply {
            Some(r) => (
                (r.reset_at_ms > 0).then(|| Duration::from_millis(r.reset_at_ms - r.now_ms)),
                (r.block_until_ms > r.now_ms)
                    .then(|| Duration::from_millis(r.block_until_ms - r.now_ms)),
            ),
            None => (None, l.blocked_for(now)),
        };
        Ok(QuotaSnapshot {
            limit: l.limit,
            pool: l.pool,
            reserved: l.reserved(),
            reserved_total: l.reserved_total,
            held: l.held,
            members: l.members,
            epoch: l.epoch,
            window: l.window,
            reset_in,
            blocked_for,
            sequential: l.sequential,
            link: self.inner.link_state(),
        })
    }

    /// Whether Redis is reachable right now, and what this process does if not.
    pub fn link_state(&self) -> LinkState {
        self.inner.link_state()
    }

    /// A call made under `lease` (the grant's, or this process's current one).
    async fn settle(&self, lease: LeaseId, op: Op) -> Result<Settled, RedisQuotaError> {
        match self.inner.call_for(&self.state, op, Some(lease)).await {
            Ok(r) if r.status == script::FENCED => Ok(Settled::Fenced),
            Ok(_) => Ok(Settled::Applied),
            Err(CallError::Lost { .. }) => Ok(Settled::Local),
            Err(CallError::Server(e)) => Err(e),
        }
    }

    fn decision(&self, r: &Reply, cost: u32) -> Result<QuotaDecision, RedisQuotaError> {
        let wait = |reason| {
            Ok(QuotaDecision::Wait(QuotaWait {
                delay: Duration::from_millis(r.wait_ms),
                retry_in: Duration::from_millis(r.wait_ms), // set by try_acquire
                reason,
            }))
        };
        match (r.status, r.reason) {
            (script::GO, _) => Ok(QuotaDecision::Go(QuotaGrant {
                resource: self.state.name.clone(),
                cost,
                epoch: r.epoch,
                state: r.state,
                window: r.window,
                reset_at_ms: r.reset_at_ms,
                ledger: r.ledger,
                granted_ms: r.now_ms,
                in_flight: r.in_flight.saturating_sub(u64::from(cost)),
                slot: r.slot,
                from_reserve: r.from_reserve,
                offline: None,
                express: false,
                agent: None,
                pace_id: 0,
            })),
            (script::WAIT, script::BLOCKED) => wait(QuotaWaitReason::Blocked),
            (script::WAIT, script::EXHAUSTED) => wait(QuotaWaitReason::Exhausted),
            (script::WAIT, script::RECOVERING) => wait(QuotaWaitReason::Recovering),
            (script::WAIT, script::YIELDING) => wait(QuotaWaitReason::Yielding),
            (script::WAIT, script::PACED) => wait(QuotaWaitReason::Paced),
            (script::WAIT, script::IN_FLIGHT) => wait(QuotaWaitReason::InFlight),
            (script::WAIT, script::SEQUENTIAL) => wait(QuotaWaitReason::Sequential),
            (script::WAIT, script::TOO_BIG) => Err(RedisQuotaError::CostTooLarge {
                resource: self.state.name.to_string(),
                cost,
                limit: r.limit,
            }),
            _ => Err(self.inner.server_error("unexpected script status")),
        }
    }

    /// The express lane (see [`RedisQuotaConfig::express`](crate::RedisQuotaConfig::express)):
    /// only while connected and listening for blocks, so a block set anywhere shuts it.
    fn express(&self, cost: u32, priority: Priority) -> Option<QuotaGrant> {
        let cfg = &self.inner.cfg;
        // Shared rules: every grant must be judged by the script (see `shared_pacing`).
        if self.state.fixed.pacing.is_some()
            || cfg.express.is_none_or(|bound| priority > bound)
            || !self.inner.link.is_up()
            || !self.inner.listening()
        {
            return None;
        }
        let now = self.inner.clock.now();
        let mut l = self.state.local.lock();
        let generation = l.express_acquire(cost, now, cfg.express_allowance)?;
        Some(self.reserve_grant(&l, cost, generation, true))
    }

    /// A grant paid from the reservation before the server hears of it (express or
    /// offline). An express grant's reading is reconciled from the last ledger position this
    /// process saw; an offline one is never sent.
    fn reserve_grant(&self, l: &Local, cost: u32, generation: u64, express: bool) -> QuotaGrant {
        QuotaGrant {
            resource: self.state.name.clone(),
            cost,
            epoch: l.epoch,
            state: l.state,
            window: l.window,
            reset_at_ms: l.reset_at_ms,
            ledger: if express { l.ledger } else { 0 },
            granted_ms: 0,
            // Everything in flight at the newest reply: it holds every grant up to `ledger`.
            in_flight: if express { l.in_flight } else { 0 },
            slot: 0,
            from_reserve: true,
            offline: Some(generation),
            express,
            agent: None,
            pace_id: 0,
        }
    }

    fn offline_acquire(&self, cost: u32) -> Result<QuotaDecision, RedisQuotaError> {
        let unavailable = |retry_after| RedisQuotaError::Unavailable {
            url: self.inner.link.url.clone(),
            retry_after,
        };
        // Shared rules cannot be judged without the script: nothing is spent offline.
        if self.inner.cfg.on_loss == OnLoss::FailClosed || self.state.fixed.pacing.is_some() {
            return Err(unavailable(self.inner.cfg.reconnect_every));
        }
        let now = self.inner.clock.now();
        let mut l = self.state.local.lock();
        match l.offline_acquire(cost, now, self.inner.cfg.call_bound) {
            Ok(generation) => Ok(QuotaDecision::Go(
                self.reserve_grant(&l, cost, generation, false),
            )),
            Err(OfflineRefusal::Blocked(d)) => Ok(QuotaDecision::Wait(QuotaWait {
                delay: d,
                retry_in: d, // set by try_acquire
                reason: QuotaWaitReason::Blocked,
            })),
            Err(OfflineRefusal::NoShare) => Err(unavailable(self.inner.cfg.reconnect_every)),
        }
    }

    fn too_long(&self, wait: &QuotaWait) -> RedisQuotaError {
        RedisQuotaError::WaitTooLong {
            resource: self.state.name.to_string(),
            wait: wait.delay,
            reason: wait.reason,
        }
    }
}
