//! A `tracing` subscriber that panics while the in-process store emits its log lines
//! (memory/notes.rs) loses none of the other lines of that unlock: they go back to the
//! thread's buffer and are emitted, oldest first, by its next unlock that noted something.

mod governor_support;

use governor_support::*;
use resilience_core::governor::{Observation, Priority, Request, EVENT_TARGET};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tracing::{span, Event, Metadata, Subscriber};

/// Records every governor event's message; panics on the first one while `armed`.
#[derive(Default)]
struct PanicsOnce {
    armed: AtomicBool,
    seen: Mutex<Vec<String>>,
}

impl Subscriber for Shared {
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
        if self.0.armed.swap(false, Ordering::SeqCst) {
            panic!("subscriber panics on: {}", message);
        }
        self.0.seen.lock().unwrap().push(message);
    }
    fn enter(&self, _: &span::Id) {}
    fn exit(&self, _: &span::Id) {}
}

#[derive(Clone)]
struct Shared(Arc<PanicsOnce>);

const LIGHT: &str = "governor: traffic light changed (G1)";
const LIMITED: &str =
    "governor: rate limited; every agent waits, then is released by priority (G6)";
const OPENED: &str = "governor: breaker opened on a rate limit (G3)";
const REFUSED: &str = "governor: refused";

/// One 429 notes three lines under one lock; the subscriber panics on the first.
#[test]
fn g6_lines_after_a_panicking_subscribers_line_are_emitted_by_the_next_unlock() {
    let rig = Rig::new(breaker_only());
    let a = rig.agent("data", Priority::P1);
    let sub = Shared(Arc::default());
    let probe = sub.0.clone();
    let seen = || std::mem::take(&mut *probe.seen.lock().unwrap());
    tracing::subscriber::with_default(sub, || {
        let limited =
            Observation::from_headers(429, [("retry-after", "30"), ("x-ratelimit-remaining", "0")]);
        rig.call(a, &limited);
        assert_eq!(seen(), [LIGHT, LIMITED, OPENED], "what one 429 notes here");

        let rig = Rig::new(breaker_only());
        let a = rig.agent("data", Priority::P1);
        probe.armed.store(true, Ordering::SeqCst);
        let panicked = catch_unwind(AssertUnwindSafe(|| rig.call(a, &limited)));
        let payload = panicked.expect_err("the subscriber's panic reaches the caller");
        assert_eq!(
            payload.downcast_ref::<String>().map(String::as_str),
            Some(&*format!("subscriber panics on: {LIGHT}"))
        );
        assert!(seen().is_empty(), "nothing emitted after the panic yet");

        // The next unlock that noted something emits the two kept lines first.
        let _ = refused(rig.decide(a, &Request::read()));
        assert_eq!(seen(), [LIMITED, OPENED, REFUSED]);
    });
}
