//! The in-process store's arithmetic, pinned to exact values: G5 settlement of grants past
//! the call bound (memory/state.rs `settle_due`, `make_room`, `forget_flights`), G1 amber
//! delays (`amber_delay`), and the time helpers (memory/time.rs).

mod governor_support;

use governor_support::*;
use resilience_core::governor::{
    Observation, Priority, Request, Selector, SpacingRule, WaitReason,
};

fn remaining_and_in_flight(rig: &Rig) -> (u64, u32) {
    let s = rig.gov.snapshot(rig.core).unwrap();
    (s.remaining, s.in_flight)
}

/// G5: a dropped grant settled past its call bound takes its cost out of its agent's cost in
/// flight too: when that agent's lease later expires, the expiry has nothing left to count
/// as spent, so the grant is charged once (3), not twice (6).
#[test]
fn g5_a_grant_settled_by_its_bound_is_not_charged_again_when_its_lease_expires() {
    let rig = Rig::new(light_only());
    let a = rig.agent("data", Priority::P1);
    let b = rig.agent("worf", Priority::P1);
    rig.call(a, &rig.ok(100, 100, 3600));
    drop(go(rig.decide(a, &Request::read().with_cost(3))));
    assert_eq!(remaining_and_in_flight(&rig), (97, 1));
    // Past twice the bound (30 s), both agents alive: settled as spent.
    tick_to(&rig, secs(61), &[a, b]);
    assert_eq!(remaining_and_in_flight(&rig), (97, 0));
    // `a` falls silent past its lease (2 min); `b` keeps the sweep running.
    tick_to(&rig, secs(61 + 121), &[b]);
    let s = rig.gov.snapshot(rig.core).unwrap();
    assert_eq!(s.live_agents, 1);
    assert_eq!((s.remaining, s.in_flight), (97, 0), "{s:?}");
}

/// G5: a dropped grant settled past its call bound leaves its agent with no call in flight:
/// when that agent's lease later expires, the expiry frees no slot of another agent's call
/// still in flight.
#[test]
fn g5_a_lease_expiry_after_a_settlement_frees_no_other_agents_slot() {
    let rig = Rig::new(light_only());
    let a = rig.agent("data", Priority::P1);
    let b = rig.agent("worf", Priority::P1);
    drop(go(rig.decide(a, &Request::read())));
    tick_to(&rig, secs(61), &[a, b]);
    assert_eq!(rig.gov.snapshot(rig.core).unwrap().in_flight, 0);
    // `b` holds a call in flight (well within its bound) when `a`'s lease ends at 181 s.
    tick_to(&rig, secs(170), &[b]);
    let _held = go(rig.decide(b, &Request::read()));
    tick_to(&rig, secs(182), &[b]);
    let s = rig.gov.snapshot(rig.core).unwrap();
    assert_eq!((s.live_agents, s.in_flight), (1, 1), "{s:?}");
}

/// G5/G1: settling a dropped grant that was counted in an ended window spends nothing in the
/// new one, and so is no reading there: the first reading of the new window still starts the
/// floor at what it says, even above the assumed limit (the estimate stays capped by the
/// limit). A call then made without a reading takes one off that floor (15 to 14), which
/// leaves the estimate at the limit (10), not one below it.
#[test]
fn g5_g1_settling_a_grant_from_an_ended_window_is_no_reading_in_the_new_one() {
    let mut cfg = light_only();
    cfg.quota.limit = 10;
    cfg.quota.window = secs(20);
    let rig = Rig::new(cfg);
    let a = rig.agent("data", Priority::P1);
    drop(go(rig.decide(a, &Request::read()))); // anchors the assumed reset at 20 s
    tick_to(&rig, secs(21), &[a]);
    assert_eq!(
        remaining_and_in_flight(&rig),
        (9, 1),
        "rolled, call in flight"
    );
    tick_to(&rig, secs(61), &[a]);
    assert_eq!(
        remaining_and_in_flight(&rig),
        (10, 0),
        "settled in the ended window"
    );
    let above = Observation::from_headers(200, [("x-ratelimit-remaining", "15")]);
    let _ = rig.gov.observe_without_grant(a, rig.core, &above);
    assert_eq!(remaining_and_in_flight(&rig), (10, 0));
    rig.made(go(rig.decide(a, &Request::read())));
    assert_eq!(remaining_and_in_flight(&rig), (10, 0));
}

/// G6/G8: when a waiter's release from a block and a rule's earliest time fall on the same
/// instant, the wait is the rule's (its reason and the requests it competes with), not the
/// block's: the release is no later than the rule.
#[test]
fn g6_g8_a_release_that_ties_with_a_rule_waits_for_the_rule() {
    let mut cfg = fixed_release();
    cfg.pacing.spacings.push(SpacingRule {
        name: "mutation_spacing".into(),
        selector: Selector::Writes,
        gap: S,
    });
    let rig = Rig::new(cfg);
    let a = rig.agent("picard", Priority::P0);
    rig.made(go(rig.decide(a, &Request::write()))); // the next write may go at 1 s
    rig.gov.note_retry_after(rig.core, S); // P0's release: the block's end, 1 s
    rig.advance_to(ms(10));
    let w = wait(rig.decide(a, &Request::write()));
    assert_eq!(
        (w.until, w.reason),
        (S, WaitReason::Rule("mutation_spacing".into()))
    );
}

/// G6: a request held back only by a higher-priority waiter that is overdue (told to come
/// back at the block's end, not back yet) asks again a poll interval later, and the wait says
/// it is for the line.
#[test]
fn g6_held_back_by_an_overdue_waiter_the_wait_is_for_the_line() {
    let rig = Rig::new(fixed_release());
    let p0 = rig.agent("picard", Priority::P0);
    let p1 = rig.agent("data", Priority::P1);
    rig.gov.note_retry_after(rig.core, S);
    let first = wait(rig.decide(p0, &Request::read()));
    assert_eq!(first.until, S);
    rig.advance_to(S + ms(10)); // `picard` has not come back yet
    let w = wait(rig.decide(p1, &Request::read()));
    assert_eq!((w.until, w.reason), (S + ms(60), WaitReason::Queue));
}
