//! G5 for grants, not only agents: a grant never observed nor released (dropped with its
//! task, or held by a call that hangs) is settled once `leases.call_bound` has passed (by
//! twice the bound at the latest) as a call made without a reading, so an agent that stays active cannot hold quota or concurrency slots
//! for good. (Before, only the expiry of its agent's lease settled it, and an active agent's
//! lease never expires: three dropped grants under a concurrency cap of 3 stopped every
//! agent for good.)

mod governor_support;

use governor_support::*;
use resilience_core::governor::{Decision, Priority, Request, ResourceConfig};

fn capped(max_concurrent: u32) -> ResourceConfig {
    let mut cfg = light_only();
    cfg.pacing.max_concurrent = Some(max_concurrent);
    cfg
}

#[test]
fn g5_dropped_grants_free_their_concurrency_slots_after_the_call_bound() {
    let rig = Rig::new(capped(3));
    let a = rig.agent("a", Priority::P1);
    let b = rig.agent("b", Priority::P0);
    rig.call(a, &rig.ok(5000, 5000, 3600));
    for _ in 0..3 {
        drop(go(rig.decide(a, &Request::read()))); // neither observed nor released
    }
    // Both agents stay active, so no lease expires; the cap holds through the bound (30 s)…
    rig.advance(secs(29));
    rig.gov.heartbeat(a);
    let waiting = wait(rig.decide(b, &Request::read()));
    rig.advance(secs(1));
    rig.gov.heartbeat(a);
    assert!(!rig.resume(&waiting.ticket, &Request::read()).is_go());
    // …and is free by twice the bound (grants are settled by age in slices of the clock).
    rig.advance(secs(30));
    let snap = rig.gov.snapshot(rig.core).unwrap();
    assert_eq!(snap.in_flight, 0, "settled past the bound: {snap:?}");
    rig.made(go(rig.resume(&waiting.ticket, &Request::read())));
}

#[test]
fn g5_g1_a_grant_settled_by_its_bound_counts_as_spent_and_its_late_answer_only_reads() {
    let rig = Rig::new(light_only());
    let a = rig.agent("a", Priority::P1);
    rig.call(a, &rig.ok(100, 100, 3600));
    let hung = go(rig.decide(a, &Request::read()));
    assert_eq!(rig.gov.snapshot(rig.core).unwrap().remaining, 99);
    rig.advance(secs(60));
    rig.made(go(rig.decide(a, &Request::read()))); // a decision runs the sweep
    let snap = rig.gov.snapshot(rig.core).unwrap();
    // The hung call is spent (not refunded), the second one answered without headers.
    assert_eq!((snap.in_flight, snap.remaining), (0, 98), "{snap:?}");
    // Its answer arrives at last: its reading applies; it settles nothing twice. The second
    // call, answered unread after the hung one was granted, may have reached the server
    // after it: the reading (97) may not count it, so 96 (the hung call itself it counts).
    let _ = rig.gov.observe(hung, &rig.ok(97, 100, 3569));
    let snap = rig.gov.snapshot(rig.core).unwrap();
    assert_eq!((snap.in_flight, snap.remaining), (0, 96), "{snap:?}");
    // A grant in flight now is still counted once, and settled by its own answer.
    let live = go(rig.decide(a, &Request::read()));
    assert_eq!(rig.gov.snapshot(rig.core).unwrap().in_flight, 1);
    let _ = rig.gov.observe(live, &rig.ok(96, 100, 3569));
    let snap = rig.gov.snapshot(rig.core).unwrap();
    assert_eq!((snap.in_flight, snap.remaining), (0, 96), "{snap:?}");
}

#[test]
fn g5_a_release_after_the_bound_refunds_nothing() {
    let rig = Rig::new(light_only());
    let a = rig.agent("a", Priority::P1);
    rig.call(a, &rig.ok(100, 100, 3600));
    let late = go(rig.decide(a, &Request::read()));
    rig.advance(secs(60));
    rig.gov.heartbeat(a);
    rig.made(go(rig.decide(a, &Request::read())));
    assert_eq!(rig.gov.snapshot(rig.core).unwrap().remaining, 98);
    // Counted as made already: a release now does not give its cost back.
    rig.gov.release(late);
    assert_eq!(rig.gov.snapshot(rig.core).unwrap().remaining, 98);
}

#[test]
fn g5_many_grants_held_within_the_bound_stay_counted_and_come_back_on_release() {
    let mut cfg = light_only();
    cfg.quota.limit = 1_000_000;
    let rig = Rig::new(cfg);
    let a = rig.agent("a", Priority::P0);
    rig.call(a, &rig.ok(1_000_000, 1_000_000, 3600));
    let mut held = Vec::new();
    for _ in 0..50 {
        for _ in 0..100 {
            match rig.decide(a, &Request::read()) {
                Decision::Go(g) => held.push(g),
                d => panic!("{d:?}"),
            }
        }
        rig.advance(ms(500)); // 25 s in all: inside the bound
    }
    let snap = rig.gov.snapshot(rig.core).unwrap();
    assert_eq!(snap.in_flight, 5000, "{snap:?}");
    assert_eq!(snap.remaining, 1_000_000 - 5000);
    for g in held {
        rig.gov.release(g);
    }
    let snap = rig.gov.snapshot(rig.core).unwrap();
    assert_eq!((snap.in_flight, snap.remaining), (0, 1_000_000), "{snap:?}");
}

#[test]
fn g5_g1_a_dropped_grant_from_an_ended_window_is_not_spent_in_the_next() {
    let rig = Rig::new(light_only());
    let a = rig.agent("a", Priority::P1);
    rig.call(a, &rig.ok(10, 10, 20)); // the window resets in 20 s
    drop(go(rig.decide(a, &Request::read())));
    rig.advance(secs(21));
    let snap = rig.gov.snapshot(rig.core).unwrap();
    // A call in flight at the roll may still count in the new window: held back.
    assert_eq!((snap.in_flight, snap.remaining), (1, 9), "{snap:?}");
    rig.advance(secs(40));
    let snap = rig.gov.snapshot(rig.core).unwrap();
    // Past its bound it is settled where it was granted, the ended window.
    assert_eq!((snap.in_flight, snap.remaining), (0, 10), "{snap:?}");
}

/// A lease shorter than the call bound: a silent agent's grant is settled as spent when its
/// lease expires, while its call may still be on its way. It reaches the server after a
/// later grant's call, whose reading (9) does not count it: 8 are left, not 9.
#[test]
fn g5_g1_a_call_settled_at_its_lease_expiry_may_arrive_after_a_later_reading() {
    let mut gc = resilience_core::governor::GovernorConfig::default();
    gc.leases.ttl = secs(10);
    let mut cfg = light_only();
    cfg.quota.limit = 10;
    let rig = Rig::with_governor_config(cfg, gc);
    let slow = rig.agent("slow", Priority::P1);
    let a = rig.agent("data", Priority::P0);
    rig.call(a, &rig.ok(10, 10, 3000));
    let stalled = go(rig.decide(slow, &Request::read()));
    // 12 s later its lease has expired; its call bound (30 s) has not passed.
    tick_to(&rig, secs(12), &[a]);
    let g = go(rig.decide(a, &Request::read()));
    let _ = rig.gov.observe(g, &rig.ok(9, 10, 2988));
    assert_eq!(rig.gov.snapshot(rig.core).unwrap().remaining, 8);
    drop(stalled);
}
