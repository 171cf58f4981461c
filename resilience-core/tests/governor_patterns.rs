//! The G2 (token pool), G3 (predictive breaker) and G4 (cascade detector)
//! semantics against DESIGN.md §5, on a ManualClock.

mod governor_support;

use governor_support::*;
use resilience_core::governor::{
    AgentId, Observation, Priority, RefusalReason, Request, WaitReason,
};

fn limited(rig: &Rig, a: AgentId, retry_after: &str) -> bool {
    let g = go(rig.decide(a, &Request::read()));
    rig.gov
        .observe(
            g,
            &Observation::new(429).with_header("retry-after", retry_after),
        )
        .sequential
}

// ---------------------------------------------------------------- G2

/// A P1 reading 300 of 1000 left, then a P2 that spends its reservation and is refused
/// (it must yield the pool). Returns (P1, P2).
fn starve_background(rig: &Rig) -> (AgentId, AgentId) {
    let p1 = rig.agent("data", Priority::P1);
    let p2 = rig.agent("ralph", Priority::P2);
    rig.gov
        .observe_without_grant(p1, rig.core, &rig.ok(300, 1000, 3600));
    for _ in 0..20 {
        rig.made(go(rig.decide(p2, &Request::read())));
    }
    assert_eq!(
        refused(rig.decide(p2, &Request::read())).reason,
        RefusalReason::PoolYield
    );
    (p1, p2)
}

#[test]
fn g2_promoted_background_agent_is_demoted_after_a_grant_from_the_line() {
    // No P1 reservation, so data going idle does not change the pool.
    let mut cfg = pool_only();
    cfg.token_pool.reservation = [0.10, 0.0, 0.02];
    let rig = Rig::new(cfg);
    let (_, p2) = starve_background(&rig);
    for _ in 0..4 {
        rig.advance(secs(60)); // it comes back as told: starved, not gone
        assert!(!rig.decide(p2, &Request::read()).is_go());
    }
    rig.advance(secs(60));
    // Promoted; now a block makes it wait in line, then it is granted from the line.
    rig.gov.note_retry_after(rig.core, secs(5));
    let w = wait(rig.decide(p2, &Request::read()));
    rig.advance_to(w.until);
    let g = go(rig.resume(&w.ticket, &Request::read()));
    assert_eq!(g.priority(), Priority::P1, "promoted while starved");
    rig.made(g);
    rig.advance(secs(60));
    assert_eq!(
        refused(rig.decide(p2, &Request::read())).reason,
        RefusalReason::PoolYield,
        "demoted after its grant"
    );
}

#[test]
fn g2_a_background_agent_that_left_is_not_promoted_on_return() {
    // Refused once, then silent past its lease (presumed dead): when it comes back ten
    // minutes later it has not been starved for 5 min, it has been away.
    let rig = Rig::new(pool_only());
    let (p1, p2) = starve_background(&rig);
    for _ in 0..10 {
        rig.advance(secs(60));
        rig.gov.heartbeat(p1);
    }
    assert_eq!(rig.gov.snapshot(rig.core).unwrap().live_agents, 1);
    let d = rig.decide(p2, &Request::read());
    assert!(
        !d.is_go(),
        "a returning background agent is background again: {d:?}"
    );
}

#[test]
fn g2_an_idle_reservation_donated_enlarges_the_shared_pool() {
    let mut cfg = pool_only();
    cfg.token_pool.reservation = [0.0, 0.3, 0.0];
    let rig = Rig::new(cfg);
    let busy = rig.agent("data", Priority::P1);
    let _quiet = rig.agent("seven", Priority::P1);
    rig.gov
        .observe_without_grant(busy, rig.core, &rig.ok(1000, 1000, 3600));
    let s = rig.gov.snapshot(rig.core).unwrap();
    assert_eq!((s.pool_size, s.pool_free), (400, 400));
    rig.advance(secs(59));
    rig.made(go(rig.decide(busy, &Request::read())));
    rig.advance(secs(2));
    let s = rig.gov.snapshot(rig.core).unwrap();
    assert_eq!(
        s.pool_free, 700,
        "999 left, data holds 299: seven's 300 donated"
    );
    assert!(
        s.pool_free <= s.pool_size,
        "the pool's free part exceeds the pool: {s:?}"
    );
}

#[test]
fn g2_reservations_follow_agents_and_the_limit() {
    let rig = Rig::new(pool_only());
    let p0 = rig.agent("picard", Priority::P0);
    rig.gov
        .observe_without_grant(p0, rig.core, &rig.ok(1000, 1000, 3600));
    assert_eq!(rig.gov.snapshot(rig.core).unwrap().pool_size, 900);
    let _p1 = rig.agent("data", Priority::P1);
    assert_eq!(rig.gov.snapshot(rig.core).unwrap().pool_size, 850);
    rig.gov
        .observe_without_grant(p0, rig.core, &rig.ok(2000, 2000, 3600));
    assert_eq!(rig.gov.snapshot(rig.core).unwrap().pool_size, 1700);
}

