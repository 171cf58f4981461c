//! G2 shared token pool and G5 leases: each agent's reservation, use and liveness on one
//! resource.
//!
//! An agent's *hold* is the unused part of its reservation while its lease is live and it is
//! not idle. The pool's free quota is `remaining - sum(holds)`. Idle agents (no request for
//! `idle_after`) donate their hold until they ask again; dead agents (silent past the lease)
//! lose it for good, until they come back.

use super::super::config::TokenPool;
use super::super::decision::{AgentId, RefusalReason};
use super::super::priority::Priority;
use super::flights::Flights;
use super::time::{share_ceil, Nanos};

/// One agent's standing on one resource.
#[derive(Debug, Clone)]
pub(crate) struct Usage {
    pub priority: Priority,
    /// G5: the lease is live.
    pub alive: bool,
    /// G2: donating its hold.
    pub idle: bool,
    /// Last sign of life (any request, observation or heartbeat).
    pub last_seen: Nanos,
    /// Last request (idleness is about asking, not about observing).
    pub last_active: Nanos,
    /// Cost charged in this window.
    pub used: u64,
    /// Reservation in this window.
    pub reserved: u64,
    /// Granted calls not yet observed or released.
    pub inflight: u32,
    /// Their cost.
    pub inflight_cost: u64,
    /// Lease episodes ended by the sweep; grants carry the episode they were made in.
    pub lease: u32,
    /// The calls in `inflight` by age, to settle those never settled (G5).
    pub flights: Flights,
    /// Since when its requests have been waiting or refused without a grant (G2 starvation).
    pub wanting_since: Option<Nanos>,
    /// G4: warned by this upstream agent until this time.
    pub warned: Option<(AgentId, Nanos)>,
}

impl Usage {
    /// Charges `cost` to a live, active agent on the fast path (`total_hold`: its pool's) and
    /// renews its lease as of `seen` (never moving it back); returns the upstream agent that
    /// warned it, if the warning is current at `now`.
    #[inline(always)]
    pub fn charge_fast(
        &mut self,
        total_hold: &mut u64,
        cost: u64,
        epoch: u64,
        now: Nanos,
        seen: Nanos,
    ) -> Option<AgentId> {
        let before = self.hold();
        self.used = self.used.saturating_add(cost);
        self.inflight = self.inflight.saturating_add(1);
        self.inflight_cost = self.inflight_cost.saturating_add(cost);
        self.flights.open(epoch, cost);
        self.last_seen = self.last_seen.max(seen);
        self.last_active = self.last_active.max(seen);
        *total_hold = total_hold
            .saturating_sub(before)
            .saturating_add(self.hold());
        self.warned
            .filter(|&(_, until)| until > now)
            .map(|(by, _)| by)
    }

    #[inline]
    pub fn hold(&self) -> u64 {
        if self.alive && !self.idle {
            self.reserved.saturating_sub(self.used)
        } else {
            0
        }
    }
}

/// All agents' usage of one resource.
#[derive(Debug, Clone, Default)]
pub(crate) struct Pool {
    usages: Vec<Option<Usage>>,
    total_hold: u64,
}

impl Pool {
    /// The usage of `agent`, if known here.
    #[inline]
    pub fn get(&self, agent: AgentId) -> Option<&Usage> {
        self.usages.get(agent.0 as usize).and_then(Option::as_ref)
    }

    #[inline]
    pub fn get_mut(&mut self, agent: AgentId) -> Option<&mut Usage> {
        self.usages
            .get_mut(agent.0 as usize)
            .and_then(Option::as_mut)
    }

