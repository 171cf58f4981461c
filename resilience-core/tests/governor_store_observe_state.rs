//! The in-process store at its edges: the store's own entry points (tickets from elsewhere,
//! release by the trait), grants settled by a lease expiry when the call bound is longer than
//! the lease, and what one observation teaches one resource (memory/mod.rs, observe.rs,
//! state.rs).

mod governor_support;

use governor_support::*;
use resilience_core::clock::{Clock, ManualClock};
use resilience_core::governor::{
    Governor, GovernorConfig, GovernorStore, InProcessStore, Leases, Priority, Request, ResourceId,
};
use std::sync::Arc;
use std::time::Duration;

/// An in-process store used through its trait, on a manual clock.
fn store_with(cfg: GovernorConfig) -> (ManualClock, InProcessStore) {
    (ManualClock::new(), InProcessStore::new(cfg))
}

fn waiters(store: &InProcessStore, r: ResourceId, now: Duration) -> usize {
    store.snapshot(r, now).expect("known resource").waiters
}

/// G6: a ticket is a place in one resource's line, for one agent. Presented to another
/// resource it is no place there: the request is a new one and takes a new place, even when
/// the other line holds a waiter of the same agent under the same number. Presented where
/// it was given, it keeps its place. Both store entry points (`decide` with a time, and
/// `decide_on` with a clock) check this.
#[test]
fn g6_a_ticket_is_a_place_in_its_own_resource_line_only() {
    let (clock, store) = store_with(GovernorConfig::default());
    let now = clock.now();
    let core = store.add_resource("core", light_only(), now).unwrap();
    let search = store.add_resource("search", light_only(), now).unwrap();
    let a = store.register("data", Priority::P1, now).unwrap();
    store.block(core, secs(10), now);
    store.block(search, secs(10), now);
    let read = Request::read();
    let core_ticket = wait(store.decide(a, core, &read, None, now)).ticket;
    let search_ticket = wait(store.decide(a, search, &read, None, now)).ticket;
    assert_eq!(waiters(&store, search, now), 1);

    // Its own ticket, through either entry point: the same place.
    let _ = wait(store.decide(a, search, &read, Some(&search_ticket), now));
    assert_eq!(
        waiters(&store, search, now),
        1,
        "decide: own ticket lost its place"
    );
    let _ = wait(store.decide_on(a, search, &read, Some(&search_ticket), &clock));
    assert_eq!(
        waiters(&store, search, now),
        1,
        "decide_on: own ticket lost its place"
    );

    // core's ticket shows in search's line as a new request.
    let _ = wait(store.decide(a, search, &read, Some(&core_ticket), now));
    assert_eq!(waiters(&store, search, now), 2, "decide took core's ticket");
    let _ = wait(store.decide_on(a, search, &read, Some(&core_ticket), &clock));
    assert_eq!(
        waiters(&store, search, now),
        3,
        "decide_on took core's ticket"
    );
    assert_eq!(waiters(&store, core, now), 1);
}

/// G5/G2: a grant released through the store's trait (with a time, or on a clock as a
/// `Governor` over a given store does) gives back its slot and its cost.
#[test]
fn g5_a_release_through_the_store_trait_gives_back_slot_and_cost() {
    let (clock, store) = store_with(GovernorConfig::default());
    let now = clock.now();
    let core = store.add_resource("core", light_only(), now).unwrap();
    let a = store.register("data", Priority::P1, now).unwrap();
    let g = go(store.decide(a, core, &Request::read().with_cost(3), None, now));
    let s = store.snapshot(core, now).unwrap();
    assert_eq!((s.in_flight, s.remaining), (1, 4997));
    store.release(g, now);
    let s = store.snapshot(core, now).unwrap();
    assert_eq!((s.in_flight, s.remaining), (0, 5000), "release(grant, now)");

    // A Governor over a given store releases through `release_on`.
    let store: Arc<InProcessStore> = Arc::new(store);
    let gov = Governor::builder()
        .clock(clock.clone())
        .store(store.clone())
        .build()
        .unwrap();
    let g = go(gov.decide(a, core, &Request::read().with_cost(2)));
    assert_eq!(gov.snapshot(core).unwrap().in_flight, 1);
    gov.release(g);
    let s = gov.snapshot(core).unwrap();
    assert_eq!(
        (s.in_flight, s.remaining),
        (0, 5000),
        "release_on(grant, clock)"
    );
}

