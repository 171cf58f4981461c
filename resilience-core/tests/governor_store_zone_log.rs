//! G1: the store logs each change of the traffic light once, when it happens (memory/state.rs
//! `note_zone`), and not on every grant in the same zone. Seen through a per-thread `tracing`
//! subscriber.

mod governor_support;
#[path = "support/thread_subscriber.rs"]
mod thread_subscriber;

use governor_support::*;
use resilience_core::governor::{Priority, Request};
use std::sync::{Arc, Mutex};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// Records the `zone` and `remaining` fields of every "traffic light changed" event.
struct LightChanges(Arc<Mutex<Vec<(String, String)>>>);

#[derive(Default)]
struct Fields {
    message: String,
    zone: String,
    remaining: String,
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let v = format!("{value:?}");
        match field.name() {
            "message" => self.message = v,
            "zone" => self.zone = v,
            "remaining" => self.remaining = v,
            _ => {}
        }
    }
}

impl Subscriber for LightChanges {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, e: &Event<'_>) {
        let mut f = Fields::default();
        e.record(&mut f);
        if f.message.contains("traffic light changed") {
            self.0.lock().unwrap().push((f.zone, f.remaining));
        }
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// G1: ten grants of an assumed quota of 10 (green from 4 left, red below 2) change the light
/// twice: to amber when 3 are left, to red when 1 is left; the other eight grants log
/// nothing.
#[test]
fn g1_each_change_of_the_light_is_logged_once() {
    let mut cfg = light_only();
    cfg.quota.limit = 10;
    let rig = Rig::new(cfg);
    let a = rig.agent("picard", Priority::P0); // never slowed by the light
    let seen = Arc::new(Mutex::new(Vec::new()));
    thread_subscriber::with_thread_subscriber(LightChanges(seen.clone()), || {
        for _ in 0..10 {
            let _ = go(rig.decide(a, &Request::read()));
        }
    });
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        [
            ("Amber".to_string(), "3".to_string()),
            ("Red".to_string(), "1".to_string())
        ]
    );
}
