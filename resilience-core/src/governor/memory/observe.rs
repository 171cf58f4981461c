//! What a response teaches one resource: the quota reading (G1, G8), the G3 breaker, and on
//! a rate limit the G6 block, the G4 cascade log and the downstream warnings.

use super::super::decision::{AgentId, Grant};
use super::super::observation::{LimitKind, Observation, ResetAt, RetryAfter, LONGEST_BLOCK};
use super::super::store::{Now, ObserveOutcome, Snapshot};
use super::breaker::Change;
use super::notes::Note;
use super::quota::Answering;
use super::state::ResourceState;
use super::time::{dur, ns, Nanos, NANOS_PER_SEC};
use std::time::Duration;

impl ResourceState {
    /// Frees the in-flight slot of `grant`; returns whether it was still counted (a lease
    /// sweep may already have settled the calls of a presumed-dead agent).
    #[inline]
    fn settle(&mut self, grant: &Grant) -> bool {
        let Some(u) = self.pool.get_mut(grant.agent()) else {
            return false;
        };
        // A grant from an earlier lease episode was settled when that lease expired.
        let stale = grant.footprint().is_some_and(|f| f.lease != u.lease);
        if u.inflight == 0 || stale {
            return false;
        }
        let cost = u64::from(grant.cost());
        // One past its call bound was settled by the sweep (G5).
        if let Some(f) = grant.footprint() {
            if !u.flights.close(f.epoch, cost) {
                return false;
            }
        }
        u.inflight -= 1;
        u.inflight_cost = u.inflight_cost.saturating_sub(cost);
        self.inflight = self.inflight.saturating_sub(1);
        true
    }

    /// `grant`'s call was made but counted by another bucket (its response named it): its
    /// slot, cost and reservation come back here, but not its place in the pacing windows,
    /// which count requests whatever bucket pays for them.
    pub fn settle_elsewhere(&mut self, grant: &Grant) {
        self.give_back(grant, false);
    }

    /// `grant` was released unused: the call is presumed not made, so its slot, its cost
    /// and its place in the pacing windows come back.
    #[inline]
    pub fn release(&mut self, grant: &Grant) {
        self.give_back(grant, true);
    }

    #[inline]
    fn give_back(&mut self, grant: &Grant, window_slot: bool) {
        if !self.settle(grant) {
            return;
        }
        let cost = u64::from(grant.cost());
        if cost > 0 {
            self.quota.refund(cost);
            self.pool.refund(grant.agent(), cost);
        }
        if window_slot && !self.rules.is_empty() {
            self.rules.refund(grant);
        }
    }

    /// G6: blocks until `until` (never shortens).
    pub fn block_until(&mut self, until: Nanos, now: Nanos) -> bool {
        let moved = self.block.extend(until, &self.cfg.retry_windows);
        self.refresh(now);
        moved
    }

    /// Applies an observation. `downstream` are the agents to warn if it is a rate limit.
    pub fn observe(
        &mut self,
        agent: AgentId,
        grant: Option<&Grant>,
        obs: &Observation,
        now: Now,
        downstream: &[AgentId],
    ) -> ObserveOutcome {
        // A response about another upstream bucket (one no resource of this governor counts)
        // says nothing of this one's quota or limits: its call is settled as paid elsewhere.
        if obs.names_another_bucket(self.cfg.bucket.as_deref()) {
            if let Some(g) = grant {
                self.settle_elsewhere(g);
            }
            return ObserveOutcome::default();
        }
        let n = ns(now.mono);
        self.maintain(n);
        let mut answered = grant
            .filter(|g| self.settle(g))
            .map(|g| u64::from(g.cost()));
        if let (Some(cost), Some(g), false) = (answered, grant, obs.answered()) {
            // No response: the request may reach the server until its call bound, after
            // calls granted later (their readings would not count it).
            let by = ns(g.granted_at()).saturating_add(self.timing.call_bound);
            self.quota.spent_unread_arriving_by(cost, by, n);
            answered = None;
        }
        self.touch(agent, n, false);
        let limited = obs.limit_kind();
        // A reset more than two windows away is not one this quota can have (a reset sent in
        // epoch milliseconds reads as centuries): ignored, like a malformed header.
        let reset_at = obs
            .reset()
            .map(|r| reset_to_mono(r, now))
            .filter(|&r| r.saturating_sub(n) <= ns(self.cfg.quota.window).saturating_mul(2));
        let epoch = match obs.reset() {
            Some(ResetAt::Epoch(secs)) if reset_at.is_some() => Some(secs),
            _ => None,
        };
        let applied = self.quota.apply(
            obs.limit(),
            obs.remaining(),
            reset_at,
            epoch,
            grant.map(|g| Answering {
                ledger: g.ledger(),
                granted_at: ns(g.granted_at()),
                settled_unread: if answered.is_none() {
                    u64::from(g.cost())
                } else {
                    0
                },
            }),
            answered,
            n,
            &self.cfg.traffic_light,
        );
        if applied.new_window {
            self.window_started = n;
            self.pool.new_window(self.quota.limit, &self.cfg.token_pool);
            if self.breaker.new_window() {
                self.note(Note::BreakerClosedByNewWindow);
            }
        } else if applied.limit_changed {
            self.pool.set_limit(self.quota.limit, &self.cfg.token_pool);
        }
        self.note_zone();

        match limited {
            Some(kind) => self.on_limited(agent, kind, obs, reset_at, now, downstream),
            None if obs.answered() && obs.status() < 400 => {
                if !self.block.blocked(n) {
                    self.unexplained_limits = 0;
                }
                if self.cascade.good(!self.block.blocked(n), &self.cfg.cascade) {
                    self.note(Note::SequentialOffLimitCleared);
                }
                if obs.remaining().is_none() {
                    // No reading: nothing for the G3 rate, which is the server's, not ours.
                    self.refresh(n);
                    return self.outcome(limited, n);
                }
                let ttr = self.quota.time_to_reset(n);
                match self
                    .breaker
                    .observe(n, self.quota.remaining, ttr, &self.cfg.predictive)
                {
                    Change::Opened => self.note(Note::BreakerProjected {
                        remaining: self.quota.remaining,
                    }),
                    Change::Closed => self.note(Note::BreakerClosed),
                    Change::None => {}
                }
            }
            None => {}
        }
        self.refresh(n);
        self.outcome(limited, n)
    }

