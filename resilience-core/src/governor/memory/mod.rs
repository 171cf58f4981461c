//! The in-process [`GovernorStore`]: each resource's state behind one short lock, agents
//! and the G4 dependency graph beside them.
//!
//! Lock order (never reversed): resource names, then agents, then dependencies, then one
//! resource's state. The fast path takes only the resource's lock.

mod block;
mod breaker;
mod cascade;
mod endpoints;
mod fast;
mod flights;
mod notes;
mod observe;
mod pool;
mod queue;
mod quota;
#[cfg(test)]
mod quota_tests;
mod rules;
mod state;
mod time;
mod window;

use super::config::{GovernorConfig, ResourceConfig};
use super::decision::{AgentId, Decision, Grant, ResourceId, Ticket};
use super::observation::Observation;
use super::priority::Priority;
use super::request::Request;
use super::store::{GovernorError, GovernorStore, Now, ObserveOutcome, Snapshot};
use crate::clock::Clock;
use notes::{Locked, Note};
use parking_lot::{Mutex, RwLock};
use state::{ResourceState, Timing};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use time::ns;

/// The default store: all state in this process. Build it through
/// [`Governor::builder`](super::Governor::builder).
pub struct InProcessStore {
    config: GovernorConfig,
    timing_seed: u64,
    resources: Box<[OnceLock<Mutex<ResourceState>>]>,
    names: Mutex<HashMap<Arc<str>, ResourceId>>,
    agents: RwLock<Agents>,
    /// `downstream[a]`: agents that depend on `a`.
    downstream: Mutex<Vec<Vec<AgentId>>>,
}

#[derive(Default)]
struct Agents {
    list: Vec<(Arc<str>, Priority)>,
    by_name: HashMap<Arc<str>, AgentId>,
}

impl std::fmt::Debug for InProcessStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InProcessStore")
            .field("resources", &self.names.lock().len())
            .field("agents", &self.agents.read().list.len())
            .finish_non_exhaustive()
    }
}

impl InProcessStore {
    /// A store with these settings (validated by
    /// [`GovernorBuilder::build`](super::GovernorBuilder::build)).
    pub fn new(config: GovernorConfig) -> Self {
        let resources = (0..config.max_resources).map(|_| OnceLock::new()).collect();
        Self {
            timing_seed: config.seed.unwrap_or_else(|| fastrand::u64(..)),
            config,
            resources,
            names: Mutex::default(),
            agents: RwLock::default(),
            downstream: Mutex::default(),
        }
    }

    #[inline]
    fn cell(&self, r: ResourceId) -> Option<&Mutex<ResourceState>> {
        self.resources.get(r.0 as usize).and_then(OnceLock::get)
    }

    /// Locks a resource; what it notes meanwhile is logged once it is unlocked (`notes`).
    #[inline]
    fn lock(cell: &Mutex<ResourceState>) -> Locked<'_> {
        Locked::new(cell.lock())
    }

    fn each_resource(&self, mut f: impl FnMut(&mut ResourceState)) {
        for cell in self.resources.iter().map_while(OnceLock::get) {
            f(&mut Self::lock(cell));
        }
    }

    /// Every agent downstream of `agent` in the dependency graph (breadth-first, cycles safe).
    fn downstream_of(&self, agent: AgentId) -> Vec<AgentId> {
        let graph = self.downstream.lock();
        let mut seen = vec![agent];
        let mut todo = VecDeque::from([agent]);
        while let Some(a) = todo.pop_front() {
            for &d in graph.get(a.0 as usize).into_iter().flatten() {
                if !seen.contains(&d) {
                    seen.push(d);
                    todo.push_back(d);
                }
            }
        }
        seen.remove(0);
        seen
    }

    /// [`GovernorStore::decide_on`], generic over the clock so that
    /// [`Governor`](super::Governor) dispatches its default pair (this store, the real clock)
    /// statically. The fast path on the coarse clock, everything else on the precise one;
    /// see `ResourceState::fast_coarse` (memory/fast.rs) for why a coarse reading is safe.
    #[inline]
    pub(crate) fn decide_with<C: Clock + ?Sized>(
        &self,
        agent: AgentId,
        resource: ResourceId,
        request: &Request<'_>,
        ticket: Option<&Ticket>,
        clock: &C,
    ) -> Decision {
        let Some(cell) = self.cell(resource) else {
            return self.decide(agent, resource, request, ticket, Duration::ZERO);
        };
        let ticket = ticket.filter(|t| t.agent() == agent && t.resource() == resource);
        if ticket.is_none() {
            let coarse = clock.now_coarse();
            let lag = clock.coarse_lag();
            let mut state = Self::lock(cell);
            if let Some(g) = state.fast_coarse(agent, request, coarse, lag) {
                return Decision::Go(g);
            }
            let now = clock.now();
            return state.decide(agent, request, None, ns(now), now);
        }
        let now = clock.now();
        Self::lock(cell).decide(agent, request, ticket.map(Ticket::id), ns(now), now)
    }

    /// Frees the in-flight slot of `grant` (a release does not depend on the time).
    #[inline]
    pub(crate) fn release_grant(&self, grant: &Grant) {
        if let Some(cell) = self.cell(grant.resource()) {
            Self::lock(cell).release(grant);
        }
    }
}