/// G7: the in-process store (the default) says what it holds when debug-printed.
#[test]
fn g7_the_in_process_store_debug_output_counts_resources_and_agents() {
    let (clock, store) = store_with(GovernorConfig::default());
    let now = clock.now();
    store.add_resource("core", light_only(), now).unwrap();
    store.register("picard", Priority::P0, now).unwrap();
    store.register("ralph", Priority::P2, now).unwrap();
    assert_eq!(
        format!("{store:?}"),
        "InProcessStore { resources: 1, agents: 2, .. }"
    );
}

/// Leases shorter than the call bound: an agent's lease can expire while its grant is
/// still within the bound.
fn short_lease_long_bound() -> GovernorConfig {
    GovernorConfig {
        leases: Leases {
            ttl: secs(10),
            call_bound: secs(60),
            ..Leases::default()
        },
        ..GovernorConfig::default()
    }
}

/// G5: a lease expiry settles its agent's calls in flight. With a call bound longer than the
/// lease, those calls must be forgotten there and then: when the agent comes back and holds
/// a new grant, the old calls' age must not later settle the new grant before its own bound.
#[test]
fn g5_grants_settled_by_a_lease_expiry_do_not_settle_later_grants() {
    let rig = Rig::with_governor_config(light_only(), short_lease_long_bound());
    let a = rig.agent("data", Priority::P1);
    let b = rig.agent("worf", Priority::P1);
    let _lost = go(rig.decide(a, &Request::read())); // never observed or released
                                                     // `a` is silent past its lease; `b` keeps its own alive and runs the sweep.
    for _ in 0..6 {
        rig.advance(secs(5));
        rig.gov.heartbeat(b);
        let _ = rig.gov.snapshot(rig.core);
    }
    let s = rig.gov.snapshot(rig.core).unwrap();
    assert_eq!(
        (s.in_flight, s.remaining),
        (0, 4999),
        "settled by the lease expiry"
    );
    // `a` comes back at 60 s and holds a new grant.
    rig.advance_to(secs(60));
    rig.gov.heartbeat(a);
    let _held = go(rig.decide(a, &Request::read()));
    assert_eq!(rig.gov.snapshot(rig.core).unwrap().in_flight, 1);
    // At 90 s the first grant's age is past twice the bound, the new one's is half of it.
    while rig.now() < secs(90) {
        rig.advance(secs(5));
        rig.gov.heartbeat(a);
        rig.gov.heartbeat(b);
        let _ = rig.gov.snapshot(rig.core);
    }
    let s = rig.gov.snapshot(rig.core).unwrap();
    assert_eq!(
        (s.in_flight, s.remaining),
        (1, 4998),
        "the new grant was settled within its bound"
    );
}

/// G5: an answer that comes after its agent's lease expired (the expiry settled its call)
/// settles nothing more, even while the agent, back again, holds a grant of the same age.
#[test]
fn g5_a_late_answer_from_before_a_lease_expiry_frees_no_later_grant() {
    let rig = Rig::with_governor_config(light_only(), short_lease_long_bound());
    let a = rig.agent("data", Priority::P1);
    let b = rig.agent("worf", Priority::P1);
    let old = go(rig.decide(a, &Request::read()));
    tick_to(&rig, secs(11), &[b]);
    assert_eq!(
        rig.gov.snapshot(rig.core).unwrap().in_flight,
        0,
        "lease expired"
    );
    rig.gov.heartbeat(a);
    let _held = go(rig.decide(a, &Request::read()));
    rig.made(old);
    let s = rig.gov.snapshot(rig.core).unwrap();
    assert_eq!(s.in_flight, 1, "the late answer freed the new grant's slot");
}

