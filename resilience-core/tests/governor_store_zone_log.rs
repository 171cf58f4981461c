//! G1: the store logs each change of the traffic light once, when it happens (memory/state.rs
//! `note_zone`), and not on every grant in the same zone. Seen through a per-thread `tracing`
//! subscriber.

#[path = "breaker_support/capture.rs"]
mod capture;
mod governor_support;
#[path = "support/thread_subscriber.rs"]
mod thread_subscriber;

use capture::Capture;
use governor_support::*;
use resilience_core::governor::{Priority, Request};

/// G1: ten grants of an assumed quota of 10 (green from 4 left, red below 2) change the light
/// twice: to amber when 3 are left, to red when 1 is left; the other eight grants log
/// nothing.
#[test]
fn g1_each_change_of_the_light_is_logged_once() {
    let mut cfg = light_only();
    cfg.quota.limit = 10;
    let rig = Rig::new(cfg);
    let a = rig.agent("picard", Priority::P0); // never slowed by the light
    let capture = Capture::new();
    capture.run(|| {
        for _ in 0..10 {
            let _ = go(rig.decide(a, &Request::read()));
        }
    });
    let seen: Vec<_> = capture
        .with_message("governor: traffic light changed (G1)")
        .iter()
        .map(|e| {
            let field = |name| e.field(name).unwrap_or_default().to_string();
            (field("zone"), field("remaining"))
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("Amber".to_string(), "3".to_string()),
            ("Red".to_string(), "1".to_string())
        ]
    );
}