// ---------------------------------------------------------------- G3

#[test]
fn g3_two_readings_are_not_a_rate() {
    let rig = Rig::new(breaker_only());
    let a = rig.agent("data", Priority::P1);
    for r in [2500, 2300] {
        assert!(
            !rig.gov
                .observe_without_grant(a, rig.core, &reading(&rig, r))
                .breaker_open
        );
        rig.advance(S);
    }
}

#[test]
fn g3_closes_after_exactly_three_good_observations() {
    let rig = Rig::new(breaker_only());
    let a = rig.agent("data", Priority::P1);
    for r in [2500, 2400, 2300] {
        rig.gov
            .observe_without_grant(a, rig.core, &reading(&rig, r));
        rig.advance(S);
    }
    assert!(rig.gov.snapshot(rig.core).unwrap().breaker_open);
    rig.advance(secs(11)); // the fast readings age out
    let mut open = Vec::new();
    for r in [2299, 2298, 2297] {
        open.push(
            rig.gov
                .observe_without_grant(a, rig.core, &reading(&rig, r))
                .breaker_open,
        );
        rig.advance(secs(5));
    }
    assert_eq!(open, [true, true, false]);
}

#[test]
fn g3_a_late_429_from_a_window_already_reset_does_not_open_the_breaker() {
    let rig = Rig::new(breaker_only());
    let a = rig.agent("data", Priority::P1);
    let old_reset = rig.reset_epoch(10);
    rig.gov
        .observe_without_grant(a, rig.core, &rig.ok(4000, 5000, 10));
    rig.advance(secs(11));
    rig.gov
        .observe_without_grant(a, rig.core, &rig.ok(4999, 5000, 3600));
    let late = Observation::from_headers(
        429,
        [
            ("x-ratelimit-limit", "5000".to_string()),
            ("x-ratelimit-remaining", "0".to_string()),
            ("x-ratelimit-reset", old_reset.to_string()),
        ],
    );
    let out = rig.gov.observe_without_grant(a, rig.core, &late);
    assert!(
        !out.breaker_open,
        "a 429 of the window that is over says nothing of this one"
    );
}

/// A breaker tripped by a limit closed only on 3 good observations, but P2 is shed while it
/// is open, so with only background agents nothing was observed: P2 was shed until
/// promotion (5 min) or the quota reset. Now one that has seen nothing for the horizon
/// (30 s), and for a horizon past the block, closes.
#[test]
fn g3_breaker_tripped_by_a_limit_does_not_shed_background_agents_for_long_after_the_block() {
    // Only background agents: a secondary limit with retry-after 5 s trips the breaker;
    // P2 is shed while it is open, so nothing is observed that could close it.
    let rig = Rig::new(breaker_only());
    let r1 = rig.agent("ralph", Priority::P2);
    rig.gov
        .observe_without_grant(r1, rig.core, &rig.ok(4900, 5000, 3600));
    let g = go(rig.decide(r1, &Request::read()));
    let out = rig
        .gov
        .observe(g, &Observation::new(429).with_header("retry-after", "5"));
    assert!(out.breaker_open);
    rig.advance(secs(60)); // block, release windows and a rate window later
    let d = rig.decide(r1, &Request::read());
    assert!(d.is_go(), "still shed a minute after a 5 s block: {d:?}");
}

// ---------------------------------------------------------------- G4

/// Three agents limited a second apart; the clock then a second past the last.
fn cascade(rig: &Rig) -> Vec<AgentId> {
    let agents = limit_three(rig, secs(1));
    rig.advance(secs(1));
    agents
}

#[test]
fn g4_the_window_counts_distinct_agents_not_responses() {
    let rig = Rig::new(light_only());
    let a = rig.agent("a", Priority::P1);
    let b = rig.agent("b", Priority::P1);
    for _ in 0..5 {
        assert!(!limited(&rig, a, "1"));
        rig.advance(secs(2));
    }
    assert!(!limited(&rig, b, "1"));
}

#[test]
fn g4_sequential_mode_is_one_call_at_a_time_for_every_priority() {
    let rig = Rig::new(light_only());
    let agents = cascade(&rig);
    let p0 = rig.agent("picard", Priority::P0);
    rig.advance(secs(20));
    let first = go(rig.decide(agents[0], &Request::read()));
    let w = wait(rig.decide(p0, &Request::read()));
    assert_eq!(w.reason, WaitReason::Sequential);
    rig.gov.release(first);
}

