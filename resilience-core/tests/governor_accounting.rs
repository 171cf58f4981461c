//! What a grant costs and when it is given back: the quota estimate with calls in flight
//! (G1, G8), a release of a call never made (G2, G8), and the lease of an agent that waits
//! as told (G5).

mod governor_support;

use governor_support::*;
use resilience_core::governor::{Observation, Priority, Request, ResourceConfig};
use std::time::Duration;

/// The newest call's response overtakes nine older ones still in flight: its reading
/// counts only itself, so the nine are still to be spent.
#[test]
fn g1_g8_a_reading_that_overtakes_calls_in_flight_never_lets_grants_exceed_the_quota() {
    let rig = Rig::new(small(10, secs(3600)));
    let p0 = rig.agent("picard", Priority::P0);
    rig.call(p0, &rig.ok(10, 10, 3000));
    let mut grants: Vec<_> = (0..10)
        .map(|_| go(rig.decide(p0, &Request::read())))
        .collect();
    let last = grants.pop().unwrap();
    let _ = rig.gov.observe(last, &rig.ok(9, 10, 3000));
    assert_eq!(rig.gov.snapshot(rig.core).unwrap().remaining, 0);
    assert_eq!(grants_left(&rig, p0), 0, "9 calls are still in flight");
    // As they are answered, in any order, the estimate follows the server's lowest count.
    for (i, g) in grants.into_iter().enumerate() {
        let _ = rig.gov.observe(g, &rig.ok(8 - i as u64, 10, 3000));
    }
    assert_eq!(rig.gov.snapshot(rig.core).unwrap().remaining, 0);
}

/// The server counted the second call first: the first call's answer (8) arrives before the
/// second's (9). The later, higher reading must not raise the estimate back to 9.
#[test]
fn g1_a_higher_reading_answered_later_does_not_raise_the_estimate() {
    let rig = Rig::new(small(10, secs(3600)));
    let a = rig.agent("data", Priority::P0);
    rig.call(a, &rig.ok(10, 10, 3000));
    let first = go(rig.decide(a, &Request::read()));
    let second = go(rig.decide(a, &Request::read()));
    let _ = rig.gov.observe(first, &rig.ok(8, 10, 3000));
    assert_eq!(
        rig.gov.snapshot(rig.core).unwrap().remaining,
        7,
        "one still in flight"
    );
    let _ = rig.gov.observe(second, &rig.ok(9, 10, 3000));
    assert_eq!(rig.gov.snapshot(rig.core).unwrap().remaining, 8);
    assert_eq!(grants_left(&rig, a), 8);
}

/// A response without rate-limit headers still counts its call as spent.
#[test]
fn g1_a_call_answered_without_headers_counts_as_spent() {
    let rig = Rig::new(small(10, secs(3600)));
    let a = rig.agent("data", Priority::P0);
    rig.call(a, &rig.ok(10, 10, 3000));
    rig.made(go(rig.decide(a, &Request::read())));
    assert_eq!(rig.gov.snapshot(rig.core).unwrap().remaining, 9);
    // The next reading is the server's count: 8 if it counted both calls.
    rig.call(a, &rig.ok(8, 10, 3000));
    assert_eq!(rig.gov.snapshot(rig.core).unwrap().remaining, 8);
}

/// The server counted the first call, then the second; the second is answered first,
/// without headers, and only then the first, read 9 before the second was counted. The
/// reading must not undo the unread call: 8 are left, not 9.
#[test]
fn g1_a_reading_answered_after_an_unread_call_it_may_not_count_does_not_undo_it() {
    let rig = Rig::new(small(10, secs(3600)));
    let a = rig.agent("data", Priority::P0);
    rig.call(a, &rig.ok(10, 10, 3000));
    let first = go(rig.decide(a, &Request::read()));
    let second = go(rig.decide(a, &Request::read()));
    rig.made(second);
    let _ = rig.gov.observe(first, &rig.ok(9, 10, 3000));
    assert_eq!(rig.gov.snapshot(rig.core).unwrap().remaining, 8);
    assert_eq!(grants_left(&rig, a), 8);
}

