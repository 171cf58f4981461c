//! G2 shared token pool (per-priority reservations, donation, background yield, promotion)
//! and G5 leases (silent agents' unused quota returns to the pool).

mod governor_support;

use governor_support::*;
use resilience_core::governor::{Priority, RefusalKind, RefusalReason, Request};

fn spend(rig: &Rig, a: resilience_core::governor::AgentId, n: usize) {
    for _ in 0..n {
        let g = go(rig.decide(a, &Request::read()));
        rig.made(g);
    }
}

#[test]
fn g2_each_agent_reserves_its_priority_share() {
    let rig = Rig::new(pool_only());
    let p0 = rig.agent("picard", Priority::P0);
    rig.agent("data", Priority::P1);
    rig.agent("ralph", Priority::P2);
    rig.gov
        .observe_without_grant(p0, rig.core, &rig.ok(1000, 1000, 3600));
    let s = rig.gov.snapshot(rig.core).unwrap();
    // 10% + 5% + 2% of 1000 reserved; the rest is the shared pool.
    assert_eq!(s.pool_size, 830);
    assert_eq!(s.pool_free, 830);
    spend(&rig, p0, 30); // from Picard's own reservation: the pool is untouched
    assert_eq!(rig.gov.snapshot(rig.core).unwrap().pool_free, 830);
}

#[test]
fn g2_standard_spends_its_reservation_then_the_pool_then_is_shed() {
    let mut cfg = pool_only();
    cfg.token_pool.reservation = [0.5, 0.1, 0.0];
    let rig = Rig::new(cfg);
    let p0 = rig.agent("picard", Priority::P0);
    let p1 = rig.agent("data", Priority::P1);
    // 650 left of 1000: holds 500 (P0) + 100 (P1); 50 free in the pool.
    rig.gov
        .observe_without_grant(p1, rig.core, &rig.ok(650, 1000, 3600));
    spend(&rig, p1, 150);
    let r = refused(rig.decide(p1, &Request::read()));
    assert_eq!(
        (r.kind, r.reason),
        (RefusalKind::Shed, RefusalReason::PoolEmpty)
    );
    assert_eq!(r.retry_after, secs(60));
    // P0 is served while anything remains: its own 500.
    spend(&rig, p0, 500);
    let r = refused(rig.decide(p0, &Request::read()));
    assert_eq!(
        (r.kind, r.reason),
        (RefusalKind::Paused, RefusalReason::Exhausted)
    );
}

#[test]
fn g2_background_yields_below_30_percent_of_the_pool() {
    let rig = Rig::new(pool_only());
    let p1 = rig.agent("data", Priority::P1);
    let p2 = rig.agent("ralph", Priority::P2);
    // Pool size 1000 - 50 - 20 = 930; 30% of it is 279. Free = 348 - 70 = 278.
    rig.gov
        .observe_without_grant(p1, rig.core, &rig.ok(348, 1000, 3600));
    spend(&rig, p2, 20); // its own reservation first
    let r = refused(rig.decide(p2, &Request::read()));
    assert_eq!(r.reason, RefusalReason::PoolYield);
    assert!(
        rig.decide(p1, &Request::read()).is_go(),
        "P1 does not yield"
    );
    let mut roomy = pool_only();
    roomy.token_pool.p2_yield_below = 0.1;
    let rig = Rig::new(roomy);
    let p2 = rig.agent("ralph", Priority::P2);
    rig.gov
        .observe_without_grant(p2, rig.core, &rig.ok(348, 1000, 3600));
    spend(&rig, p2, 21);
}

#[test]
fn g2_idle_agents_donate_their_reservation() {
    let mut cfg = pool_only();
    cfg.token_pool.reservation = [0.0, 0.3, 0.0];
    let rig = Rig::new(cfg);
    let busy = rig.agent("data", Priority::P1);
    let quiet = rig.agent("seven", Priority::P1);
    rig.gov
        .observe_without_grant(busy, rig.core, &rig.ok(700, 1000, 3600));
    // Holds 300 + 300 of 700: 100 free.
    assert_eq!(rig.gov.snapshot(rig.core).unwrap().pool_free, 100);
    rig.advance(secs(59));
    spend(&rig, busy, 1);
    rig.advance(secs(2)); // seven has not asked for 61 s: idle
    let s = rig.gov.snapshot(rig.core).unwrap();
    assert_eq!(
        s.pool_free, 400,
        "699 left, only data's 299 held: seven's 300 donated"
    );
    assert_eq!(s.live_agents, 2, "idle is not dead");
    spend(&rig, quiet, 1); // asking again takes the reservation back
    assert_eq!(rig.gov.snapshot(rig.core).unwrap().pool_free, 100);
}

