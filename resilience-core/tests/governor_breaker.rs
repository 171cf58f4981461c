//! G3 predictive breaker: throttles before the 429 when the consumption rate projects
//! exhaustion before reset within the horizon; closes after 3 good observations.

mod governor_support;

use governor_support::*;
use resilience_core::governor::{
    Observation, Priority, RefusalKind, RefusalReason, Request, ResourceConfig, WaitReason,
};
use std::time::Duration;

/// Readings of 2500, 2400, 2300 of 5000 one second apart: 100/s, 23 s of quota left.
fn burn(rig: &Rig, a: resilience_core::governor::AgentId) -> bool {
    let mut open = false;
    for r in [2500, 2400, 2300] {
        open = rig
            .gov
            .observe_without_grant(a, rig.core, &reading(rig, r))
            .breaker_open;
        rig.advance(S);
    }
    open
}

#[test]
fn g3_opens_before_the_429_when_exhaustion_is_projected_within_30s() {
    let rig = Rig::new(breaker_only());
    let a = rig.agent("data", Priority::P1);
    assert!(burn(&rig, a));
    let s = rig.gov.snapshot(rig.core).unwrap();
    assert!(s.breaker_open);
    assert_eq!(
        s.zone,
        resilience_core::governor::Zone::Green,
        "the light alone sees no trouble"
    );
}

#[test]
fn g3_a_slower_burn_does_not_open() {
    let rig = Rig::new(breaker_only());
    let a = rig.agent("data", Priority::P1);
    for r in [2500, 2450, 2400] {
        // 50/s: 48 s of quota left, beyond the 30 s horizon.
        assert!(
            !rig.gov
                .observe_without_grant(a, rig.core, &reading(&rig, r))
                .breaker_open
        );
        rig.advance(S);
    }
}

#[test]
fn g3_open_sheds_background_paces_standard_and_passes_critical() {
    let rig = Rig::new(breaker_only());
    let p0 = rig.agent("picard", Priority::P0);
    let p1 = rig.agent("data", Priority::P1);
    let p2 = rig.agent("ralph", Priority::P2);
    assert!(burn(&rig, p1));
    let r = refused(rig.decide(p2, &Request::read()));
    assert_eq!(
        (r.kind, r.reason),
        (RefusalKind::Shed, RefusalReason::Predictive)
    );
    assert_eq!(r.retry_after, secs(30));
    let g = go(rig.decide(p1, &Request::read()));
    rig.made(g);
    let w = wait(rig.decide(p1, &Request::read()));
    assert_eq!(w.reason, WaitReason::Predictive);
    // Spend what is left evenly until reset: (3600 - 3) s / 2299 per call.
    let reset_in = secs(3600) - secs(3);
    assert_eq!(
        w.delay,
        Duration::from_nanos(reset_in.as_nanos() as u64 / 2299)
    );
    rig.gov.cancel(&w.ticket);
    for _ in 0..10 {
        let g = go(rig.decide(p0, &Request::read()));
        rig.made(g);
    }
}

#[test]
fn g3_closes_after_three_good_observations() {
    let rig = Rig::new(breaker_only());
    let a = rig.agent("data", Priority::P1);
    let p2 = rig.agent("ralph", Priority::P2);
    assert!(burn(&rig, a));
    rig.advance(secs(20)); // the burst is out of the 10 s rate window
    let mut states = Vec::new();
    for r in [2290, 2289, 2288] {
        states.push(
            rig.gov
                .observe_without_grant(a, rig.core, &reading(&rig, r))
                .breaker_open,
        );
        rig.advance(S);
    }
    assert_eq!(states, [true, true, false]);
    assert!(rig.decide(p2, &Request::read()).is_go());
}

#[test]
fn g3_a_bad_observation_restarts_the_count() {
    let rig = Rig::new(breaker_only());
    let a = rig.agent("data", Priority::P1);
    assert!(burn(&rig, a));
    rig.advance(secs(20));
    for r in [2290, 2289] {
        rig.gov
            .observe_without_grant(a, rig.core, &reading(&rig, r));
        rig.advance(S);
    }
    // A fresh burst: 2289 -> 1800 in a second.
    assert!(
        rig.gov
            .observe_without_grant(a, rig.core, &reading(&rig, 1800))
            .breaker_open
    );
    rig.advance(S);
    assert!(
        rig.gov
            .observe_without_grant(a, rig.core, &reading(&rig, 1799))
            .breaker_open
    );
}

