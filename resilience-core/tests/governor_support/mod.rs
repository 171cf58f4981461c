//! Shared helpers for the governor tests: a governor on a `ManualClock`, observations, and
//! decision unpacking.
#![allow(dead_code)]

use resilience_core::clock::{Clock, ManualClock};
use resilience_core::governor::{
    AgentId, Decision, Governor, Grant, Observation, Priority, Refusal, ResourceConfig, ResourceId,
    Wait,
};
use std::time::Duration;

pub const S: Duration = Duration::from_secs(1);

pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

pub fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

pub struct Rig {
    pub clock: ManualClock,
    pub gov: Governor,
    pub core: ResourceId,
}

impl Rig {
    pub fn new(cfg: ResourceConfig) -> Self {
        let clock = ManualClock::new();
        let gov = Governor::builder()
            .clock(clock.clone())
            .seed(7)
            .build()
            .expect("valid governor");
        let core = gov.add_resource("core", cfg).expect("valid resource");
        Self { clock, gov, core }
    }

    pub fn agent(&self, name: &str, p: Priority) -> AgentId {
        self.gov.register(name, p).expect("registered")
    }

    pub fn now(&self) -> Duration {
        self.clock.now()
    }

    pub fn advance(&self, d: Duration) {
        self.clock.advance(d);
    }

    pub fn advance_to(&self, t: Duration) {
        self.clock.advance_to(t);
    }

    pub fn decide(&self, a: AgentId, req: &resilience_core::governor::Request<'_>) -> Decision {
        self.gov.decide(a, self.core, req)
    }

    /// Epoch seconds of `in_secs` from now (for `x-ratelimit-reset`).
    pub fn reset_epoch(&self, in_secs: u64) -> u64 {
        self.clock.unix_time().as_secs() + in_secs
    }

    /// A 200 with GitHub headers: `remaining` of `limit`, reset in `reset_in` seconds.
    pub fn ok(&self, remaining: u64, limit: u64, reset_in: u64) -> Observation {
        Observation::from_headers(
            200,
            [
                ("x-ratelimit-limit", limit.to_string()),
                ("x-ratelimit-remaining", remaining.to_string()),
                ("x-ratelimit-reset", self.reset_epoch(reset_in).to_string()),
                ("x-ratelimit-resource", "core".to_string()),
            ],
        )
    }

    /// Grants a read to `a` now and reports `obs` for it.
    pub fn call(&self, a: AgentId, obs: &Observation) {
        let g = go(self.decide(a, &resilience_core::governor::Request::read()));
        let _ = self.gov.observe(g, obs);
    }
}

#[track_caller]
pub fn go(d: Decision) -> Grant {
    match d {
        Decision::Go(g) => g,
        other => panic!("expected Go, got {other:?}"),
    }
}

#[track_caller]
pub fn wait(d: Decision) -> Wait {
    match d {
        Decision::Wait(w) => w,
        other => panic!("expected Wait, got {other:?}"),
    }
}

#[track_caller]
pub fn refused(d: Decision) -> Refusal {
    match d {
        Decision::Refuse(r) => r,
        other => panic!("expected Refuse, got {other:?}"),
    }
}

/// Only G1 active: no pool reservations, no predictive breaker, no pacing rules.
pub fn light_only() -> ResourceConfig {
    let mut c = ResourceConfig::default();
    c.token_pool.reservation = [0.0; 3];
    c.token_pool.p2_yield_below = 0.0;
    c.predictive.min_samples = u32::MAX;
    c.pacing.even_spend = false;
    c
}