/// A call that timed out (no response) may still reach the server after calls granted
/// later: upstream counts them (9, 8) and then it (7). Their readings do not count it.
#[test]
fn g1_a_call_with_no_response_may_arrive_after_calls_granted_later() {
    let rig = Rig::new(small(10, secs(3600)));
    let a = rig.agent("data", Priority::P0);
    rig.call(a, &rig.ok(10, 10, 3000));
    let timed_out = go(rig.decide(a, &Request::read()));
    let _ = rig.gov.observe(timed_out, &Observation::no_response());
    rig.advance(secs(1));
    let first = go(rig.decide(a, &Request::read()));
    let second = go(rig.decide(a, &Request::read()));
    let _ = rig.gov.observe(second, &rig.ok(8, 10, 2999));
    let _ = rig.gov.observe(first, &rig.ok(9, 10, 2999));
    assert_eq!(rig.gov.snapshot(rig.core).unwrap().remaining, 7);
    assert_eq!(grants_left(&rig, a), 7);
}

/// An unread call settled before a call was granted had reached the server before it: that
/// call's reading counts it, so it is not taken off again.
#[test]
fn g1_an_unread_call_settled_before_a_grant_is_counted_in_its_reading() {
    let rig = Rig::new(small(10, secs(3600)));
    let a = rig.agent("data", Priority::P0);
    rig.call(a, &rig.ok(10, 10, 3000));
    rig.made(go(rig.decide(a, &Request::read())));
    let next = go(rig.decide(a, &Request::read()));
    let _ = rig.gov.observe(next, &rig.ok(8, 10, 3000));
    assert_eq!(rig.gov.snapshot(rig.core).unwrap().remaining, 8);
}

/// A grant released unused ("the call is presumed not made") gives back its window slot,
/// its quota and its agent's reservation.
#[test]
fn g2_g8_a_released_grant_gives_back_its_window_slot_quota_and_reservation() {
    let mut cfg = one_create_per(secs(60));
    cfg.token_pool.reservation = [0.0, 0.1, 0.0];
    let rig = Rig::new(cfg);
    let a = rig.agent("data", Priority::P1);
    let held = rig.gov.snapshot(rig.core).unwrap().pool_free;
    rig.gov.release(go(rig.decide(a, &Request::create())));
    let snap = rig.gov.snapshot(rig.core).unwrap();
    assert_eq!(
        (snap.remaining, snap.pool_free, snap.in_flight),
        (5000, held, 0)
    );
    let g = go(rig.decide(a, &Request::create()));
    // A call made keeps its slot.
    rig.made(g);
    assert!(!rig.decide(a, &Request::create()).is_go());
    assert_eq!(rig.gov.snapshot(rig.core).unwrap().remaining, 4999);
}

/// G5: an agent waiting exactly as told (no heartbeat while it waits) keeps its lease, its
/// reservation and its place in line.
#[test]
fn g5_an_agent_waiting_as_told_keeps_its_lease_and_place() {
    let rig = Rig::new(ResourceConfig::default());
    let a = rig.agent("data", Priority::P1);
    let b = rig.agent("seven", Priority::P1);
    rig.gov.note_retry_after(rig.core, secs(600));
    let wa = wait(rig.decide(a, &Request::read()));
    rig.advance(secs(130));
    let _wb = wait(rig.decide(b, &Request::read())); // any decision runs the sweep
    let snap = rig.gov.snapshot(rig.core).unwrap();
    assert_eq!((snap.waiters, snap.live_agents), (2, 2), "{snap:?}");
    // Silent past the lease after the time it was told, it is presumed dead.
    rig.advance_to(wa.until + secs(121));
    rig.gov.heartbeat(b);
    let _ = rig.decide(b, &Request::read());
    assert_eq!(rig.gov.snapshot(rig.core).unwrap().live_agents, 1);
}

/// G5 with strict priority: a P0 waiting as told on a create rule is still in line when it
/// is due, so a P2 create asked meanwhile is not served ahead of it.
#[test]
fn g5_a_p0_waiting_past_its_lease_length_is_still_served_first() {
    let cfg = one_create_per(secs(3600));
    let rig = Rig::new(cfg);
    let p0 = rig.agent("picard", Priority::P0);
    let ralph = rig.agent("ralph", Priority::P2);
    rig.made(go(rig.decide(p0, &Request::create())));
    let w0 = wait(rig.decide(p0, &Request::create()));
    rig.advance(secs(125));
    let _ = rig.decide(ralph, &Request::create());
    rig.advance_to(w0.until);
    let d = rig.decide(ralph, &Request::create());
    assert!(!d.is_go(), "P2 served while the P0 is due: {d:?}");
    assert!(rig.gov.resume(&w0.ticket, &Request::create()).is_go());
}

