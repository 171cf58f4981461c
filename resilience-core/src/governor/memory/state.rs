//! One resource's whole state and its decisions: the fast path (green, calm, nobody in
//! line: one pass over the pacing rules) and the slow path (refusals, G1 delays, G6 release
//! windows, the line).

use super::super::config::ResourceConfig;
use super::super::decision::{
    AgentId, Decision, Grant, Refusal, RefusalKind, RefusalReason, ResourceId, Ticket, Wait,
    WaitReason,
};
use super::super::priority::Priority;
use super::super::request::Request;
use super::super::store::Zone;
use super::block::Block;
use super::breaker::Breaker;
use super::cascade::Cascade;
use super::flights::{Ages, Slot};
use super::notes::{self, Note};
use super::pool::Pool;
use super::queue::{Queue, Waiter};
use super::quota::Quota;
use super::rules::{Env, Rules};
use super::time::{dur, ns, Nanos, NEVER};
use std::sync::Arc;
use std::time::Duration;

/// Leases, idleness and late tickets are checked at most this often.
const SWEEP_EVERY: Nanos = 1_000_000_000;

/// Settings in nanoseconds, read on every decision.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timing {
    pub lease_ttl: Nanos,
    pub ticket_grace: Nanos,
    pub idle_after: Nanos,
    pub promote_after: Nanos,
    /// [`Leases::call_bound`](crate::governor::Leases::call_bound) in epochs.
    pub ages: Ages,
    /// [`Leases::call_bound`](crate::governor::Leases::call_bound).
    pub call_bound: Nanos,
}

#[derive(Debug)]
pub(crate) struct ResourceState {
    pub id: ResourceId,
    pub name: Arc<str>,
    pub cfg: ResourceConfig,
    pub timing: Timing,
    pub quota: Quota,
    pub pool: Pool,
    pub breaker: Breaker,
    pub cascade: Cascade,
    pub block: Block,
    pub rules: Rules,
    pub queue: Queue,
    pub inflight: u32,
    /// When the current quota window began (it rolled, or a reading named a new reset).
    pub(super) window_started: Nanos,
    /// Limits in a row that gave no retry-after and no reset to wait for (G6 backoff).
    pub(super) unexplained_limits: u32,
    next_sweep: Nanos,
    /// `min(next_sweep, reset)`: maintenance is due at or after this.
    pub(super) due: Nanos,
    /// `max(block end, recovery end)`: before this the fast path is off.
    pub calm_after: Nanos,
    last_zone: Zone,
    /// A note was kept since the lock was taken (see `notes`).
    noted: bool,
    /// Notes taken while this thread's note buffer is gone (its teardown), emitted once the
    /// lock is released all the same (see `notes::Locked`).
    orphans: Vec<Note>,
}

impl ResourceState {
    pub fn new(
        id: ResourceId,
        name: Arc<str>,
        cfg: ResourceConfig,
        timing: Timing,
        seed: u64,
    ) -> Self {
        let rules = Rules::new(
            &cfg.pacing,
            &cfg.traffic_light,
            ns(cfg.retry_windows.release_spacing),
        );
        Self {
            id,
            name,
            quota: Quota::new(&cfg.quota, &cfg.traffic_light, timing.call_bound),
            pool: Pool::default(),
            breaker: Breaker::default(),
            cascade: Cascade::default(),
            block: Block::new(seed),
            rules,
            queue: Queue::default(),
            inflight: 0,
            window_started: 0,
            unexplained_limits: 0,
            next_sweep: 0,
            due: 0,
            calm_after: 0,
            last_zone: Zone::Green,
            noted: false,
            orphans: Vec::new(),
            timing,
            cfg,
        }
    }

    /// Whether a note was kept since the last call; clears the mark (see `notes::Locked`).
    #[inline]
    pub(super) fn take_noted(&mut self) -> bool {
        std::mem::take(&mut self.noted)
    }