    /// Adds `agent` (live, with its reservation) if it is not known yet.
    pub fn ensure(
        &mut self,
        agent: AgentId,
        priority: Priority,
        now: Nanos,
        limit: u64,
        cfg: &TokenPool,
    ) {
        let i = agent.0 as usize;
        if self.usages.len() <= i {
            self.usages.resize(i + 1, None);
        }
        if self.usages[i].is_none() {
            self.usages[i] = Some(Usage {
                priority,
                alive: true,
                idle: false,
                last_seen: now,
                last_active: now,
                used: 0,
                reserved: reservation(limit, priority, cfg),
                inflight: 0,
                inflight_cost: 0,
                lease: 0,
                flights: Flights::default(),
                wanting_since: None,
                warned: None,
            });
            self.recompute();
        }
    }

    /// Renews `agent`'s lease and activity; returns whether it came back from idle or dead
    /// (so holds were recomputed).
    #[inline]
    pub fn touch(&mut self, agent: AgentId, now: Nanos, active: bool) -> bool {
        let Some(u) = self.get_mut(agent) else {
            return false;
        };
        u.last_seen = u.last_seen.max(now);
        if active {
            u.last_active = u.last_active.max(now);
        }
        let revived = !u.alive || (active && u.idle);
        if revived {
            u.alive = true;
            if active {
                u.idle = false;
            }
            self.recompute();
        }
        revived
    }

    /// Changes `agent`'s usage with `change`, keeping the pool's total hold in step.
    #[inline]
    fn update(&mut self, agent: AgentId, change: impl FnOnce(&mut Usage)) {
        let Some(u) = self
            .usages
            .get_mut(agent.0 as usize)
            .and_then(Option::as_mut)
        else {
            return;
        };
        let before = u.hold();
        change(u);
        self.total_hold = self
            .total_hold
            .saturating_sub(before)
            .saturating_add(u.hold());
    }

    /// Charges `cost` to `agent`.
    #[inline]
    pub fn charge(&mut self, agent: AgentId, cost: u64, epoch: u64) {
        self.update(agent, |u| {
            u.used = u.used.saturating_add(cost);
            u.inflight = u.inflight.saturating_add(1);
            u.inflight_cost = u.inflight_cost.saturating_add(cost);
            u.flights.open(epoch, cost);
            u.wanting_since = None;
        });
    }

    /// Gives back `cost` charged to `agent` by a grant released unused.
    #[inline]
    pub fn refund(&mut self, agent: AgentId, cost: u64) {
        self.update(agent, |u| u.used = u.used.saturating_sub(cost));
    }

    /// The usage of `agent` with the pool's total hold, so that the fast path looks the
    /// agent up once.
    #[inline]
    pub fn get_mut_with_total(&mut self, agent: AgentId) -> Option<(&mut Usage, &mut u64)> {
        let u = self.usages.get_mut(agent.0 as usize)?.as_mut()?;
        Some((u, &mut self.total_hold))
    }

    /// Quota not held by anyone.
    #[inline]
    pub fn free(&self, remaining: u64) -> u64 {
        remaining.saturating_sub(self.total_hold)
    }

    /// The window's quota less the reservations held (those of live agents that are not
    /// idle): an idle agent's reservation is donated to the pool.
    pub fn size(&self, limit: u64) -> u64 {
        // Saturating: a huge limit (`u64::MAX` for "unlimited") makes huge reservations.
        let reserved = self
            .iter()
            .filter(|u| u.alive && !u.idle)
            .fold(0u64, |sum, u| sum.saturating_add(u.reserved));
        limit.saturating_sub(reserved)
    }

    /// Live agents.
    pub fn live(&self) -> usize {
        self.iter().filter(|u| u.alive).count()
    }

    fn iter(&self) -> impl Iterator<Item = &Usage> {
        self.usages.iter().flatten()
    }