#[test]
fn g2_background_starved_for_5_minutes_is_promoted_until_served() {
    let rig = Rig::new(pool_only());
    let p1 = rig.agent("data", Priority::P1);
    let p2 = rig.agent("ralph", Priority::P2);
    rig.gov
        .observe_without_grant(p1, rig.core, &rig.ok(300, 1000, 3600));
    spend(&rig, p2, 20);
    assert_eq!(
        refused(rig.decide(p2, &Request::read())).reason,
        RefusalReason::PoolYield
    );
    // It comes back as told (within 60 s), so its lease stays live: starved, not gone.
    for _ in 0..4 {
        rig.advance(secs(60));
        assert!(!rig.decide(p2, &Request::read()).is_go());
    }
    rig.advance(secs(59));
    assert!(!rig.decide(p2, &Request::read()).is_go());
    rig.advance(secs(1));
    let g = go(rig.decide(p2, &Request::read()));
    assert_eq!(g.priority(), Priority::P1, "promoted");
    rig.gov.release(g);
    // Served: background again, and the yield rule applies again.
    assert_eq!(
        refused(rig.decide(p2, &Request::read())).reason,
        RefusalReason::PoolYield
    );
}

#[test]
fn g2_promotion_delay_is_configurable() {
    let mut cfg = pool_only();
    cfg.token_pool.promote_after = secs(10);
    let rig = Rig::new(cfg);
    let p2 = rig.agent("ralph", Priority::P2);
    rig.gov
        .observe_without_grant(p2, rig.core, &rig.ok(300, 1000, 3600));
    spend(&rig, p2, 20);
    let _ = refused(rig.decide(p2, &Request::read()));
    rig.advance(secs(10));
    assert_eq!(
        go(rig.decide(p2, &Request::read())).priority(),
        Priority::P1
    );
}

#[test]
fn g5_a_silent_agent_loses_its_lease_and_its_unused_quota_returns() {
    let rig = Rig::new(pool_only());
    let p0 = rig.agent("picard", Priority::P0);
    let _gone = rig.agent("data", Priority::P1);
    rig.gov
        .observe_without_grant(p0, rig.core, &rig.ok(1000, 1000, 3600));
    let before = rig.gov.snapshot(rig.core).unwrap();
    assert_eq!((before.live_agents, before.pool_size), (2, 850));
    // Picard keeps its lease by asking; data is silent.
    for _ in 0..4 {
        rig.advance(secs(30));
        spend(&rig, p0, 1);
    }
    rig.advance(secs(2));
    let after = rig.gov.snapshot(rig.core).unwrap();
    assert_eq!(after.live_agents, 1);
    assert_eq!(after.pool_size, 900, "data's 50 returned to the pool");
}

#[test]
fn g5_heartbeats_keep_the_lease() {
    let rig = Rig::new(pool_only());
    let a = rig.agent("data", Priority::P1);
    for _ in 0..10 {
        rig.advance(secs(60));
        rig.gov.heartbeat(a);
    }
    assert_eq!(rig.gov.snapshot(rig.core).unwrap().live_agents, 1);
    rig.advance(secs(121));
    assert_eq!(rig.gov.snapshot(rig.core).unwrap().live_agents, 0);
}

#[test]
fn g5_a_dead_agents_slots_and_place_in_line_are_freed() {
    let mut cfg = pool_only();
    cfg.pacing.max_concurrent = Some(2);
    // Grants left in flight are settled by their call bound too (30 s by default): here
    // it is longer than the lease, so what frees the slots is the lease.
    let mut gc = resilience_core::governor::GovernorConfig::default();
    gc.leases.call_bound = secs(3600);
    let rig = Rig::with_governor_config(cfg, gc);
    let dead = rig.agent("crashed", Priority::P0);
    let live = rig.agent("data", Priority::P1);
    let lost1 = go(rig.decide(dead, &Request::read()));
    let lost2 = go(rig.decide(dead, &Request::read()));
    let w = wait(rig.decide(dead, &Request::read()));
    // The crashed agent holds both slots (and, until the ticket grace, a place in line
    // ahead of data); its lease ends that.
    let mut t = secs(0);
    let mut served = false;
    while t < secs(130) {
        rig.advance(secs(10));
        t += secs(10);
        rig.gov.heartbeat(live);
        if let resilience_core::governor::Decision::Go(g) = rig.decide(live, &Request::read()) {
            served = true;
            rig.gov.release(g);
            break;
        }
    }
    assert!(served && t >= secs(120) && t <= secs(130), "{t:?}");
    let _ = w;
    // Late releases of the dead agent's grants do not free anyone else's slot.
    rig.gov.release(lost1);
    rig.gov.release(lost2);
    let a = go(rig.decide(live, &Request::read()));
    let b = go(rig.decide(live, &Request::read()));
    assert!(!rig.decide(live, &Request::read()).is_go());
    rig.gov.release(a);
    rig.gov.release(b);
}

