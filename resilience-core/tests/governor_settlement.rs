//! Settling grants at the edges: after a lease sweep (G5), across a window roll (G1), in
//! another bucket (G8), and release slots past the remembered ones (G6). Each test failed
//! before its fix (found by a review of the accounting fixes).

mod governor_support;

use governor_support::*;
use resilience_core::governor::{Observation, Priority, Request};

fn remaining(rig: &Rig) -> u64 {
    rig.gov.snapshot(rig.core).unwrap().remaining
}

/// A reading whose reset is the given epoch second (e.g. one already past).
fn reading_at(remaining: u64, limit: u64, reset_epoch: u64, bucket: &str) -> Observation {
    Observation::from_headers(
        200,
        [
            ("x-ratelimit-limit", limit.to_string()),
            ("x-ratelimit-remaining", remaining.to_string()),
            ("x-ratelimit-reset", reset_epoch.to_string()),
            ("x-ratelimit-resource", bucket.to_string()),
        ],
    )
}

/// The lease sweep settled a silent agent's calls; the agent comes back and takes a new
/// grant; the old grant is released late. It must not settle the new grant in its place
/// (which refunded the new call's cost: overspend by one).
#[test]
fn g5_a_late_release_from_an_expired_lease_does_not_settle_a_newer_grant() {
    let rig = Rig::new(small(10, secs(3600)));
    let a = rig.agent("data", Priority::P0);
    let b = rig.agent("seven", Priority::P0);
    rig.call(a, &rig.ok(10, 10, 3000));
    let g1 = go(rig.decide(a, &Request::read()));
    rig.advance(secs(130));
    rig.gov.heartbeat(b);
    let _ = rig.gov.snapshot(rig.core); // sweep: a is presumed dead, g1 counted as spent
    assert_eq!(remaining(&rig), 9);
    let g2 = go(rig.decide(a, &Request::read())); // a is back
    assert_eq!(remaining(&rig), 8);
    rig.gov.release(g1); // late: "not made" (the sweep already counted it)
    rig.made(g2);
    assert!(
        remaining(&rig) <= 8,
        "g1 presumed spent and g2 made, yet remaining = {}",
        remaining(&rig)
    );
}

/// The same with different costs left the cost in flight stuck above zero with nothing in
/// flight, and every later window started short by it.
#[test]
fn g5_a_late_observe_from_an_expired_lease_leaves_no_cost_stuck_in_flight() {
    let rig = Rig::new(small(10, secs(3600)));
    let a = rig.agent("data", Priority::P0);
    let b = rig.agent("seven", Priority::P0);
    rig.call(a, &rig.ok(10, 10, 600));
    let g1 = go(rig.decide(a, &Request::read())); // cost 1
    rig.advance(secs(130));
    rig.gov.heartbeat(b);
    let _ = rig.gov.snapshot(rig.core); // sweep
    let g2 = go(rig.decide(a, &Request::read().with_cost(5)));
    let _ = rig.gov.observe(g1, &rig.ok(9, 10, 470));
    let _ = rig.gov.observe(g2, &rig.ok(4, 10, 470));
    let snap = rig.gov.snapshot(rig.core).unwrap();
    assert_eq!(snap.in_flight, 0);
    eprintln!("before roll: remaining {} (server 4)", snap.remaining);
    // Next window: nothing in flight, so the full quota.
    rig.advance(secs(480));
    assert_eq!(
        remaining(&rig),
        10,
        "the stuck in-flight cost survives the roll"
    );
}

/// Calls in flight when the window rolls, answered after it with the old window's reading,
/// were counted in the old window: they must not lower the new window's estimate.
#[test]
fn g1_old_window_answers_after_a_roll_do_not_lower_the_new_window() {
    // Calls in flight for 101 s: longer than the default call bound (30 s), past which they
    // would be settled unanswered; here they are answered, late.
    let mut gc = resilience_core::governor::GovernorConfig::default();
    gc.leases.call_bound = secs(3600);
    let rig = Rig::with_governor_config(small(10, secs(3600)), gc);
    let a = rig.agent("data", Priority::P0);
    rig.call(a, &rig.ok(10, 10, 100));
    let old_reset = rig.reset_epoch(100);
    let late: Vec<_> = (0..3)
        .map(|_| go(rig.decide(a, &Request::read())))
        .collect();
    rig.advance(secs(101)); // the window resets with 3 calls in flight
    assert_eq!(remaining(&rig), 7);
    for (i, g) in late.into_iter().enumerate() {
        let _ = rig
            .gov
            .observe(g, &reading_at(9 - i as u64, 10, old_reset, "core"));
    }
    // The server's new window has counted one call (this one).
    rig.call(a, &rig.ok(9, 10, 3599));
    assert_eq!(
        remaining(&rig),
        9,
        "new window under-estimated by the old calls"
    );
}

/// A response counted in another bucket gives back this bucket's quota, but the call was
/// made: it keeps its place in the pacing windows ("1 create per minute" holds).
#[test]
fn g8_a_call_counted_in_another_bucket_keeps_its_pacing_window_slot() {
    let cfg = one_create_per(secs(60));
    let rig = Rig::new(cfg);
    rig.gov.add_resource("search", light_only()).unwrap();
    let a = rig.agent("data", Priority::P1);
    let g = go(rig.decide(a, &Request::create()));
    let _ = rig
        .gov
        .observe(g, &reading_at(29, 30, rig.reset_epoch(60), "search"));
    let d = rig.decide(a, &Request::create());
    assert!(!d.is_go(), "second create within the minute: {d:?}");
}

/// Past the slots remembered, linked retry callers still get distinct, spaced times (they
/// all got one instant).
#[test]
fn g6_retry_slots_past_those_remembered_stay_spaced() {
    let mut cfg = light_only();
    cfg.retry_windows.release_spacing = ms(1);
    cfg.retry_windows.windows = [(secs(0), secs(3600)); 3];
    let rig = Rig::new(cfg);
    let a = rig.agent("data", Priority::P1);
    rig.gov.note_retry_after(rig.core, secs(10));
    let mut last = Vec::new();
    for _ in 0..4100 {
        last.push(rig.gov.retry_slot(a, rig.core).expect("blocked"));
    }
    let tail = &last[4096..];
    assert!(
        tail.windows(2).all(|w| w[0].abs_diff(w[1]) >= ms(1)),
        "callers past those remembered share a slot: {tail:?}"
    );
}