impl GovernorStore for InProcessStore {
    fn add_resource(
        &self,
        name: &str,
        config: ResourceConfig,
        now: Duration,
    ) -> Result<ResourceId, GovernorError> {
        config.validate()?;
        let mut names = self.names.lock();
        if names.contains_key(name) {
            return Err(GovernorError::DuplicateResource(name.into()));
        }
        let index = names.len();
        let slot = self.resources.get(index).ok_or(GovernorError::Capacity {
            what: "resources",
            capacity: self.config.max_resources,
        })?;
        let id = ResourceId(index as u32);
        let leases = &self.config.leases;
        let timing = Timing {
            lease_ttl: ns(leases.ttl),
            ticket_grace: ns(leases.ticket_grace),
            idle_after: ns(config.token_pool.idle_after),
            promote_after: ns(config.token_pool.promote_after),
            ages: flights::Ages::new(ns(leases.call_bound)),
            call_bound: ns(leases.call_bound),
        };
        let seed = self.timing_seed.wrapping_add(index as u64);
        let name: Arc<str> = name.into();
        let mut state = ResourceState::new(id, name.clone(), config, timing, seed);
        // The agents stay read-locked until the resource is published: a `register` either
        // comes first (its agent is in the list) or finds the resource in its walk. Released
        // in between, an agent registered in the gap would be unknown to it forever (G5).
        let agents = self.agents.read();
        for (i, (_, p)) in agents.list.iter().enumerate() {
            state.ensure_agent(AgentId(i as u32), *p, ns(now));
        }
        let _ = slot.set(Mutex::new(state));
        drop(agents);
        names.insert(name, id);
        Ok(id)
    }

    fn resource_id(&self, name: &str) -> Option<ResourceId> {
        self.names.lock().get(name).copied()
    }

    fn register(
        &self,
        name: &str,
        priority: Priority,
        now: Duration,
    ) -> Result<AgentId, GovernorError> {
        let now = ns(now);
        let mut agents = self.agents.write();
        if let Some(&id) = agents.by_name.get(name) {
            // Not under the agents' lock: a renewal may log, and a subscriber may register.
            drop(agents);
            self.each_resource(|r| r.touch(id, now, false));
            return Ok(id);
        }
        if agents.list.len() >= self.config.max_agents as usize {
            return Err(GovernorError::Capacity {
                what: "agents",
                capacity: self.config.max_agents,
            });
        }
        let id = AgentId(agents.list.len() as u32);
        let name: Arc<str> = name.into();
        agents.list.push((name.clone(), priority));
        agents.by_name.insert(name, id);
        self.each_resource(|r| r.ensure_agent(id, priority, now));
        Ok(id)
    }

    fn agent(&self, agent: AgentId) -> Option<(Arc<str>, Priority)> {
        self.agents.read().list.get(agent.0 as usize).cloned()
    }

    fn add_dependency(&self, upstream: AgentId, downstream: AgentId) -> Result<(), GovernorError> {
        let known = self.agents.read().list.len();
        for a in [upstream, downstream] {
            if a.0 as usize >= known {
                return Err(GovernorError::UnknownAgent(a));
            }
        }
        let mut g = self.downstream.lock();
        if g.len() < known {
            g.resize(known, Vec::new());
        }
        let edges = &mut g[upstream.0 as usize];
        if !edges.contains(&downstream) {
            edges.push(downstream);
        }
        Ok(())
    }