#[test]
fn g5_lease_length_is_configurable() {
    use resilience_core::clock::ManualClock;
    use resilience_core::governor::{Governor, GovernorConfig};
    let clock = ManualClock::new();
    let mut gc = GovernorConfig::default();
    gc.leases.ttl = secs(10);
    let gov = Governor::builder()
        .clock(clock.clone())
        .config(gc)
        .build()
        .unwrap();
    let core = gov.add_resource("core", pool_only()).unwrap();
    gov.register("data", Priority::P1).unwrap();
    clock.advance(secs(11));
    assert_eq!(gov.snapshot(core).unwrap().live_agents, 0);
}

/// A heartbeat from an agent whose lease has ended brings it back (its lease is live again,
/// as after a request).
#[test]
fn g5_a_heartbeat_after_the_lease_ended_brings_the_agent_back() {
    let rig = Rig::new(pool_only());
    let a = rig.agent("data", Priority::P1);
    rig.advance(secs(121));
    assert_eq!(rig.gov.snapshot(rig.core).unwrap().live_agents, 0);
    rig.gov.heartbeat(a);
    assert_eq!(rig.gov.snapshot(rig.core).unwrap().live_agents, 1);
}

/// A new quota window gives each agent its whole reservation back: what it used in the
/// last window no longer counts against it.
#[test]
fn g2_a_new_quota_window_restores_each_agents_reservation() {
    let rig = Rig::new(pool_only());
    let a = rig.agent("data", Priority::P1);
    rig.gov
        .observe_without_grant(a, rig.core, &rig.ok(1000, 1000, 30));
    assert_eq!(rig.gov.snapshot(rig.core).unwrap().pool_free, 950);
    spend(&rig, a, 50); // all of data's 5%: its hold is used up, the pool untouched
    let s = rig.gov.snapshot(rig.core).unwrap();
    assert_eq!((s.remaining, s.pool_free), (950, 950));
    rig.advance(secs(31)); // the window resets; data is neither idle nor dead
    let s = rig.gov.snapshot(rig.core).unwrap();
    assert_eq!(
        (s.remaining, s.pool_free),
        (1000, 950),
        "data's 50 not held again"
    );
}

/// Off the fast path too (here: grants paced after a block), a background agent spends its
/// own reservation however low the shared pool is; only drawing on the pool yields.
#[test]
fn g2_background_spends_its_own_reservation_on_the_full_path_while_the_pool_is_low() {
    let rig = Rig::new(pool_only());
    let p1 = rig.agent("data", Priority::P1);
    let p2 = rig.agent("ralph", Priority::P2);
    // As above: free 348 - 70 = 278, below 30% of the pool (279).
    rig.gov
        .observe_without_grant(p1, rig.core, &rig.ok(348, 1000, 3600));
    rig.gov.note_retry_after(rig.core, secs(1));
    rig.advance(secs(20)); // past the block and every release window, still paced
    for _ in 0..20 {
        rig.made(go(rig.decide(p2, &Request::read())));
        rig.advance(ms(100));
    }
    let r = refused(rig.decide(p2, &Request::read()));
    assert_eq!(r.reason, RefusalReason::PoolYield);
}

/// The yield is *below* 30% of the pool: a background agent may draw on the pool until
/// the free quota would fall under it, and at exactly 30% it is still served.
#[test]
fn g2_background_draws_on_the_pool_down_to_exactly_30_percent() {
    let rig = Rig::new(pool_only());
    let p1 = rig.agent("data", Priority::P1);
    let p2 = rig.agent("ralph", Priority::P2);
    // Pool size 930; 30% of it is 279. Free = 349 - 70 = 279.
    rig.gov
        .observe_without_grant(p1, rig.core, &rig.ok(349, 1000, 3600));
    spend(&rig, p2, 20); // its own reservation: free is still 329 - 50 = 279
    assert_eq!(rig.gov.snapshot(rig.core).unwrap().pool_free, 279);
    rig.made(go(rig.decide(p2, &Request::read())));
    let r = refused(rig.decide(p2, &Request::read()));
    assert_eq!(r.reason, RefusalReason::PoolYield);
}