    /// Keeps a log line for when the lock is released.
    #[cold]
    pub(super) fn note(&mut self, note: Note) {
        if !notes::keep(&self.name, note) {
            self.orphans.push(note);
        }
        self.noted = true;
    }

    /// The notes kept here rather than in the thread's buffer, with the resource's name.
    #[cold]
    pub(super) fn take_orphans(&mut self) -> Option<(Arc<str>, Vec<Note>)> {
        (!self.orphans.is_empty()).then(|| (self.name.clone(), std::mem::take(&mut self.orphans)))
    }

    /// Renews `agent`'s lease and activity (G5).
    #[inline]
    pub(super) fn touch(&mut self, agent: AgentId, now: Nanos, active: bool) {
        if self.pool.touch(agent, now, active) {
            self.note(Note::AgentActiveAgain { agent });
        }
    }

    /// Adds an agent (all agents are known to all resources).
    pub fn ensure_agent(&mut self, agent: AgentId, priority: Priority, now: Nanos) {
        self.pool
            .ensure(agent, priority, now, self.quota.limit, &self.cfg.token_pool);
    }

    /// Window reset, lease and idle sweep, late tickets.
    pub fn maintain(&mut self, now: Nanos) {
        if self.quota.expired(now) {
            // Agents paused until this reset come back now: pace them (G6).
            let spent = !self.quota.is_green();
            self.quota.roll(now);
            self.window_started = now;
            if spent {
                self.block.pace_from(now, &self.cfg.retry_windows);
            }
            self.pool.new_window(self.quota.limit, &self.cfg.token_pool);
            if self.breaker.new_window() {
                self.note(Note::BreakerClosedByNewWindow);
            }
            if self.cascade.new_window() {
                self.note(Note::SequentialOffByNewWindow);
            }
            self.note(Note::WindowReset);
        }
        if now >= self.next_sweep {
            let expired = self
                .pool
                .sweep(now, self.timing.lease_ttl, self.timing.idle_after);
            for agent in expired {
                if let Some(u) = self.pool.get_mut(agent) {
                    // Its calls in flight will never be reported: free their slots, and
                    // count them as spent, by calls that may yet arrive within their bound.
                    self.inflight = self.inflight.saturating_sub(u.inflight);
                    let by = now.saturating_add(self.timing.call_bound);
                    self.quota
                        .spent_unread_arriving_by(u.inflight_cost, by, now);
                    u.inflight = 0;
                    u.inflight_cost = 0;
                    u.flights.clear();
                    u.lease = u.lease.wrapping_add(1);
                }
                self.queue.remove_agent(agent);
                self.note(Note::LeaseExpired { agent });
            }
            self.settle_due(now);
            // G3: nothing seen for a horizon, and a horizon past the block.
            let horizon = ns(self.cfg.predictive.horizon);
            if now >= self.block.until.saturating_add(horizon)
                && self.breaker.expire(now.saturating_sub(horizon))
            {
                self.note(Note::BreakerClosedByQuiet);
            }
            self.queue.expire(now, self.timing.ticket_grace);
            self.cascade.forget(now, &self.cfg.cascade);
            self.next_sweep = now.saturating_add(SWEEP_EVERY);
        }
        self.refresh(now);
    }

    /// Recomputes the cached thresholds of the fast path.
    pub fn refresh(&mut self, now: Nanos) {
        self.due = self.next_sweep.min(self.quota.ends_at().unwrap_or(NEVER));
        self.calm_after = self.block.until.max(self.block.recovery_until);
        let _ = now;
    }

    fn env(&self, now: Nanos, priority: Priority) -> Env {
        let zone = self.quota.zone();
        let slow = zone != Zone::Green || self.breaker.open;
        Env {
            now,
            priority,
            zone,
            breaker_open: self.breaker.open,
            sequential: self.cascade.sequential,
            recovering: now < self.block.recovery_until,
            inflight: self.inflight,
            sustain: if slow {
                self.quota.time_to_reset(now) / self.quota.remaining.max(1)
            } else {
                0
            },
            limit: self.quota.limit,
        }
    }