#[test]
fn g3_also_opens_on_a_rate_limit_and_the_horizon_is_configurable() {
    let rig = Rig::new(breaker_only());
    let a = rig.agent("data", Priority::P1);
    let g = go(rig.decide(a, &Request::read()));
    assert!(rig.gov.observe(g, &Observation::new(429)).breaker_open);

    let mut cfg = breaker_only();
    cfg.predictive.horizon = secs(10);
    let rig = Rig::new(cfg);
    let a = rig.agent("data", Priority::P1);
    assert!(!burn(&rig, a), "23 s left is outside a 10 s horizon");
}

/// Tripped by a 429, the breaker does not outlive the window: in a fresh window, with a full
/// quota and only background agents asking (nothing else would bring good readings), P2 is
/// served again.
#[test]
fn g3_a_new_quota_window_closes_the_breaker() {
    let mut cfg = ResourceConfig::default();
    cfg.quota.window = secs(600);
    let rig = Rig::new(cfg);
    let ralph = rig.agent("ralph", Priority::P2);
    rig.call(ralph, &rig.ok(4000, 5000, 600));
    rig.advance(S);
    let g = go(rig.decide(ralph, &Request::read()));
    let _ = rig
        .gov
        .observe(g, &Observation::new(429).with_header("retry-after", "1"));
    assert!(rig.gov.snapshot(rig.core).unwrap().breaker_open);
    rig.advance(secs(700)); // the block is over and the window has reset
    let snap = rig.gov.snapshot(rig.core).unwrap();
    assert_eq!((snap.remaining, snap.breaker_open), (5000, false));
    assert!(rig.decide(ralph, &Request::read()).is_go());
}

/// The quiet expiry closes only a breaker that has seen nothing for a whole horizon: one
/// that saw a reading 6 s ago stays open (until its good readings close it), and one whose
/// last reading is exactly a horizon old closes.
#[test]
fn g3_only_a_breaker_quiet_for_a_whole_horizon_closes_on_its_own() {
    let rig = Rig::new(breaker_only());
    let a = rig.agent("data", Priority::P1);
    assert!(burn(&rig, a));
    rig.advance_to(secs(25));
    // A slower reading: good, but one of the three it takes to close.
    assert!(
        rig.gov
            .observe_without_grant(a, rig.core, &reading(&rig, 2290))
            .breaker_open
    );
    rig.advance_to(secs(31)); // a sweep a horizon past the (absent) block
    assert!(
        rig.gov.snapshot(rig.core).unwrap().breaker_open,
        "closed though it saw a reading 6 s ago"
    );
    rig.advance_to(secs(55));
    assert!(
        !rig.gov.snapshot(rig.core).unwrap().breaker_open,
        "still open after a horizon without readings"
    );
}

/// The rate is taken over readings at most `rate_window` (10 s) old, that one included:
/// three readings 5 s apart spanning exactly the window make a rate (200/s, 5 s left).
#[test]
fn g3_a_reading_exactly_a_rate_window_old_still_counts() {
    let rig = Rig::new(breaker_only());
    let a = rig.agent("data", Priority::P1);
    let mut open = false;
    for r in [3000, 2000, 1000] {
        open = rig
            .gov
            .observe_without_grant(a, rig.core, &reading(&rig, r))
            .breaker_open;
        rig.advance(secs(5));
    }
    assert!(open, "the reading 10 s old was dropped from the rate");
}

/// Doomed means exhaustion projected *within* the horizon and *before* the reset: at
/// exactly the horizon (3000 left at 100/s: 30 s), or exactly at the reset (2000 left at
/// 100/s, the reset 20 s away), the quota lasts and the breaker stays closed.
#[test]
fn g3_exhaustion_projected_exactly_at_the_horizon_or_the_reset_does_not_open() {
    for (readings, reset_at) in [([3200, 3100, 3000], 3600), ([2200, 2100, 2000], 22)] {
        let rig = Rig::new(breaker_only());
        let a = rig.agent("data", Priority::P1);
        let mut open = false;
        for r in readings {
            let reset_in = reset_at - rig.now().as_secs();
            open = rig
                .gov
                .observe_without_grant(a, rig.core, &rig.ok(r, 5000, reset_in))
                .breaker_open;
            rig.advance(S);
        }
        assert!(!open, "opened on {readings:?}, reset at {reset_at} s");
    }
}