/// G5: a grant observed in time is no longer its agent's: when that agent's lease later
/// expires, nothing of it is settled again, and other agents' calls in flight stay counted.
#[test]
fn g5_an_observed_grant_is_not_settled_again_by_its_agents_lease_expiry() {
    let rig = Rig::with_governor_config(light_only(), short_lease_long_bound());
    let a = rig.agent("data", Priority::P1);
    let b = rig.agent("worf", Priority::P1);
    rig.made(go(rig.decide(a, &Request::read())));
    let _held = go(rig.decide(b, &Request::read()));
    assert_eq!(rig.gov.snapshot(rig.core).unwrap().in_flight, 1);
    tick_to(&rig, secs(12), &[b]); // `a`'s lease expires at 10 s
    let s = rig.gov.snapshot(rig.core).unwrap();
    assert_eq!(s.live_agents, 1);
    assert_eq!(s.in_flight, 1, "b's call in flight was freed by a's expiry");
}

/// An HTTP-date `retry-after` `days` after the clock's wall time.
fn retry_at_days(days: u64) -> resilience_core::governor::Observation {
    // The manual clock's wall time starts at 2026-01-01T00:00:00Z, a Thursday.
    let names = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    let date = format!(
        "{}, {:02} Jan 2026 00:00:00 GMT",
        names[(days % 7) as usize],
        1 + days
    );
    resilience_core::governor::Observation::new(429).with_header("retry-after", &date)
}

/// G6: a `retry-after` given as an HTTP-date blocks until that date, up to a week away (the
/// cap the delay form has when parsed); a later date blocks for the week.
#[test]
fn g6_an_http_date_retry_after_blocks_until_it_up_to_a_week() {
    const DAY: u64 = 86_400;
    let rig = Rig::new(light_only());
    let a = rig.agent("data", Priority::P1);
    let out = rig
        .gov
        .observe(go(rig.decide(a, &Request::read())), &retry_at_days(2));
    assert_eq!(out.blocked_until, Some(secs(2 * DAY)));
    let rig = Rig::new(light_only());
    let a = rig.agent("data", Priority::P1);
    let out = rig
        .gov
        .observe(go(rig.decide(a, &Request::read())), &retry_at_days(9));
    assert_eq!(out.blocked_until, Some(secs(7 * DAY)));
}

/// G6 with `max_wait`: a wait longer than the caller's bound is refused at once, and the
/// refusal says how long from *now* until the release it would have had (not from the
/// clock's origin).
#[test]
fn g6_a_wait_past_max_wait_is_shed_with_the_time_left_from_now() {
    let rig = Rig::new(fixed_release());
    let a = rig.agent("data", Priority::P1);
    rig.advance_to(secs(5));
    rig.gov.note_retry_after(rig.core, secs(30));
    let r = refused(rig.decide(a, &Request::read().with_max_wait(secs(5))));
    assert_eq!(r.retry_after, secs(30) + ms(500));
}

/// G6 with `max_wait`: a release exactly `max_wait` away is within the bound: it waits.
#[test]
fn g6_a_wait_of_exactly_max_wait_is_within_the_bound() {
    let rig = Rig::new(fixed_release());
    let a = rig.agent("data", Priority::P1);
    rig.gov.note_retry_after(rig.core, secs(10));
    let w = wait(rig.decide(a, &Request::read().with_max_wait(secs(10) + ms(500))));
    assert_eq!(w.until, secs(10) + ms(500));
}

/// G6 (GitHub's documented backoff: 60 s, then exponentially): a limit with nothing to go on
/// doubles the last block while no good response came in between. An error response (a 400)
/// is not a good one: the next limit still doubles.
#[test]
fn g6_an_error_response_between_limits_does_not_restart_the_doubling() {
    let rig = Rig::new(light_only());
    let a = rig.agent("data", Priority::P1);
    let limited = resilience_core::governor::Observation::new(429);
    let out = rig.gov.observe_without_grant(a, rig.core, &limited);
    assert_eq!(out.blocked_until, Some(secs(60)));
    rig.advance_to(secs(61));
    let bad = resilience_core::governor::Observation::new(400);
    let _ = rig.gov.observe_without_grant(a, rig.core, &bad);
    rig.advance_to(secs(62));
    let out = rig.gov.observe_without_grant(a, rig.core, &limited);
    assert_eq!(
        out.blocked_until,
        Some(secs(62 + 120)),
        "the 400 reset the backoff"
    );
}