    fn heartbeat(&self, agent: AgentId, now: Duration) {
        let now = ns(now);
        self.each_resource(|r| r.touch(agent, now, false));
    }

    #[inline]
    fn decide(
        &self,
        agent: AgentId,
        resource: ResourceId,
        request: &Request<'_>,
        ticket: Option<&Ticket>,
        now: Duration,
    ) -> Decision {
        let Some(cell) = self.cell(resource) else {
            return Decision::Refuse(super::decision::Refusal {
                kind: super::decision::RefusalKind::Shed,
                reason: super::decision::RefusalReason::Unregistered,
                resource: "<unknown>".into(),
                retry_after: Duration::ZERO,
            });
        };
        let ticket = ticket.filter(|t| t.agent() == agent && t.resource() == resource);
        Self::lock(cell).decide(agent, request, ticket.map(Ticket::id), ns(now), now)
    }

    #[inline]
    fn decide_on(
        &self,
        agent: AgentId,
        resource: ResourceId,
        request: &Request<'_>,
        ticket: Option<&Ticket>,
        clock: &dyn Clock,
    ) -> Decision {
        self.decide_with(agent, resource, request, ticket, clock)
    }

    fn cancel(&self, ticket: &Ticket, _now: Duration) {
        if let Some(cell) = self.cell(ticket.resource()) {
            Self::lock(cell).queue.remove(ticket.id());
        }
    }

    fn observe(
        &self,
        agent: AgentId,
        resource: ResourceId,
        grant: Option<Grant>,
        observation: &Observation,
        now: Now,
    ) -> ObserveOutcome {
        let downstream = if observation.limit_kind().is_some() {
            self.downstream_of(agent)
        } else {
            Vec::new()
        };
        // A header naming another registered bucket is about that bucket.
        let target = observation
            .resource()
            .and_then(|n| self.resource_id(n))
            .unwrap_or(resource);
        if target != resource {
            if let (Some(g), Some(cell)) = (&grant, self.cell(resource)) {
                Self::lock(cell).settle_elsewhere(g);
            }
            return match self.cell(target) {
                Some(cell) => Self::lock(cell).observe(agent, None, observation, now, &downstream),
                None => ObserveOutcome::default(),
            };
        }
        match self.cell(resource) {
            Some(cell) => {
                Self::lock(cell).observe(agent, grant.as_ref(), observation, now, &downstream)
            }
            None => ObserveOutcome::default(),
        }
    }

    fn release(&self, grant: Grant, _now: Duration) {
        self.release_grant(&grant);
    }

    /// A release does not depend on the time: no clock read.
    #[inline]
    fn release_on(&self, grant: Grant, _clock: &dyn Clock) {
        self.release_grant(&grant);
    }

    fn block(&self, resource: ResourceId, delay: Duration, now: Duration) {
        if let Some(cell) = self.cell(resource) {
            let mut s = Self::lock(cell);
            let now = ns(now);
            let delay = delay.min(super::LONGEST_BLOCK);
            if s.block_until(now.saturating_add(ns(delay)), now) {
                s.note(Note::RetryAfterNoted { block: delay });
            }
        }
    }

    fn retry_slot(&self, agent: AgentId, resource: ResourceId, now: Duration) -> Option<Duration> {
        let cell = self.cell(resource)?;
        let mut s = Self::lock(cell);
        let n = ns(now);
        match s.decide(agent, &Request::read(), None, n, now) {
            Decision::Wait(w) => {
                s.queue.remove(w.ticket.id());
                let spacing = ns(s.cfg.retry_windows.release_spacing);
                let at = s.block.slot(ns(w.until), spacing, n);
                Some(time::dur(at.saturating_sub(n)))
            }
            Decision::Go(g) => {
                s.release(&g);
                None
            }
            Decision::Refuse(r) => Some(r.retry_after),
        }
    }

    fn snapshot(&self, resource: ResourceId, now: Duration) -> Option<Snapshot> {
        Some(Self::lock(self.cell(resource)?).snapshot(ns(now)))
    }
}
