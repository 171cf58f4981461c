//! The in-process store logs only once the resource's lock is released (memory/notes.rs), as
//! the breaker does (B8): a `tracing` subscriber that calls the governor itself, as an agent
//! shipping its alerts through a governed call would, must not find the resource locked by
//! its own thread and hang. Seen with a per-thread subscriber that reads a snapshot of the
//! resource (which takes its lock) from inside every governor event.

mod governor_support;

use governor_support::*;
use resilience_core::governor::{Observation, Priority, Request, EVENT_TARGET};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;
use tracing::{span, Event, Metadata, Subscriber};

/// Every governor event's message, with the zone a snapshot taken from inside it read.
#[derive(Default)]
struct Seen(Mutex<Vec<(String, String)>>);

struct CallsBack {
    rig: Arc<Rig>,
    seen: Arc<Seen>,
}

impl Subscriber for CallsBack {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &span::Attributes<'_>) -> span::Id {
        span::Id::from_u64(1)
    }
    fn record(&self, _: &span::Id, _: &span::Record<'_>) {}
    fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}
    fn event(&self, event: &Event<'_>) {
        if event.metadata().target() != EVENT_TARGET {
            return;
        }
        let message = message_of(event);
        // Takes the resource's lock: this hung while the store logged under it.
        let zone = self
            .rig
            .gov
            .snapshot(self.rig.core)
            .map(|s| format!("{:?}", s.zone))
            .unwrap_or_default();
        self.seen.0.lock().unwrap().push((message, zone));
    }
    fn enter(&self, _: &span::Id) {}
    fn exit(&self, _: &span::Id) {}
}

/// Runs `scenario` on its own thread under the calling-back subscriber; panics if it does not
/// return within 60 s (far above the microseconds it takes).
fn under_calling_back_subscriber(
    rig: Rig,
    scenario: impl FnOnce(&Rig) + Send + 'static,
) -> Vec<(String, String)> {
    let rig = Arc::new(rig);
    let seen = Arc::new(Seen::default());
    let subscriber = CallsBack {
        rig: rig.clone(),
        seen: seen.clone(),
    };
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        tracing::subscriber::with_default(subscriber, || scenario(&rig));
        let _ = tx.send(());
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("the governor's call hung: it logged with the resource locked");
    let seen = seen.0.lock().unwrap().clone();
    seen
}

/// G1: a zone change is noted on the fast path (a grant that crosses a threshold).
#[test]
fn g1_a_subscriber_may_call_the_governor_from_a_zone_change_event() {
    let mut cfg = light_only();
    cfg.quota.limit = 10;
    let rig = Rig::new(cfg);
    let a = rig.agent("picard", Priority::P0);
    let seen = under_calling_back_subscriber(rig, move |rig| {
        for _ in 0..10 {
            let _ = go(rig.decide(a, &Request::read()));
        }
    });
    let light = "governor: traffic light changed (G1)";
    assert_eq!(
        seen,
        [
            (light.to_string(), "Amber".to_string()),
            (light.to_string(), "Red".to_string())
        ],
        "each change logged once, and the snapshot taken inside it saw the change"
    );
}

/// G6: a rate limit (observe) and a Retry-After told to the store (block) both log.
#[test]
fn g6_a_subscriber_may_call_the_governor_from_a_rate_limit_event() {
    let rig = Rig::new(fixed_release());
    let a = rig.agent("data", Priority::P1);
    let core = rig.core;
    let seen = under_calling_back_subscriber(rig, move |rig| {
        let limited = Observation::from_headers(429, [("retry-after", "30")]);
        rig.call(a, &limited);
        rig.gov.note_retry_after(core, secs(90));
    });
    let messages: Vec<&str> = seen.iter().map(|(m, _)| m.as_str()).collect();
    assert!(
        messages.contains(
            &"governor: rate limited; every agent waits, then is released by priority (G6)"
        ),
        "{messages:?}"
    );
    assert!(
        messages.contains(
            &"governor: retry-after noted; every agent waits, then is released by priority (G6)"
        ),
        "{messages:?}"
    );
}
