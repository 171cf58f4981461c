//! The fast path: green light, no block or recovery, nobody in line, no breaker, no
//! sequential mode, a live agent spending its own reservation or the pool. One pass over
//! the pacing rules, no allocation; anything unusual falls through to the full decision,
//! which reaches the same answer more slowly.

use super::super::decision::{AgentId, Grant};
use super::super::priority::Priority;
use super::super::request::Request;
use super::super::store::Zone;
use super::rules::Env;
use super::state::ResourceState;
use super::time::Nanos;
use std::time::Duration;

impl ResourceState {
    #[inline]
    pub(super) fn fast(
        &mut self,
        agent: AgentId,
        req: &Request<'_>,
        now: Nanos,
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
        let u = self.pool.get_mut(agent)?;
        // Idle, dead or starving agents take the full path (revival, promotion).
        if !u.alive || u.idle || u.wanting_since.is_some() || cost > remaining {
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
        let warned = self.pool.charge_fast(agent, cost, now);
        if !self.quota.is_green() || self.quota.reset_at.is_some_and(|r| r < self.due) {
            // Crossed into amber, or the window was just anchored: refresh the caches.
            self.after_grant(now);
        }
        Some(
            Grant::new(self.id, agent, priority, req.cost(), ledger, now_d)
                .with_upstream_limited(warned),
        )
    }
}