/// The documented order of ledgers: a grant that costs anything is after every earlier
/// decision; a cost-0 grant adds nothing, so it ties with them.
#[test]
fn g8_grant_ledgers_order_after_earlier_decisions_unless_they_cost_nothing() {
    let cfg = one_create_per(secs(60));
    let rig = Rig::new(cfg);
    let p0 = rig.agent("picard", Priority::P0);
    let p1 = rig.agent("data", Priority::P1);
    rig.made(go(rig.decide(p1, &Request::create())));
    let w = wait(rig.decide(p1, &Request::create()));
    let free = go(rig.decide(p0, &Request::read().with_cost(0)));
    assert_eq!(free.ledger(), w.ledger);
    let paid = go(rig.decide(p0, &Request::read()));
    assert!(paid.ledger() > w.ledger && paid.ledger() > free.ledger());
}

/// A manual clock whose wall clock can be stepped (an NTP correction, a VM resumed) while
/// the monotonic clock runs on.
#[derive(Debug, Clone)]
struct SteppedWallClock {
    mono: resilience_core::clock::ManualClock,
    /// Seconds the wall clock has been stepped back.
    back: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl resilience_core::clock::Clock for SteppedWallClock {
    fn now(&self) -> Duration {
        self.mono.now()
    }
    fn unix_time(&self) -> Duration {
        let back = self.back.load(std::sync::atomic::Ordering::Relaxed);
        resilience_core::clock::Clock::unix_time(&self.mono) - secs(back)
    }
}

/// The wall clock steps back 10 s between two answers in one window. Both carry the same
/// `x-ratelimit-reset`; mapped onto the monotonic clock, the second lands 10 s later, which
/// used to read as a new window and restart the floor at the second (higher, overtaken)
/// reading: one call more than the server has left.
#[test]
fn g1_a_wall_clock_step_is_not_a_new_window() {
    use resilience_core::clock::Clock as _;
    use resilience_core::governor::{Governor, Observation};
    let clock = SteppedWallClock {
        mono: resilience_core::clock::ManualClock::new(),
        back: Default::default(),
    };
    let gov = Governor::builder()
        .clock(clock.clone())
        .seed(7)
        .build()
        .unwrap();
    let core = gov.add_resource("core", small(10, secs(3600))).unwrap();
    let a = gov.register("data", Priority::P0).unwrap();
    let reset = clock.unix_time().as_secs() + 3000;
    let reading = |remaining: u64| {
        Observation::from_headers(
            200,
            [
                ("x-ratelimit-limit", "10".to_string()),
                ("x-ratelimit-remaining", remaining.to_string()),
                ("x-ratelimit-reset", reset.to_string()),
            ],
        )
    };
    let g = go(gov.decide(a, core, &Request::read()));
    let _ = gov.observe(g, &reading(10));
    let first = go(gov.decide(a, core, &Request::read()));
    let second = go(gov.decide(a, core, &Request::read()));
    // The server counted the first call, then the second; the second's answer comes first.
    let _ = gov.observe(second, &reading(8));
    clock.back.store(10, std::sync::atomic::Ordering::Relaxed);
    let _ = gov.observe(first, &reading(9));
    let snap = gov.snapshot(core).unwrap();
    assert_eq!(snap.remaining, 8, "the server's lowest count stands");
    assert!(
        snap.reset_in.is_some_and(|r| r > secs(3005)),
        "the reset moved with the wall clock: {:?}",
        snap.reset_in
    );
}

/// A released grant gives back only its own slots: a read released at the instant a create
/// was made does not take the create's place in the creation rule (its entry looks alike).
#[test]
fn g8_a_released_read_does_not_give_back_a_create_made_at_the_same_instant() {
    let rig = Rig::new(one_create_per(secs(60)));
    let a = rig.agent("data", Priority::P1);
    rig.made(go(rig.decide(a, &Request::create())));
    rig.gov.release(go(rig.decide(a, &Request::read())));
    assert!(
        !rig.decide(a, &Request::create()).is_go(),
        "a second create within the minute"
    );
}

/// A released grant with an endpoint gives back its slot in a rule shared by all
/// endpoints (only per-endpoint windows keep it).
#[test]
fn g8_a_released_grant_with_an_endpoint_gives_back_its_shared_window_slot() {
    let rig = Rig::new(one_create_per(secs(60)));
    let a = rig.agent("data", Priority::P1);
    let create = Request::create().with_endpoint("/repos/o/r/issues");
    rig.gov.release(go(rig.decide(a, &create)));
    assert!(
        rig.decide(a, &create).is_go(),
        "the slot was not given back"
    );
}