    /// Decides one request: the fast path if it applies, else the full decision.
    #[inline]
    pub fn decide(
        &mut self,
        agent: AgentId,
        req: &Request<'_>,
        ticket: Option<u64>,
        now: Nanos,
        now_d: Duration,
    ) -> Decision {
        if ticket.is_none() {
            if let Some(g) = self.fast(agent, req, now, now, now_d) {
                return Decision::Go(g);
            }
        }
        self.decide_slow(agent, req, ticket, now)
    }

    /// The full decision: maintenance, refusals, G1 delays, G6 release windows, the line.
    #[cold]
    fn decide_slow(
        &mut self,
        agent: AgentId,
        req: &Request<'_>,
        ticket: Option<u64>,
        now: Nanos,
    ) -> Decision {
        if now >= self.due {
            self.maintain(now);
        }
        let Some(u) = self.pool.get_mut(agent) else {
            return self.refuse(RefusalKind::Shed, RefusalReason::Unregistered, 0);
        };
        if u.alive && !u.idle {
            u.last_seen = now;
            u.last_active = now;
        } else {
            self.touch(agent, now, true);
        }
        let priority = self
            .pool
            .effective_priority(agent, now, self.timing.promote_after);
        let cost = u64::from(req.cost());
        if ticket.is_none()
            && self.queue.is_empty()
            && now >= self.calm_after
            && self.quota.is_green()
            && !self.breaker.open
            && !self.cascade.sequential
            && cost <= self.quota.remaining
            && self
                .pool
                .admit(
                    agent,
                    priority,
                    cost,
                    self.quota.remaining,
                    self.quota.limit,
                    &self.cfg.token_pool,
                )
                .is_ok()
        {
            let env = self.env(now, priority);
            if self.rules.earliest(req, &env).0 <= now {
                return Decision::Go(self.grant(agent, priority, req, &env));
            }
        }
        self.slow(agent, priority, req, ticket, now)
    }

    fn slow(
        &mut self,
        agent: AgentId,
        priority: Priority,
        req: &Request<'_>,
        ticket: Option<u64>,
        now: Nanos,
    ) -> Decision {
        let old = ticket.and_then(|id| self.queue.get(id, agent)).cloned();
        let mut w = old.clone().unwrap_or_else(|| Waiter {
            id: self.queue.next_id(),
            agent,
            priority,
            enqueued: now,
            not_before: now.saturating_add(self.amber_delay(priority)),
            released_by_block: false,
            block_epoch: u32::MAX,
            until: now,
            scope: None,
        });
        w.priority = priority;

        if let Some((kind, reason, mut retry)) = self.refusal(agent, priority, req, now) {
            self.queue.remove(w.id);
            self.pool.wanting(agent, now);
            if kind == RefusalKind::Paused {
                // Everyone paused until the reset would come back at one instant: spread
                // them over their priority's release window.
                retry = retry.saturating_add(self.block.spread(priority, &self.cfg.retry_windows));
            }
            self.note(Note::Refused { agent, reason });
            return self.refuse(kind, reason, retry);
        }

        // G6: inside a block every waiter draws a release time in its priority's window.
        if self.block.blocked(now) && w.block_epoch != self.block.epoch {
            let release = self.block.release_at(priority, &self.cfg.retry_windows);
            w.not_before = w.not_before.max(release);
            w.released_by_block = true;
            w.block_epoch = self.block.epoch;
        }

        let env = self.env(now, priority);
        let (rules_at, why) = self.rules.earliest(req, &env);
        let (mut at, mut reason, mut scope) = if w.not_before > rules_at && w.not_before > now {
            let r = if w.released_by_block {
                WaitReason::Blocked
            } else {
                WaitReason::Amber
            };
            (w.not_before, Some(r), None)
        } else if rules_at > now {
            (
                rules_at,
                Some(self.rules.reason(why)),
                self.rules.scope(why),
            )
        } else {
            (now, None, None)
        };
        let ahead = self
            .queue
            .ahead(w.id, priority, req.kind(), now, self.rules.unrelated_hold());

        if at <= now && ahead.is_none() {
            self.queue.remove(w.id);
            return Decision::Go(self.grant(agent, priority, req, &env));
        }
        if let Some((t, blocker_scope)) = ahead {
            if t >= at {
                // Waiting behind it, for what it waits for.
                at = t;
                reason = Some(WaitReason::Queue);
                scope = blocker_scope;
            }
        }
        if at <= now {
            // Held back by a waiter that is due now: ask again shortly.
            at = now.saturating_add(self.rules.poll());
            reason.get_or_insert(WaitReason::Queue);
        }
        w.scope = scope;
        if let Some(max) = req.max_wait() {
            if at.saturating_sub(w.enqueued) > ns(max) {
                self.queue.remove(w.id);
                self.pool.wanting(agent, now);
                return self.refuse(RefusalKind::Shed, RefusalReason::MaxWait, at - now);
            }
        }
        w.until = at;
        let id = w.id;
        self.queue.upsert(w);
        self.pool.wanting(agent, now);
        // G5: an agent waiting as told is not silent; its lease and reservation run from the
        // time it was told to come back.
        self.pool.waiting_until(agent, at);
        Decision::Wait(Wait {
            until: dur(at),
            delay: dur(at - now),
            ticket: Ticket::new(self.id, agent, id),
            reason: reason.unwrap_or(WaitReason::Queue),
            ledger: self.quota.ledger,
        })
    }

