//! Shared test support: a test error type, a guard on manual time, and an event recorder.
#![allow(dead_code)]

pub mod retry_after;
pub mod thread_subscriber;

use resilience_core::clock::ManualClock;
use resilience_core::retry::{RetryPolicy, ServiceGuard};
use resilience_core::sleep::ManualSleeper;
use resilience_core::ResilienceError;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// An operation error that can also carry the framework's refusals.
#[derive(Debug, Clone, PartialEq)]
pub enum TestError {
    Op(String),
    Framework(ResilienceError),
}

impl From<ResilienceError> for TestError {
    fn from(e: ResilienceError) -> Self {
        TestError::Framework(e)
    }
}

impl fmt::Display for TestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TestError::Op(m) => f.write_str(m),
            TestError::Framework(e) => write!(f, "{e}"),
        }
    }
}

pub fn op_err(msg: &str) -> TestError {
    TestError::Op(msg.to_owned())
}

/// A guard on manual time with a seeded jitter source.
pub struct Harness {
    pub clock: ManualClock,
    pub sleeper: ManualSleeper,
    pub guard: ServiceGuard,
}

pub fn harness(policy: RetryPolicy) -> Harness {
    harness_with(policy, |b| b)
}

pub fn harness_with(
    policy: RetryPolicy,
    tweak: impl FnOnce(
        resilience_core::retry::ServiceGuardBuilder,
    ) -> resilience_core::retry::ServiceGuardBuilder,
) -> Harness {
    let clock = ManualClock::new();
    let sleeper = ManualSleeper::new(clock.clone());
    let builder = ServiceGuard::builder("test_service")
        .policy(policy)
        .clock(Arc::new(clock.clone()))
        .sleeper(Arc::new(sleeper.clone()))
        .async_sleeper(Arc::new(sleeper.clone()))
        .jitter_seed(42);
    let guard = tweak(builder).build();
    Harness {
        clock,
        sleeper,
        guard,
    }
}

pub fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

/// One recorded `tracing` event: its target and fields rendered as strings.
#[derive(Debug, Clone)]
pub struct Event {
    pub target: String,
    pub fields: BTreeMap<String, String>,
}

/// A minimal subscriber recording every event (no spans needed here).
#[derive(Clone, Default)]
pub struct Recorder {
    pub events: Arc<Mutex<Vec<Event>>>,
}

impl Recorder {
    pub fn events(&self) -> Vec<Event> {
        self.events.lock().unwrap().clone()
    }
}

struct Visitor<'a>(&'a mut BTreeMap<String, String>);

impl tracing::field::Visit for Visitor<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl tracing::Subscriber for Recorder {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Visitor(&mut fields));
        self.events.lock().unwrap().push(Event {
            target: event.metadata().target().to_owned(),
            fields,
        });
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

pub trait NowSecs {
    fn now_secs(&self) -> f64;
}

impl NowSecs for ManualClock {
    fn now_secs(&self) -> f64 {
        use resilience_core::clock::Clock;
        self.now().as_secs_f64()
    }
}
