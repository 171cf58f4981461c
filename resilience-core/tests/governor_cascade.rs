//! G4 cascade detector: 3 agents limited within 30 s switch to sequential mode (one call at
//! a time, priority order) until the limit clears; the dependency graph warns downstream.

mod governor_support;

use governor_support::*;
use resilience_core::governor::{AgentId, Observation, Priority, Request, WaitReason};

#[test]
fn g4_three_agents_limited_within_30s_switch_to_sequential_mode() {
    let rig = Rig::new(light_only());
    let agents = limit_three(&rig, secs(10));
    assert!(rig.gov.snapshot(rig.core).unwrap().sequential);
    rig.advance(secs(20)); // past the block and every release window
    let first = go(rig.decide(agents[0], &Request::read()));
    let w = wait(rig.decide(agents[1], &Request::read()));
    assert_eq!(w.reason, WaitReason::Sequential);
    rig.gov.observe(first, &rig.ok(4000, 5000, 3600));
    rig.advance(w.delay);
    assert!(rig.gov.resume(&w.ticket, &Request::read()).is_go());
}

#[test]
fn g4_limits_spread_wider_than_30s_do_not() {
    let rig = Rig::new(light_only());
    for i in 0..3 {
        let a = rig.agent(&format!("a{i}"), Priority::P1);
        let g = go(rig.decide(a, &Request::read()));
        let out = rig
            .gov
            .observe(g, &Observation::new(429).with_header("retry-after", "1"));
        assert!(!out.sequential);
        rig.advance(secs(16));
    }
}

#[test]
fn g4_sequential_mode_serves_in_priority_order() {
    let rig = Rig::new(light_only());
    let agents = limit_three(&rig, secs(10));
    let p0 = rig.agent("picard", Priority::P0);
    let p2 = rig.agent("ralph", Priority::P2);
    rig.advance(secs(20));
    let busy = go(rig.decide(agents[0], &Request::read()));
    let w2 = wait(rig.decide(p2, &Request::read()));
    let w0 = wait(rig.decide(p0, &Request::read()));
    rig.gov.observe(busy, &rig.ok(4000, 5000, 3600));
    rig.advance(w2.delay.max(w0.delay));
    // Ralph asks first, but Picard is in line: Picard goes, Ralph waits.
    assert!(!rig.gov.resume(&w2.ticket, &Request::read()).is_go());
    assert!(rig.gov.resume(&w0.ticket, &Request::read()).is_go());
}

#[test]
fn g4_clears_after_the_block_lifts_and_three_good_responses() {
    let rig = Rig::new(light_only());
    let agents = limit_three(&rig, secs(10));
    rig.advance(secs(20));
    for (i, &a) in agents.iter().enumerate() {
        assert!(
            rig.gov.snapshot(rig.core).unwrap().sequential,
            "still on after {i}"
        );
        let g = go(rig.decide(a, &Request::read()));
        rig.advance(ms(200));
        rig.gov.observe(g, &rig.ok(4000, 5000, 3600));
        rig.advance(ms(50));
    }
    assert!(!rig.gov.snapshot(rig.core).unwrap().sequential);
    rig.advance(secs(60)); // past the recovery pacing too
    let a = go(rig.decide(agents[0], &Request::read()));
    let b = go(rig.decide(agents[1], &Request::read()));
    rig.gov.release(a);
    rig.gov.release(b);
}