    /// G1 amber delay for a new request at `priority`: 0 at the onset, the maximum at red.
    fn amber_delay(&self, priority: Priority) -> Nanos {
        if self.quota.zone() != Zone::Amber {
            return 0;
        }
        let light = &self.cfg.traffic_light;
        let onset = match priority {
            Priority::P0 => return 0,
            Priority::P1 => light.p1_amber_onset,
            Priority::P2 => light.green,
        };
        let ratio = self.quota.ratio();
        if ratio >= onset || onset <= light.red {
            return 0;
        }
        let frac = ((onset - ratio) / (onset - light.red)).clamp(0.0, 1.0);
        (ns(light.amber_max_delay) as f64 * frac) as Nanos
    }

    /// Refusals, checked on every ask: spent quota, G1 red, G3 open, G2 pool.
    fn refusal(
        &self,
        agent: AgentId,
        priority: Priority,
        req: &Request<'_>,
        now: Nanos,
    ) -> Option<(RefusalKind, RefusalReason, Nanos)> {
        let cost = u64::from(req.cost());
        let ttr = self.quota.time_to_reset(now);
        if cost > self.quota.remaining {
            return Some((RefusalKind::Paused, RefusalReason::Exhausted, ttr));
        }
        if priority == Priority::P2 && self.quota.zone() == Zone::Red {
            return Some((RefusalKind::Paused, RefusalReason::RedLight, ttr));
        }
        if priority == Priority::P2 && self.breaker.open {
            let retry = ttr.min(ns(self.cfg.predictive.horizon));
            return Some((RefusalKind::Shed, RefusalReason::Predictive, retry));
        }
        let pool = &self.cfg.token_pool;
        match self.pool.admit(
            agent,
            priority,
            cost,
            self.quota.remaining,
            self.quota.limit,
            pool,
        ) {
            Ok(()) => None,
            Err(reason) => Some((RefusalKind::Shed, reason, ttr.min(ns(pool.idle_after)))),
        }
    }

    fn refuse(&self, kind: RefusalKind, reason: RefusalReason, retry: Nanos) -> Decision {
        Decision::Refuse(Refusal {
            kind,
            reason,
            resource: self.name.clone(),
            retry_after: dur(retry),
        })
    }

    /// After a fast grant that changed the zone or anchored the window.
    #[cold]
    pub(super) fn after_grant(&mut self, now: Nanos) {
        self.refresh(now);
        self.note_zone();
    }

