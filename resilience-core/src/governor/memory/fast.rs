//! The fast path: green light, no block or recovery, nobody in line, no breaker, no
//! sequential mode, a live agent spending its own reservation or the pool. One pass over
//! the pacing rules, no allocation; anything unusual falls through to the full decision,
//! which reaches the same answer more slowly.
//!
//! # Coarse time
//!
//! `InProcessStore::decide_with` first tries this path on the cheap
//! [`Clock::now_coarse`](crate::clock::Clock::now_coarse) reading (a few ns on Linux: 5–8 ns
//! measured on this project's shared VM, against ~30 ns for a precise one), which is never
//! ahead of the true time and behind it by at most
//! [`Clock::coarse_lag`](crate::clock::Clock::coarse_lag) (two kernel ticks: 8 ms at
//! `HZ=250`). A reading that lags more (a descheduled vCPU) is stale the way a precise one is
//! when the thread is preempted between reading the clock and taking the lock. Every time
//! this path reads is either a gate or a stamp:
//!
//! - Gates ("not before"): the G6 block and its recovery pacing (`calm_after`) and the
//!   maintenance time `due`. A lagging reading can only find a gate still closed, never open
//!   one early; the call then takes the full decision on the precise clock, so a wait is never
//!   computed from the coarse reading (nor lengthened by its lag). `due` (the window's reset,
//!   the G5/G2 sweep) is tested against the upper bound `coarse + lag`, so a window that may
//!   have reset is always rolled on the precise clock first.
//! - Stamps: G5 lease and G2 idleness renewals take the upper bound `coarse + lag` (and never
//!   move back), so a lease or a reservation never lapses early; [`Grant::granted_at`] takes
//!   the coarse reading (at most `lag` early), and a G4 upstream warning is current until the
//!   coarse reading passes its end (shown up to `lag` longer).
//! - Not on this path at all: G1 amber delays and red pacing, G3 (breaker open), G4
//!   (sequential), the line; all take the full decision.
//! - Stamps that later gates rely on exactly (G8 windows, spacing and concurrency rules, and
//!   the last-grant times G1/G3/G6 pace from) are recorded only when pacing rules are
//!   configured, and anchoring an assumed quota window (`reset_at = now + window`) happens
//!   once per window: a stamp up to `lag` early would let a later call through up to `lag`
//!   early, so both cases read the precise clock.
//!
//! With a [`ManualClock`](crate::clock::ManualClock) the coarse reading is the precise one
//! and the lag is zero: every decision is exactly what it was.

use super::super::decision::{AgentId, Grant};
use super::super::priority::Priority;
use super::super::request::Request;
use super::super::store::Zone;
use super::rules::Env;
use super::state::ResourceState;
use super::time::{ns, Nanos};
use std::time::Duration;

impl ResourceState {
    /// The fast path on a coarse reading `coarse` that lags the true time by at most `lag`
    /// (see the module docs); `None` means: decide on the precise clock.
    #[inline(always)]
    pub(super) fn fast_coarse(
        &mut self,
        agent: AgentId,
        req: &Request<'_>,
        coarse: Duration,
        lag: Duration,
    ) -> Option<Grant> {
        let lo = ns(coarse);
        let hi = lo.saturating_add(ns(lag));
        if hi >= self.due || self.quota.reset_at.is_none() || !self.rules.is_empty() {
            return None;
        }
        self.fast(agent, req, lo, hi, coarse)
    }

    /// The fast path at `now` (gates, [`Grant::granted_at`]); lease renewals are stamped
    /// `seen` (`>= now`: an upper bound on the true time).
    #[inline(always)]
    pub(super) fn fast(
        &mut self,
        agent: AgentId,
        req: &Request<'_>,
        now: Nanos,
        seen: Nanos,
        now_d: Duration,
    ) -> Option<Grant> {
        if now >= self.due
            || now < self.calm_after
            || !self.queue.is_empty()
            || self.breaker.open
            || self.cascade.sequential
            || !self.quota.is_green()
        {
            return None;
        }
        let cost = u64::from(req.cost());
        let remaining = self.quota.remaining;
        let free = self.pool.free(remaining);
        let (u, total_hold) = self.pool.get_mut_with_total(agent)?;
        let epoch = self.timing.ages.epoch(now);
        // Idle, dead or starving agents take the full path (revival, promotion), and so does
        // one whose flights must first make room (G5).
        if !u.alive
            || u.idle
            || u.wanting_since.is_some()
            || cost > remaining
            || !u.flights.can_open(epoch)
        {
            return None;
        }
        let hold = u.hold();
        let priority = u.priority;
        let admitted = match priority {
            Priority::P0 => true,
            Priority::P1 => cost <= hold + free,
            // Drawing on the pool needs the yield check: full path.
            Priority::P2 => cost <= hold,
        };
        if !admitted {
            return None;
        }
        let env = Env {
            now,
            priority,
            zone: Zone::Green,
            breaker_open: false,
            sequential: false,
            recovering: false,
            inflight: self.inflight,
            sustain: 0,
            limit: self.quota.limit,
        };
        // Without rules there is nothing to check or record: the clocks `commit` keeps
        // (last grant times) only matter outside green or after a block, off this path.
        if !self.rules.is_empty() {
            if self.rules.earliest(req, &env).0 > now {
                return None;
            }
            self.rules.commit(req, &env);
        }
        let ledger = self.quota.charge(cost, now);
        self.inflight = self.inflight.saturating_add(1);
        let lease = u.lease;
        let warned = u.charge_fast(total_hold, cost, epoch, now, seen);
        if !self.quota.is_green() || self.quota.reset_at.is_some_and(|r| r < self.due) {
            // Crossed into amber, or the window was just anchored: refresh the caches.
            self.after_grant(now);
        }
        Some(
            Grant::new(self.id, agent, priority, req.cost(), ledger, now_d)
                .with_upstream_limited(warned)
                .with_footprint(req, lease, epoch),
        )
    }
}