#[test]
fn g4_dependency_graph_warns_downstream_agents() {
    let rig = Rig::new(light_only());
    let ralph = rig.agent("ralph", Priority::P2);
    let picard = rig.agent("picard", Priority::P0);
    let data = rig.agent("data", Priority::P1);
    let other = rig.agent("troi", Priority::P1);
    rig.gov.add_dependency(ralph, picard).unwrap();
    rig.gov.add_dependency(picard, data).unwrap();
    rig.gov.add_dependency(data, ralph).unwrap(); // a cycle is harmless
    let g = go(rig.decide(ralph, &Request::read()));
    rig.gov
        .observe(g, &Observation::new(429).with_header("retry-after", "1"));
    rig.advance(secs(2));
    let gp = go(rig.decide(picard, &Request::read()));
    assert_eq!(gp.upstream_limited(), Some(ralph));
    rig.gov.release(gp);
    rig.advance(ms(100));
    let gd = go(rig.decide(data, &Request::read()));
    assert_eq!(
        gd.upstream_limited(),
        Some(ralph),
        "transitively downstream"
    );
    rig.gov.release(gd);
    rig.advance(ms(100));
    let go_other = go(rig.decide(other, &Request::read()));
    assert_eq!(go_other.upstream_limited(), None);
    rig.gov.release(go_other);
    rig.advance(secs(29));
    let late = go(rig.decide(picard, &Request::read()));
    assert_eq!(
        late.upstream_limited(),
        None,
        "the warning lasts the 30 s window"
    );
    assert!(rig
        .gov
        .add_dependency(ralph, AgentId::from_index(99))
        .is_err());
}

/// The downstream warning rides on grants of the fast path too (green, calm, nobody in
/// line), for exactly the cascade window after the upstream limit.
#[test]
fn g4_fast_path_grants_carry_the_downstream_warning_until_the_window_ends() {
    let (rig, up, down) = downstream_of_a_limited_upstream();
    // The first of each pair takes the full path when maintenance is due; the second is on
    // the fast path.
    for (t, warned) in [
        (ms(2_000), Some(up)),
        (ms(29_500), Some(up)),
        (ms(30_000), None),
    ] {
        rig.advance_to(t - ms(100));
        rig.gov.release(go(rig.decide(down, &Request::read())));
        rig.advance_to(t);
        let g = go(rig.decide(down, &Request::read()));
        assert_eq!(g.upstream_limited(), warned, "at {t:?}");
        rig.gov.release(g);
    }
}

/// "Within 30 s" includes 30 s: limits at 0, 15 and 30 s switch sequential mode on.
#[test]
fn g4_three_limits_with_the_first_exactly_30s_old_switch_sequential_mode_on() {
    let rig = Rig::new(light_only());
    limit_three(&rig, secs(15)); // asserts sequential mode
}

/// G4: a downstream agent's grants carry its upstream's limit for the cascade window after
/// it, not at its end, on the full path too (maintenance due at that instant).
#[test]
fn g4_a_full_path_grant_at_the_end_of_the_warning_window_is_not_warned() {
    let (rig, up, down) = downstream_of_a_limited_upstream();
    for (t, warned) in [(secs(29), Some(up)), (secs(30), None)] {
        rig.advance_to(t - S);
        let _ = rig.gov.snapshot(rig.core); // the next sweep is due at `t`
        rig.gov.heartbeat(up);
        rig.advance_to(t);
        let g = go(rig.decide(down, &Request::read()));
        assert_eq!(g.upstream_limited(), warned, "at {t:?}");
        rig.gov.release(g);
    }
}

/// `down` depends on `up`, and `up` has just met a limit (Retry-After 1 s) at 0 s. No release
/// jitter and no recovery pacing: calm again as soon as the block ends.
fn downstream_of_a_limited_upstream() -> (Rig, AgentId, AgentId) {
    let mut cfg = light_only();
    cfg.retry_windows.windows = [(ms(0), ms(0)); 3];
    cfg.retry_windows.recovery = ms(0);
    let rig = Rig::new(cfg);
    let up = rig.agent("up", Priority::P1);
    let down = rig.agent("down", Priority::P1);
    rig.gov.add_dependency(up, down).unwrap();
    let g = go(rig.decide(up, &Request::read()));
    let _ = rig
        .gov
        .observe(g, &Observation::new(429).with_header("retry-after", "1"));
    (rig, up, down)
}