/// G1/G8: the first grant of a window anchors its assumed reset; made on the full path (here
/// a waiter resuming after a block), it too must bring maintenance forward to that reset when
/// the window is shorter than the 1 s sweep: a grant after the reset is counted in a new
/// window.
#[test]
fn g1_a_window_anchored_by_a_resumed_waiter_resets_on_time_even_under_a_second() {
    let mut cfg = fixed_release();
    cfg.quota.limit = 10;
    cfg.quota.window = ms(100);
    let rig = Rig::new(cfg);
    let a = rig.agent("picard", Priority::P0);
    let _ = rig.gov.snapshot(rig.core); // maintenance now: the next sweep is 1 s away
    rig.gov.note_retry_after(rig.core, ms(10));
    let w = wait(rig.decide(a, &Request::read()));
    assert_eq!(w.until, ms(10));
    rig.advance_to(ms(10));
    let _first = go(rig.resume(&w.ticket, &Request::read())); // reset at 110 ms
    rig.advance_to(ms(160));
    let _second = go(rig.decide(a, &Request::read()));
    let s = rig.gov.snapshot(rig.core).unwrap();
    assert_eq!(
        (s.reset_in, s.remaining),
        (Some(ms(100)), 8),
        "granted in the window that had ended (the first grant is still in flight)"
    );
}

/// G5 with a call bound much shorter than the 1 s sweep: a grant never settled whose slot is
/// needed again is settled then. Made in a window that has ended since, it was counted
/// there, so the new window's estimate does not pay for it.
#[test]
fn g5_an_unsettled_grant_from_an_ended_window_is_not_charged_to_the_new_one() {
    let mut cfg = light_only();
    cfg.quota.limit = 10;
    cfg.quota.window = ms(100);
    let gc = GovernorConfig {
        // Slices of 2^24 ns (about 16.8 ms): a slot comes round again 8 slices later.
        leases: Leases {
            call_bound: ms(40),
            ..Leases::default()
        },
        ..GovernorConfig::default()
    };
    let rig = Rig::with_governor_config(cfg, gc);
    let a = rig.agent("data", Priority::P1);
    let _ = rig.gov.snapshot(rig.core); // the next sweep is 1 s away
    rig.advance_to(ms(10));
    let _lost = go(rig.decide(a, &Request::read())); // slice 0; the window resets at 110 ms
    rig.advance_to(ms(140)); // slice 8: the same slot, in a new window
    let _held = go(rig.decide(a, &Request::read()));
    let s = rig.gov.snapshot(rig.core).unwrap();
    assert_eq!((s.in_flight, s.remaining), (1, 9), "{s:?}");
}

/// G6 with G8: inside a block a waiter is told to come back at the later of its release
/// time and what the pacing rules allow, for the later one's reason: a create whose rule
/// holds it past its release is not sent back at the release only to wait again.
#[test]
fn g6_g8_a_rule_that_holds_past_the_release_sets_the_wait() {
    let mut cfg = one_create_per(secs(60));
    cfg.retry_windows.windows = [(ms(0), ms(0)); 3];
    let rig = Rig::new(cfg);
    let a = rig.agent("picard", Priority::P0);
    rig.made(go(rig.decide(a, &Request::create())));
    rig.gov.note_retry_after(rig.core, S);
    rig.advance_to(ms(10));
    let w = wait(rig.decide(a, &Request::create()));
    assert!(w.until >= secs(60), "{w:?}");
    assert_eq!(
        w.reason,
        resilience_core::governor::WaitReason::Rule("creates_per_minute".into()),
        "{w:?}"
    );
}

/// G2: the store remembers each agent's name and priority (its reservations and the order
/// of the line follow the priority); an unknown id has none.
#[test]
fn g2_an_agent_is_known_by_its_name_and_priority() {
    let rig = Rig::new(light_only());
    let _ = rig.agent("picard", Priority::P0);
    let ralph = rig.agent("ralph", Priority::P2);
    let (name, p) = rig.gov.agent(ralph).expect("registered");
    assert_eq!((&*name, p), ("ralph", Priority::P2));
    assert_eq!(
        rig.gov
            .agent(resilience_core::governor::AgentId::from_index(7)),
        None
    );
}
