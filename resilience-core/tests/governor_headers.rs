//! Response headers: GitHub's `x-ratelimit-*`, `retry-after` in both forms, the IETF
//! fields; malformed values are ignored with a debug event and never panic; the 403 rules.

mod governor_support;
#[path = "support/thread_subscriber.rs"]
mod thread_subscriber;

use governor_support::*;
use proptest::prelude::*;
use resilience_core::governor::{LimitKind, Observation, Priority, Request};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// Counts debug events that name a given header.
struct Counter {
    header: &'static str,
    hits: Arc<AtomicUsize>,
}

struct Finder<'a>(&'a str, bool);
impl Visit for Finder<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "header" && format!("{value:?}").contains(self.0) {
            self.1 = true;
        }
    }
}

impl Subscriber for Counter {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, e: &Event<'_>) {
        let mut f = Finder(self.header, false);
        e.record(&mut f);
        if f.1 && *e.metadata().level() == Level::DEBUG {
            self.hits.fetch_add(1, Ordering::SeqCst);
        }
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

#[test]
fn a_malformed_header_is_ignored_with_a_debug_event_naming_it() {
    let hits = Arc::new(AtomicUsize::new(0));
    let sub = Counter {
        header: "x-ratelimit-remaining",
        hits: hits.clone(),
    };
    let obs = thread_subscriber::with_thread_subscriber(sub, || {
        Observation::from_headers(200, [("x-ratelimit-remaining", "lots")])
    });
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    assert_eq!((obs.remaining(), obs.ignored_headers()), (None, 1));
}

#[test]
fn malformed_headers_leave_the_governor_state_alone() {
    let rig = Rig::new(light_only());
    let a = rig.agent("data", Priority::P1);
    rig.gov
        .observe_without_grant(a, rig.core, &rig.ok(3000, 5000, 3600));
    let before = rig.gov.snapshot(rig.core).unwrap();
    let junk = Observation::from_headers(
        200,
        [
            ("x-ratelimit-limit", "-1"),
            ("x-ratelimit-remaining", "NaN"),
            ("x-ratelimit-reset", "tomorrow"),
            ("retry-after", "Fri, 31 Feb 2026 25:00:00 GMT"),
            ("ratelimit", "r=;t=;;"),
            ("ratelimit-policy", "\"unterminated;q=5"),
        ],
    );
    rig.gov.observe_without_grant(a, rig.core, &junk);
    assert_eq!(rig.gov.snapshot(rig.core).unwrap(), before);
}

#[test]
fn a_plain_403_is_not_a_rate_limit_and_blocks_nobody() {
    let rig = Rig::new(light_only());
    let a = rig.agent("data", Priority::P1);
    let g = go(rig.decide(a, &Request::read()));
    let out = rig.gov.observe(
        g,
        &Observation::new(403)
            .with_remaining(4000)
            .with_body(r#"{"message":"Resource not accessible by integration"}"#),
    );
    assert_eq!((out.limited, out.blocked_until), (None, None));
    assert!(rig.decide(a, &Request::read()).is_go());
}

#[test]
fn a_403_with_rate_limit_evidence_is_one() {
    for (obs, kind) in [
        (Observation::new(403).with_remaining(0), LimitKind::Primary),
        (
            Observation::new(403).with_header("retry-after", "30"),
            LimitKind::Secondary,
        ),
        (
            Observation::new(403)
                .with_body("You have been temporarily blocked from content creation."),
            LimitKind::Secondary,
        ),
        (
            Observation::new(403).with_body("API rate limit exceeded for user ID 1."),
            LimitKind::Primary,
        ),
    ] {
        assert_eq!(obs.limit_kind(), Some(kind), "{obs:?}");
    }
}

#[test]
fn ietf_headers_drive_the_quota_like_github_ones() {
    let rig = Rig::new(light_only());
    let a = rig.agent("data", Priority::P1);
    let obs = Observation::from_headers(
        200,
        [
            ("RateLimit-Policy", r#""hour";q=1000;w=3600"#),
            ("RateLimit", r#""hour";r=120;t=600"#),
        ],
    );
    rig.gov.observe_without_grant(a, rig.core, &obs);
    let s = rig.gov.snapshot(rig.core).unwrap();
    assert_eq!((s.limit, s.remaining), (1000, 120));
    assert_eq!(s.reset_in, Some(secs(600)));
}

fn header_name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("x-ratelimit-limit".to_string()),
        Just("X-RateLimit-Remaining".to_string()),
        Just("x-ratelimit-used".to_string()),
        Just("x-ratelimit-reset".to_string()),
        Just("x-ratelimit-resource".to_string()),
        Just("Retry-After".to_string()),
        Just("RateLimit".to_string()),
        Just("RateLimit-Policy".to_string()),
        Just("ratelimit-remaining".to_string()),
        ".{0,20}",
    ]
}

proptest! {
    #[test]
    fn arbitrary_header_strings_never_panic(
        status in 100u16..600,
        headers in prop::collection::vec((header_name(), ".{0,80}"), 0..8),
        body in ".{0,200}",
    ) {
        let obs = Observation::from_headers(status, headers.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .with_body(&body);
        let _ = (obs.limit_kind(), obs.limit(), obs.remaining(), obs.reset(), obs.retry_after());
        // The governor digests it too.
        let rig = Rig::new(light_only());
        let a = rig.agent("data", Priority::P1);
        let g = go(rig.decide(a, &Request::read()));
        let _ = rig.gov.observe(g, &obs);
        let _ = rig.gov.snapshot(rig.core);
    }

    #[test]
    fn arbitrary_header_bytes_never_panic(
        headers in prop::collection::vec((header_name(), prop::collection::vec(any::<u8>(), 0..40)), 0..8),
    ) {
        let obs = Observation::from_headers(429, headers.iter().map(|(k, v)| (k.as_str(), v.as_slice())));
        prop_assert!(obs.limit_kind().is_some());
    }

    #[test]
    fn structured_looking_values_never_panic(
        v in r#"("?[a-z]{0,4}"?(;[a-z]{1,3}=[-0-9a-z"]{0,6}){0,4},? ?){0,4}"#,
    ) {
        for name in ["RateLimit", "RateLimit-Policy", "x-ratelimit-reset", "retry-after"] {
            let _ = Observation::new(200).with_header(name, &v).limit();
        }
    }
}