    pub(super) fn note_zone(&mut self) {
        let zone = self.quota.zone();
        if zone != self.last_zone {
            self.note(Note::ZoneChanged {
                zone,
                remaining: self.quota.remaining,
            });
            self.last_zone = zone;
        }
    }

    /// Charges every rule, the quota and the pool.
    #[inline]
    fn grant(&mut self, agent: AgentId, priority: Priority, req: &Request<'_>, env: &Env) -> Grant {
        let now = env.now;
        self.rules.commit(req, env);
        let anchored = self.quota.reset_at.is_some();
        let ledger = self.quota.charge(u64::from(req.cost()), now);
        if !anchored {
            self.refresh(now);
        }
        let epoch = self.timing.ages.epoch(now);
        if self
            .pool
            .get(agent)
            .is_some_and(|u| !u.flights.can_open(epoch))
        {
            self.make_room(agent, epoch, now);
        }
        self.pool.charge(agent, u64::from(req.cost()), epoch);
        self.inflight = self.inflight.saturating_add(1);
        self.note_zone();
        let usage = self.pool.get(agent);
        let lease = usage.map_or(0, |u| u.lease);
        let warned = usage
            .and_then(|u| u.warned)
            .filter(|&(_, until)| until > now)
            .map(|(by, _)| by);
        Grant::new(self.id, agent, priority, req.cost(), ledger, dur(now))
            .with_upstream_limited(warned)
            .with_footprint(req, lease, epoch)
    }
}

impl ResourceState {
    /// G5: settles the grants in flight past the call bound (between one and two bounds old)
    /// as calls made without a reading: cost spent, slot freed. One granted in a window that
    /// has ended since was counted there, not in this one.
    #[cold]
    pub(super) fn settle_due(&mut self, now: Nanos) {
        let ages = self.timing.ages;
        let (mut calls, mut spent, mut elsewhere) = (0u32, 0u64, 0u64);
        let window_started = self.window_started;
        for (_, u) in self.pool.iter_mut() {
            let mut due = Slot::default();
            u.flights.take_due(&ages, now, |slot| {
                due.count += slot.count;
                due.cost += slot.cost;
                if ages.end_of(slot.epoch) <= window_started {
                    elsewhere += slot.cost;
                } else {
                    spent += slot.cost;
                }
            });
            calls += unsettled(u, due).0;
        }
        self.forget_flights(now, calls, spent, elsewhere);
    }

    /// Makes room for a grant of `epoch` in `agent`'s flights: an epoch in its slot is
    /// settled first (the sweep makes this rare: it settles epochs well before their slot
    /// comes round again).
    #[cold]
    pub(super) fn make_room(&mut self, agent: AgentId, epoch: u64, now: Nanos) {
        let Some(u) = self.pool.get_mut(agent) else {
            return;
        };
        let slot = u.flights.take_slot(epoch);
        let (calls, cost) = unsettled(u, slot);
        if self.timing.ages.end_of(slot.epoch) <= self.window_started {
            self.forget_flights(now, calls, 0, cost);
        } else {
            self.forget_flights(now, calls, cost, 0);
        }
    }

    fn forget_flights(&mut self, now: Nanos, calls: u32, spent: u64, elsewhere: u64) {
        if calls == 0 {
            return;
        }
        self.inflight = self.inflight.saturating_sub(calls);
        if spent > 0 {
            self.quota.spent_unread(spent, now);
        }
        if elsewhere > 0 {
            self.quota.refund(elsewhere);
        }
        self.note(Note::Unsettled { calls });
        self.refresh(now);
    }
}

/// Takes `slot`'s calls out of `u`'s calls in flight; returns how many and their cost.
fn unsettled(u: &mut super::pool::Usage, slot: Slot) -> (u32, u64) {
    let n = slot.count.min(u.inflight);
    u.inflight -= n;
    u.inflight_cost = u.inflight_cost.saturating_sub(slot.cost);
    (n, slot.cost)
}