    /// Every known agent with its usage.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (AgentId, &mut Usage)> {
        self.usages
            .iter_mut()
            .enumerate()
            .filter_map(|(i, u)| Some((AgentId(i as u32), u.as_mut()?)))
    }

    /// Recomputes the total hold after liveness or reservations changed.
    pub fn recompute(&mut self) {
        self.total_hold = self
            .iter()
            .fold(0u64, |sum, u| sum.saturating_add(u.hold()));
    }

    /// A new window: nothing used, reservations from the (possibly new) limit.
    pub fn new_window(&mut self, limit: u64, cfg: &TokenPool) {
        for (_, u) in self.iter_mut() {
            u.used = 0;
            u.reserved = reservation(limit, u.priority, cfg);
        }
        self.recompute();
    }

    /// The limit changed mid-window: re-size reservations.
    pub fn set_limit(&mut self, limit: u64, cfg: &TokenPool) {
        for (_, u) in self.iter_mut() {
            u.reserved = reservation(limit, u.priority, cfg);
        }
        self.recompute();
    }

    /// The priority `agent` is served at: P2 starved past `promote_after` counts as P1.
    #[inline]
    pub fn effective_priority(&self, agent: AgentId, now: Nanos, promote_after: Nanos) -> Priority {
        match self.get(agent) {
            Some(u) if u.priority == Priority::P2 => match u.wanting_since {
                Some(since) if now.saturating_sub(since) >= promote_after => Priority::P1,
                _ => Priority::P2,
            },
            Some(u) => u.priority,
            None => Priority::P2,
        }
    }

    /// `agent` was told to come back at `until`: until then it counts as seen and active.
    pub fn waiting_until(&mut self, agent: AgentId, until: Nanos) {
        if let Some(u) = self.get_mut(agent) {
            u.last_seen = u.last_seen.max(until);
            u.last_active = u.last_active.max(until);
        }
    }

    /// Marks `agent` as wanting since now, unless it already was.
    pub fn wanting(&mut self, agent: AgentId, now: Nanos) {
        if let Some(u) = self.get_mut(agent) {
            u.wanting_since.get_or_insert(now);
        }
    }

    /// G2 admission of `cost` for `agent` served at `priority`.
    #[inline]
    pub fn admit(
        &self,
        agent: AgentId,
        priority: Priority,
        cost: u64,
        remaining: u64,
        limit: u64,
        cfg: &TokenPool,
    ) -> Result<(), RefusalReason> {
        let own = self.get(agent).map_or(0, Usage::hold);
        let free = self.free(remaining);
        match priority {
            // P0 is served while anything remains (the caller checks remaining).
            Priority::P0 => Ok(()),
            Priority::P1 if cost <= own + free => Ok(()),
            Priority::P1 => Err(RefusalReason::PoolEmpty),
            Priority::P2 if cost <= own => Ok(()),
            Priority::P2 => {
                if free < share_ceil(self.size(limit), cfg.p2_yield_below) {
                    Err(RefusalReason::PoolYield)
                } else if cost <= own + free {
                    Ok(())
                } else {
                    Err(RefusalReason::PoolEmpty)
                }
            }
        }
    }

    /// G5 and G2 sweep: expires silent agents, marks idle ones. Returns the agents whose lease
    /// expired now.
    pub fn sweep(&mut self, now: Nanos, ttl: Nanos, idle_after: Nanos) -> Vec<AgentId> {
        let mut expired = Vec::new();
        let mut changed = false;
        for (id, u) in self.iter_mut() {
            if u.alive && now.saturating_sub(u.last_seen) >= ttl {
                u.alive = false;
                // Presumed dead: it was not starved while away, so its wait starts over.
                u.wanting_since = None;
                expired.push(id);
                changed = true;
            }
            let idle = now.saturating_sub(u.last_active) >= idle_after;
            if idle != u.idle {
                u.idle = idle;
                changed = true;
            }
        }
        if changed {
            self.recompute();
        }
        expired
    }
}

fn reservation(limit: u64, p: Priority, cfg: &TokenPool) -> u64 {
    let share = cfg.reservation[p.index()];
    let v = (limit as f64 * share).floor();
    if v.is_finite() && v >= 0.0 {
        v as u64
    } else {
        0
    }
}