    fn outcome(&self, limited: Option<LimitKind>, n: Nanos) -> ObserveOutcome {
        ObserveOutcome {
            limited,
            blocked_until: self.block.blocked(n).then(|| dur(self.block.until)),
            sequential: self.cascade.sequential,
            breaker_open: self.breaker.open,
        }
    }

    fn on_limited(
        &mut self,
        agent: AgentId,
        kind: LimitKind,
        obs: &Observation,
        reset_at: Option<Nanos>,
        now: Now,
        downstream: &[AgentId],
    ) {
        let n = ns(now.mono);
        let windows = &self.cfg.retry_windows;
        // A primary limit whose reset is already past is a late (or clock-skewed) response
        // from a window that is over: it says nothing of this one's quota.
        let late = kind == LimitKind::Primary && reset_at.is_some_and(|r| r <= n);
        // GitHub's documented order: retry-after; else the reset if the quota is spent; else
        // a default (60 s).
        let wait = match obs.retry_after() {
            Some(RetryAfter::Delay(d)) => ns(d),
            Some(RetryAfter::At(epoch)) => {
                ns(Duration::from_secs(epoch)).saturating_sub(ns(now.unix))
            }
            None if late => ns(windows.reset_margin),
            None if kind == LimitKind::Primary && self.quota.reset_at.is_some() => self
                .quota
                .time_to_reset(n)
                .saturating_add(ns(windows.reset_margin)),
            None => {
                // Consecutive limits with nothing to go on: 60 s, then doubling (GitHub's
                // documented backoff), up to the configured maximum. Responses that arrive
                // inside the block (calls already in flight when it began) are the same
                // limit, not another.
                if !self.block.blocked(n) {
                    self.unexplained_limits = self.unexplained_limits.saturating_add(1);
                }
                let doublings = self.unexplained_limits.saturating_sub(1).min(32);
                ns(windows.default_block)
                    .saturating_mul(1u64 << doublings)
                    .min(ns(windows.max_default_block))
            }
        };
        // The delay form of Retry-After is capped at a week when parsed; an HTTP-date (or a
        // far reset) is capped here the same way, so no header blocks for years.
        let wait = wait.min(ns(LONGEST_BLOCK));
        if kind == LimitKind::Primary && !late {
            self.quota.exhaust(n.saturating_add(wait));
        }
        if self.block.extend(n.saturating_add(wait), windows) {
            self.note(Note::RateLimited {
                agent,
                kind,
                block: dur(wait),
            });
        }
        if self.cascade.limited(agent, n, &self.cfg.cascade) {
            self.note(Note::CascadeDetected);
        }
        // A late limit says nothing of this window's quota: it does not trip the breaker.
        if self.cfg.predictive.open_on_limit && !late && self.breaker.trip(n) == Change::Opened {
            self.note(Note::BreakerOpenedOnLimit);
        }
        let warn_until = n.saturating_add(ns(self.cfg.cascade.window));
        for &d in downstream {
            if let Some(u) = self.pool.get_mut(d) {
                u.warned = Some((agent, warn_until));
                self.note(Note::DownstreamWarned {
                    upstream: agent,
                    downstream: d,
                });
            }
        }
    }

    /// The state for a snapshot.
    pub fn snapshot(&mut self, now: Nanos) -> Snapshot {
        self.maintain(now);
        let limit = self.quota.limit;
        Snapshot {
            name: self.name.clone(),
            limit,
            remaining: self.quota.remaining,
            reset_in: self.quota.ends_at().map(|r| dur(r.saturating_sub(now))),
            zone: self.quota.zone(),
            blocked_for: self.block.blocked(now).then(|| dur(self.block.until - now)),
            breaker_open: self.breaker.open,
            sequential: self.cascade.sequential,
            in_flight: self.inflight,
            waiters: self.queue.len(),
            pool_free: self.pool.free(self.quota.remaining),
            pool_size: self.pool.size(limit),
            live_agents: self.pool.live(),
        }
    }
}

/// A reset reading on the monotonic clock.
fn reset_to_mono(r: ResetAt, now: Now) -> Nanos {
    let n = ns(now.mono);
    match r {
        ResetAt::Epoch(secs) => {
            let at = secs.saturating_mul(NANOS_PER_SEC);
            n.saturating_add(at.saturating_sub(ns(now.unix)))
        }
        ResetAt::After(secs) => n.saturating_add(secs.saturating_mul(NANOS_PER_SEC)),
    }
}
