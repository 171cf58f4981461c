//! G1 traffic light: zones by remaining/limit, amber delays (background first), red pauses
//! background, paces standard, lets critical pass.

mod governor_support;

use governor_support::*;
use resilience_core::governor::{
    Decision, Priority, RefusalKind, RefusalReason, Request, WaitReason, Zone,
};
use resilience_core::ResilienceError;

fn rig_at(remaining: u64) -> (Rig, [resilience_core::governor::AgentId; 3]) {
    let rig = Rig::new(light_only());
    let agents = [
        rig.agent("picard", Priority::P0),
        rig.agent("data", Priority::P1),
        rig.agent("ralph", Priority::P2),
    ];
    rig.gov
        .observe_without_grant(agents[0], rig.core, &rig.ok(remaining, 1000, 3600));
    (rig, agents)
}

#[test]
fn g1_green_at_or_above_40_percent_has_no_delay() {
    let (rig, [p0, p1, p2]) = rig_at(403);
    assert_eq!(rig.gov.snapshot(rig.core).unwrap().zone, Zone::Green);
    // 403, 402, 401 of 1000: all green, all go at once.
    for a in [p2, p1, p0] {
        assert!(rig.decide(a, &Request::read()).is_go());
    }
    // 400 is still green (>= 40%); 399 is amber: background is slowed.
    assert_eq!(rig.gov.snapshot(rig.core).unwrap().zone, Zone::Green);
    assert!(rig.decide(p2, &Request::read()).is_go());
    assert_eq!(rig.gov.snapshot(rig.core).unwrap().zone, Zone::Amber);
    assert!(!rig.decide(p2, &Request::read()).is_go());
}

#[test]
fn g1_amber_delay_grows_linearly_and_slows_background_first() {
    // ratio 0.34: P2's delay is 2 s * (0.40 - 0.34) / 0.25 = 480 ms; P1's starts at 0.275.
    let (rig, [p0, p1, p2]) = rig_at(340);
    assert_eq!(rig.gov.snapshot(rig.core).unwrap().zone, Zone::Amber);
    let w = wait(rig.decide(p2, &Request::read()));
    assert_eq!(w.reason, WaitReason::Amber);
    assert_eq!(w.delay, ms(480));
    rig.gov.cancel(&w.ticket);
    // Above P1's onset (0.275) standard work is not slowed; critical never is.
    assert!(rig.decide(p1, &Request::read()).is_go());
    assert!(rig.decide(p0, &Request::read()).is_go());
}

#[test]
fn g1_amber_delay_reaches_the_maximum_at_red_for_both_lower_priorities() {
    // ratio 0.20: P2 2 s * 0.20/0.25 = 1.6 s; P1 2 s * 0.075/0.125 = 1.2 s.
    let (rig, [_, p1, p2]) = rig_at(200);
    let w2 = wait(rig.decide(p2, &Request::read()));
    assert_eq!(w2.delay, ms(1600));
    let w1 = wait(rig.decide(p1, &Request::read()));
    assert_eq!(w1.delay, ms(1200));
    // A resumed ticket is granted once its delay has passed, not before.
    rig.advance(ms(1199));
    assert!(!rig.gov.resume(&w1.ticket, &Request::read()).is_go());
    rig.advance(ms(1));
    assert!(rig.gov.resume(&w1.ticket, &Request::read()).is_go());
}

#[test]
fn g1_red_pauses_background_until_reset() {
    let (rig, [_, _, p2]) = rig_at(149);
    assert_eq!(rig.gov.snapshot(rig.core).unwrap().zone, Zone::Red);
    let r = refused(rig.decide(p2, &Request::read()));
    assert_eq!(
        (r.kind, r.reason),
        (RefusalKind::Paused, RefusalReason::RedLight)
    );
    // Until the reset, plus a draw from P2's release window so the paused do not return
    // at one instant.
    assert!(
        r.retry_after >= secs(3600) + ms(3500) && r.retry_after < secs(3600) + ms(9500),
        "{:?}",
        r.retry_after
    );
    let hint = r.retry_after;
    assert!(matches!(
        ResilienceError::from(r),
        ResilienceError::GovernorPaused { retry_after, .. } if retry_after == hint
    ));
}

#[test]
fn g1_red_paces_standard_at_one_per_second_and_lets_critical_pass() {
    let (rig, [p0, p1, _]) = rig_at(100);
    let g = go(rig.decide(p1, &Request::read()));
    rig.made(g);
    let w = wait(rig.decide(p1, &Request::read()));
    assert_eq!(w.reason, WaitReason::RedPacing);
    assert_eq!(w.delay, S);
    // Meanwhile P0 passes, with no delay.
    for _ in 0..5 {
        assert!(matches!(rig.decide(p0, &Request::read()), Decision::Go(_)));
    }
    rig.advance(S);
    // P1's ticket is served, but P0 is not in line, so nothing holds it.
    assert!(rig.gov.resume(&w.ticket, &Request::read()).is_go());
}

#[test]
fn g1_thresholds_are_configurable() {
    let mut cfg = light_only();
    cfg.traffic_light.green = 0.20;
    cfg.traffic_light.red = 0.05;
    cfg.traffic_light.p1_amber_onset = 0.10;
    let rig = Rig::new(cfg);
    let p2 = rig.agent("ralph", Priority::P2);
    rig.gov
        .observe_without_grant(p2, rig.core, &rig.ok(300, 1000, 3600));
    assert!(
        rig.decide(p2, &Request::read()).is_go(),
        "0.30 is green at 20%"
    );
    rig.gov
        .observe_without_grant(p2, rig.core, &rig.ok(40, 1000, 3600));
    assert_eq!(
        refused(rig.decide(p2, &Request::read())).reason,
        RefusalReason::RedLight
    );
}

/// Red is *below* 15%: at exactly 15% the light is amber, background waits out the full
/// amber delay instead of being paused until the reset.
#[test]
fn g1_exactly_15_percent_is_still_amber() {
    let (rig, [_, _, p2]) = rig_at(150);
    assert_eq!(rig.gov.snapshot(rig.core).unwrap().zone, Zone::Amber);
    let w = wait(rig.decide(p2, &Request::read()));
    assert_eq!((w.reason, w.delay), (WaitReason::Amber, secs(2)));
}
