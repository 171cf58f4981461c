//! Shared test helpers: an env map and a `tracing` capture.
#![allow(dead_code)]

#[path = "../../../resilience-core/tests/support/thread_subscriber.rs"]
mod thread_subscriber;

use resilience_config::Config;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// The default overrides variable.
pub const OVERRIDES: &str = "CLEVERAGENTS_RETRY_SERVICE_OVERRIDES";

/// The seed's per-service override example, verbatim.
pub const SEED_EXAMPLE: &str = r#"{
  "plan_service": {
    "retry": {"max_attempts": 5, "base_delay": 2.0},
    "circuit_breaker": {"failure_threshold": 3}
  },
  "vector_store_service": {
    "retry": {"max_attempts": 7, "backoff_strategy": "jitter"}
  }
}"#;

/// A map environment from pairs.
pub fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// Loads `pairs` as the environment.
pub fn config(pairs: &[(&str, &str)]) -> Config {
    Config::from_source(&env(pairs))
}

/// Loads only the overrides variable.
pub fn with_overrides(json: &str) -> Config {
    config(&[(OVERRIDES, json)])
}

/// One captured event: level and every field rendered as text (`message` included).
#[derive(Debug, Clone)]
pub struct Captured {
    pub level: Level,
    pub fields: BTreeMap<String, String>,
}

impl Captured {
    pub fn text(&self) -> String {
        self.fields
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

#[derive(Default, Clone)]
struct Capture(Arc<Mutex<Vec<Captured>>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        let level = *event.metadata().level();
        if let Ok(mut v) = self.0.lock() {
            v.push(Captured { level, fields });
        }
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// Runs `f` with a subscriber that records every event on this thread.
pub fn capture<T>(f: impl FnOnce() -> T) -> (T, Vec<Captured>) {
    let cap = Capture::default();
    let out = thread_subscriber::with_thread_subscriber(cap.clone(), f);
    let events = cap.0.lock().map(|v| v.clone()).unwrap_or_default();
    (out, events)
}

/// Only the warnings.
pub fn warnings(events: &[Captured]) -> Vec<&Captured> {
    events.iter().filter(|e| e.level == Level::WARN).collect()
}
