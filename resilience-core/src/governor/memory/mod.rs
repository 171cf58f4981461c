//! The in-process [`GovernorStore`]. PLACEHOLDER: grants everything; the real state machine
//! lands in this folder with the same API.

use super::config::{GovernorConfig, ResourceConfig};
use super::decision::{AgentId, Decision, Grant, ResourceId, Ticket};
use super::observation::Observation;
use super::priority::Priority;
use super::request::Request;
use super::store::{GovernorError, GovernorStore, Now, ObserveOutcome, Snapshot, Zone};
use parking_lot::Mutex;
use std::sync::Arc;
use std::time::Duration;

/// The default store: all state in this process, one short lock per resource.
#[derive(Debug)]
pub struct InProcessStore {
    #[allow(dead_code)]
    config: GovernorConfig,
    resources: Mutex<Vec<(Arc<str>, ResourceConfig)>>,
    agents: Mutex<Vec<(Arc<str>, Priority)>>,
}

impl InProcessStore {
    /// A store with these settings.
    pub fn new(config: GovernorConfig) -> Self {
        Self {
            config,
            resources: Mutex::default(),
            agents: Mutex::default(),
        }
    }
}

impl GovernorStore for InProcessStore {
    fn add_resource(
        &self,
        name: &str,
        config: ResourceConfig,
    ) -> Result<ResourceId, GovernorError> {
        config.validate()?;
        let mut r = self.resources.lock();
        if r.iter().any(|(n, _)| &**n == name) {
            return Err(GovernorError::DuplicateResource(name.into()));
        }
        r.push((name.into(), config));
        Ok(ResourceId((r.len() - 1) as u32))
    }
    fn resource_id(&self, name: &str) -> Option<ResourceId> {
        let r = self.resources.lock();
        r.iter()
            .position(|(n, _)| &**n == name)
            .map(|i| ResourceId(i as u32))
    }
    fn register(
        &self,
        name: &str,
        priority: Priority,
        _now: Duration,
    ) -> Result<AgentId, GovernorError> {
        let mut a = self.agents.lock();
        if let Some(i) = a.iter().position(|(n, _)| &**n == name) {
            return Ok(AgentId(i as u32));
        }
        a.push((name.into(), priority));
        Ok(AgentId((a.len() - 1) as u32))
    }
    fn agent(&self, agent: AgentId) -> Option<(Arc<str>, Priority)> {
        self.agents.lock().get(agent.0 as usize).cloned()
    }
    fn add_dependency(
        &self,
        _upstream: AgentId,
        _downstream: AgentId,
    ) -> Result<(), GovernorError> {
        Ok(())
    }
    fn heartbeat(&self, _agent: AgentId, _now: Duration) {}
    fn decide(
        &self,
        agent: AgentId,
        resource: ResourceId,
        request: &Request<'_>,
        _ticket: Option<&Ticket>,
        now: Duration,
    ) -> Decision {
        let p = self.agent(agent).map_or(Priority::P2, |a| a.1);
        Decision::Go(Grant::new(resource, agent, p, request.cost(), 0, now))
    }
    fn cancel(&self, _ticket: &Ticket, _now: Duration) {}
    fn observe(
        &self,
        _agent: AgentId,
        _resource: ResourceId,
        _grant: Option<Grant>,
        observation: &Observation,
        _now: Now,
    ) -> ObserveOutcome {
        ObserveOutcome {
            limited: observation.limit_kind(),
            ..ObserveOutcome::default()
        }
    }
    fn release(&self, _grant: Grant, _now: Duration) {}
    fn block(&self, _resource: ResourceId, _delay: Duration, _now: Duration) {}
    fn snapshot(&self, resource: ResourceId, _now: Duration) -> Option<Snapshot> {
        let r = self.resources.lock();
        let (name, cfg) = r.get(resource.0 as usize)?;
        Some(Snapshot {
            name: name.clone(),
            limit: cfg.quota.limit,
            remaining: cfg.quota.limit,
            reset_in: None,
            zone: Zone::Green,
            blocked_for: None,
            breaker_open: false,
            sequential: false,
            in_flight: 0,
            waiters: 0,
            pool_free: cfg.quota.limit,
            pool_size: cfg.quota.limit,
            live_agents: 0,
        })
    }
}