#[test]
fn g4_sequential_mode_serves_three_priorities_in_order() {
    let rig = Rig::new(light_only());
    let agents = cascade(&rig);
    let p0 = rig.agent("picard", Priority::P0);
    let p2 = rig.agent("ralph", Priority::P2);
    rig.advance(secs(20));
    let busy = go(rig.decide(agents[0], &Request::read()));
    let w2 = wait(rig.decide(p2, &Request::read()));
    let w1 = wait(rig.decide(agents[1], &Request::read()));
    let w0 = wait(rig.decide(p0, &Request::read()));
    rig.gov.observe(busy, &rig.ok(4000, 5000, 3600));
    rig.advance(secs(1));
    assert!(!rig.resume(&w2.ticket, &Request::read()).is_go());
    assert!(!rig.resume(&w1.ticket, &Request::read()).is_go());
    let g0 = go(rig.resume(&w0.ticket, &Request::read()));
    assert!(
        !rig.resume(&w1.ticket, &Request::read()).is_go(),
        "P0 in flight"
    );
    rig.gov.observe(g0, &rig.ok(3999, 5000, 3600));
    rig.advance(ms(100));
    assert!(!rig.resume(&w2.ticket, &Request::read()).is_go());
    let g1 = go(rig.resume(&w1.ticket, &Request::read()));
    rig.gov.observe(g1, &rig.ok(3998, 5000, 3600));
    rig.advance(ms(100));
    assert!(rig.resume(&w2.ticket, &Request::read()).is_go());
}

/// Sequential mode ended only on 3 good responses after the block: with no traffic it
/// survived any number of quota windows (unlike the G3 breaker, which a new window closes).
#[test]
fn g4_sequential_mode_does_not_outlive_a_quiet_quota_window() {
    let rig = Rig::new(light_only());
    let agents = cascade(&rig);
    // Nobody calls for two hours: the block and the quota window are long over.
    rig.advance(secs(7200));
    let a = go(rig.decide(agents[0], &Request::read()));
    let b = rig.decide(agents[1], &Request::read());
    assert!(b.is_go(), "still sequential two hours later: {b:?}");
    rig.gov.release(a);
}

#[test]
fn g4_sequential_mode_ends_even_if_an_in_flight_call_is_never_answered() {
    use resilience_core::governor::Decision;
    let rig = Rig::new(light_only());
    let agents = cascade(&rig);
    rig.advance(secs(20));
    let lost = go(rig.decide(agents[0], &Request::read()));
    drop(lost); // never observed nor released: its agent crashed mid-call, lease kept
    let start = rig.now();
    let mut d = rig.decide(agents[1], &Request::read());
    while let Decision::Wait(w) = &d {
        assert!(rig.now() - start < secs(120), "held back for 2 min");
        rig.advance_to(w.until);
        for &a in &agents {
            rig.gov.heartbeat(a);
        }
        d = rig.resume(&w.ticket, &Request::read());
    }
    // The lost call is settled by its call bound (30 to 60 s): the line moves again.
    let waited = rig.now() - start;
    assert!(waited >= secs(30) && waited <= secs(61), "{waited:?}");
    rig.gov.observe(go(d), &rig.ok(4000, 5000, 3600));
}

#[test]
fn g3_does_not_stay_open_across_a_quota_reset() {
    let rig = Rig::new(breaker_only());
    let a = rig.agent("data", Priority::P1);
    for r in [2500, 2400, 2300] {
        rig.gov
            .observe_without_grant(a, rig.core, &rig.ok(r, 5000, 100));
        rig.advance(S);
    }
    assert!(rig.gov.snapshot(rig.core).unwrap().breaker_open);
    rig.advance(secs(100));
    assert!(!rig.gov.snapshot(rig.core).unwrap().breaker_open);
}

#[test]
fn g3_readings_across_a_reset_are_not_one_rate() {
    let rig = Rig::new(breaker_only());
    let a = rig.agent("data", Priority::P1);
    // The old window ends at 3 s; its last readings fall fast.
    for r in [300, 250, 200] {
        rig.gov
            .observe_without_grant(a, rig.core, &rig.ok(r, 5000, 3 - rig.now().as_secs()));
        rig.advance(S);
    }
    rig.advance(ms(500));
    for r in [5000, 4999, 4998] {
        let out = rig
            .gov
            .observe_without_grant(a, rig.core, &rig.ok(r, 5000, 3600));
        assert!(!out.breaker_open, "{r}");
        rig.advance(ms(300));
    }
}

#[test]
fn g4_downstream_warning_expires_after_the_window() {
    let rig = Rig::new(light_only());
    let up = rig.agent("up", Priority::P1);
    let down = rig.agent("down", Priority::P1);
    rig.gov.add_dependency(up, down).unwrap();
    limited(&rig, up, "1");
    rig.advance(secs(2));
    let g = go(rig.decide(down, &Request::read()));
    assert_eq!(g.upstream_limited(), Some(up));
    rig.gov.release(g);
    rig.advance(secs(29));
    let g = go(rig.decide(down, &Request::read()));
    assert_eq!(g.upstream_limited(), None);
    rig.gov.release(g);
}
