//! The governed side: every agent goes through one [`Governor`] (DESIGN §5).

use super::scheduler::{CallInfo, Refusal, Scheduler};
use super::workload::Workload;
use super::Env;
use crate::request::{Kind, Priority, Response};
use resilience_core::governor::{
    self as gov, AgentId, Governor, GovernorError, Grant, Observation, ResourceConfig, ResourceId,
};
use std::collections::BTreeMap;
use std::time::Duration;

/// A [`Scheduler`] that asks a [`Governor`] before every attempt and reports every response
/// to it; retries wait for nothing but the governor (its shared block, G6, and its pacing).
#[derive(Debug)]
pub struct Governed {
    governor: Governor,
    resource: ResourceId,
    agents: BTreeMap<String, AgentId>,
    /// Attempts per call before giving up (a safety net; the governor should make it moot).
    pub max_attempts: u32,
}

impl Governed {
    /// A governor on the run's clock and sleeper, seeded by the run's seed, with GitHub's
    /// `core` resource under `config`, and every agent of `workload` registered.
    pub fn new(
        env: &Env,
        workload: &Workload,
        config: ResourceConfig,
    ) -> Result<Self, GovernorError> {
        let governor = Governor::builder()
            .clock(env.clock.clone())
            .sleeper(env.sleeper.clone())
            .seed(env.seed)
            .build()?;
        let resource = governor.add_resource("core", config)?;
        let mut agents = BTreeMap::new();
        for a in &workload.agents {
            agents.insert(
                a.name.clone(),
                governor.register(&a.name, governor_priority(a.priority))?,
            );
        }
        Ok(Self {
            governor,
            resource,
            agents,
            max_attempts: 20,
        })
    }

    /// With GitHub's defaults ([`ResourceConfig::github`]).
    pub fn github(env: &Env, workload: &Workload) -> Result<Self, GovernorError> {
        Self::new(env, workload, ResourceConfig::github())
    }

    /// The governor.
    pub fn governor(&self) -> &Governor {
        &self.governor
    }
}

/// The governor's priority for an agent's.
pub fn governor_priority(p: Priority) -> gov::Priority {
    match p {
        Priority::P0 => gov::Priority::P0,
        Priority::P1 => gov::Priority::P1,
        Priority::P2 => gov::Priority::P2,
    }
}

/// The governor's request for a call of `kind` (endpoint not set).
pub fn governor_request(kind: Kind) -> gov::Request<'static> {
    match kind {
        Kind::Read => gov::Request::read(),
        Kind::Write => gov::Request::write(),
        Kind::ContentCreating => gov::Request::create(),
    }
}

impl Scheduler for Governed {
    type Permit = Grant;

    async fn acquire(&self, call: CallInfo<'_>) -> Result<Grant, Refusal> {
        let Some(&agent) = self.agents.get(call.agent) else {
            return Err(Refusal::GiveUp);
        };
        let endpoint = super::template(call.path);
        let req = governor_request(call.kind).with_endpoint(&endpoint);
        match self.governor.acquire(agent, self.resource, req).await {
            Ok(permit) => permit
                .into_grant()
                .ok_or(Refusal::Later(Duration::from_millis(1))),
            Err(e) => Err(Refusal::Later(
                e.retry_after()
                    .unwrap_or(Duration::from_secs(1))
                    .max(Duration::from_millis(1)),
            )),
        }
    }

    fn complete(&self, grant: Grant, _call: CallInfo<'_>, response: &Response) {
        let obs = Observation::from_headers(
            response.status,
            response.headers.iter().map(|(k, v)| (k, v)),
        )
        .with_body(&response.body);
        let _ = self.governor.observe(grant, &obs);
    }

    fn retry_delay(
        &self,
        _call: CallInfo<'_>,
        attempt: u32,
        _response: &Response,
    ) -> Option<Duration> {
        // The governor has seen the rejection; the next acquire waits as long as it says.
        (attempt < self.max_attempts).then_some(Duration::ZERO)
    }
}
