//! G8 pacing by the physics of the quota: sliding windows (content creation, points per
//! endpoint), P0 headroom and smoothing, concurrency cap, write spacing, even spend.

mod governor_support;

use governor_support::*;
use resilience_core::governor::{
    Measure, Pacing, Priority, Request, ResourceConfig, Selector, WaitReason, WindowRule,
};
use std::time::Duration;

/// Most grants in any half-open window of `span`.
fn peak_in(times: &[Duration], span: Duration) -> usize {
    let mut t = times.to_vec();
    t.sort();
    (0..t.len())
        .map(|i| t[i..].iter().take_while(|&&u| u < t[i] + span).count())
        .max()
        .unwrap_or(0)
}

fn github_pacing_only() -> ResourceConfig {
    let mut c = ResourceConfig::github();
    c.token_pool.reservation = [0.0; 3];
    c.token_pool.p2_yield_below = 0.0;
    c
}

#[test]
fn g8_content_creation_never_exceeds_80_per_minute_and_keeps_headroom_for_p0() {
    let rig = Rig::new(github_pacing_only());
    let mut jobs = Vec::new();
    for k in 0..6 {
        let a = rig.agent(&format!("builder{k}"), Priority::P1);
        for i in 0..40u64 {
            jobs.push(Job::new(a, Priority::P1, Request::create(), ms(i * 100)));
        }
    }
    let picard = rig.agent("picard", Priority::P0);
    for i in 0..20u64 {
        jobs.push(Job::new(
            picard,
            Priority::P0,
            Request::create(),
            secs(30 + i * 3),
        ));
    }
    let (served, inversions) = simulate(&rig, &jobs);
    assert_eq!(inversions, 0);
    assert!(served.iter().all(|s| s.granted.is_some()));
    let all: Vec<Duration> = served.iter().map(|s| s.granted.unwrap()).collect();
    assert!(peak_in(&all, secs(60)) <= 80, "{}", peak_in(&all, secs(60)));
    let p1: Vec<Duration> = served
        .iter()
        .filter(|s| s.priority == Priority::P1)
        .map(|s| s.granted.unwrap())
        .collect();
    assert!(peak_in(&p1, secs(60)) <= 72);
    // P0's creations find the headroom: none waits more than a second.
    for s in served.iter().filter(|s| s.priority == Priority::P0) {
        assert!(s.granted.unwrap() - s.wanted <= S, "{s:?}");
    }
    // Not over-cautious: 260 creations could not finish before 180 s (three windows).
    assert!(
        *all.iter().max().unwrap() < secs(216),
        "{:?}",
        all.iter().max()
    );
}

#[test]
fn g8_smoothing_spreads_creation_after_a_burst_of_8() {
    let rig = Rig::new(github_pacing_only());
    let a = rig.agent("data", Priority::P1);
    for _ in 0..8 {
        let g = go(rig.decide(a, &Request::create()));
        rig.made(g);
    }
    let w = wait(rig.decide(a, &Request::create()));
    assert_eq!(
        w.reason,
        WaitReason::Rule("content_creating_per_minute".into())
    );
    // 60.5 s / 72 per creation.
    assert_eq!(w.delay, Duration::from_nanos(60_500_000_000 / 72));
}

#[test]
fn g8_points_are_counted_per_endpoint_writes_weigh_5() {
    let mut cfg = github_pacing_only();
    cfg.pacing.windows.retain(|w| w.measure == Measure::Points);
    cfg.pacing.windows[0].smooth_burst = None;
    cfg.pacing.windows[0].p0_headroom = 0;
    let rig = Rig::new(cfg);
    let a = rig.agent("data", Priority::P1);
    for _ in 0..180 {
        let g = go(rig.decide(a, &Request::write().with_endpoint("/pulls")));
        rig.made(g);
    }
    // 900 points spent on /pulls: the next write there waits for the window...
    let w = wait(rig.decide(a, &Request::write().with_endpoint("/pulls")));
    assert_eq!(w.until, ms(60_500));
    rig.gov.cancel(&w.ticket);
    // ...while another endpoint has its own 900.
    assert!(rig
        .decide(a, &Request::read().with_endpoint("/issues"))
        .is_go());
}

#[test]
fn g8_concurrency_cap_holds_until_a_call_completes() {
    let mut cfg = github_pacing_only();
    cfg.pacing.max_concurrent = Some(3);
    let rig = Rig::new(cfg);
    let a = rig.agent("data", Priority::P1);
    let grants: Vec<_> = (0..3)
        .map(|_| go(rig.decide(a, &Request::read())))
        .collect();
    let w = wait(rig.decide(a, &Request::read()));
    assert_eq!(w.reason, WaitReason::Concurrency);
    assert_eq!(w.delay, ms(50));
    let mut grants = grants.into_iter();
    rig.gov
        .observe(grants.next().unwrap(), &rig.ok(4990, 5000, 3600));
    rig.advance(w.delay);
    assert!(rig.gov.resume(&w.ticket, &Request::read()).is_go());
}

#[test]
fn g8_write_spacing_is_an_opt_in_rule_for_mutations_only() {
    let mut cfg = github_pacing_only();
    cfg.pacing = Pacing::github().with_write_spacing(S);
    cfg.token_pool.reservation = [0.0; 3];
    let rig = Rig::new(cfg);
    let a = rig.agent("data", Priority::P1);
    let g = go(rig.decide(a, &Request::write()));
    rig.made(g);
    let w = wait(rig.decide(a, &Request::create()));
    assert_eq!(
        (w.reason, w.delay),
        (WaitReason::Rule("write_spacing".into()), S)
    );
    rig.gov.cancel(&w.ticket);
    assert!(rig.decide(a, &Request::read()).is_go());
}

#[test]
fn g8_even_spend_paces_lower_priorities_so_the_quota_lasts_until_reset() {
    let mut cfg = light_only();
    cfg.pacing.even_spend = true;
    cfg.pacing.even_spend_burst = 0.0;
    let rig = Rig::new(cfg);
    let data = rig.agent("data", Priority::P1);
    let picard = rig.agent("picard", Priority::P0);
    // Amber (30%), above P1's amber onset: only even spend applies. 300 left for 600 s.
    rig.gov
        .observe_without_grant(data, rig.core, &rig.ok(300, 1000, 600));
    let g = go(rig.decide(data, &Request::read()));
    rig.made(g);
    let w = wait(rig.decide(data, &Request::read()));
    assert_eq!((w.reason, w.delay), (WaitReason::EvenSpend, secs(2)));
    rig.gov.cancel(&w.ticket);
    // P0 is exempt.
    assert!(rig.decide(picard, &Request::read()).is_go());
}

#[test]
fn g8_even_spend_burst_lets_a_poll_round_through() {
    let mut cfg = light_only();
    cfg.pacing.even_spend = true; // default burst: 5% of the limit
    let rig = Rig::new(cfg);
    let data = rig.agent("data", Priority::P1);
    rig.gov
        .observe_without_grant(data, rig.core, &rig.ok(350, 1000, 600));
    for _ in 0..45 {
        let g = go(rig.decide(data, &Request::read()));
        rig.made(g);
    }
}

#[test]
fn g8_rules_are_configurable() {
    let mut cfg = light_only();
    cfg.pacing.windows.push(WindowRule::new(
        "search",
        Selector::All,
        Measure::Cost,
        2,
        secs(10),
    ));
    let rig = Rig::new(cfg);
    let a = rig.agent("data", Priority::P1);
    for _ in 0..2 {
        let g = go(rig.decide(a, &Request::read()));
        rig.made(g);
    }
    let w = wait(rig.decide(a, &Request::read()));
    assert_eq!(
        (w.reason, w.until),
        (WaitReason::Rule("search".into()), secs(10))
    );
}

#[test]
fn g8_bad_rules_are_rejected_with_the_field_named() {
    let mut cfg = ResourceConfig::github();
    cfg.pacing.windows[0].p0_headroom = 80;
    let rig = Rig::new(light_only());
    let err = rig.gov.add_resource("bad", cfg).unwrap_err();
    assert!(err.to_string().contains("p0_headroom"), "{err}");
}

#[test]
fn g8_per_endpoint_windows_stay_bounded_and_correct_with_many_endpoints() {
    let mut cfg = github_pacing_only();
    cfg.pacing.windows.retain(|w| w.measure == Measure::Points);
    cfg.pacing.windows[0].smooth_burst = None;
    cfg.pacing.windows[0].p0_headroom = 0;
    let rig = Rig::new(cfg);
    let a = rig.agent("data", Priority::P1);
    // Fill one endpoint, then touch 2000 others (older ones are compacted away)...
    for _ in 0..180 {
        let g = go(rig.decide(a, &Request::write().with_endpoint("/hot")));
        rig.made(g);
    }
    for i in 0..2000 {
        let name = format!("/cold/{i}");
        let g = go(rig.decide(a, &Request::read().with_endpoint(&name)));
        rig.made(g);
    }
    // ...the full one is still full.
    let w = wait(rig.decide(a, &Request::write().with_endpoint("/hot")));
    assert_eq!(w.until, ms(60_500));
}

/// 62 requests a minute, 2 of them P0's headroom, the rest smoothed at one a second with no
/// burst: P0's use of its headroom is free for the others.
fn headroom_rule() -> ResourceConfig {
    let mut cfg = light_only();
    cfg.pacing.windows.push(
        WindowRule::new("per_minute", Selector::All, Measure::Requests, 62, secs(60))
            .smoothed(1)
            .with_p0_headroom(2),
    );
    cfg
}

/// A P1 grant, then P1's next slot is a second later: its delay once P0 has used (or not)
/// its headroom meanwhile.
fn p1_delay_after(
    rig: &Rig,
    p1: resilience_core::governor::AgentId,
    p0_use: impl FnOnce(),
) -> Duration {
    rig.made(go(rig.decide(p1, &Request::read())));
    p0_use();
    let w = wait(rig.decide(p1, &Request::read()));
    rig.gov.cancel(&w.ticket);
    w.delay
}

/// P0 headroom used in one window is not counted in the next: once P0's grants leave the
/// window, its headroom is whole again and using it still does not push the others back.
#[test]
fn g8_p0_headroom_comes_back_when_its_grants_leave_the_window() {
    let rig = Rig::new(headroom_rule());
    let p0 = rig.agent("picard", Priority::P0);
    let p1 = rig.agent("data", Priority::P1);
    let spend_headroom = || {
        rig.made(go(rig.decide(p0, &Request::read())));
        rig.made(go(rig.decide(p0, &Request::read())));
    };
    assert_eq!(p1_delay_after(&rig, p1, spend_headroom), S);
    rig.advance(secs(61));
    assert_eq!(
        p1_delay_after(&rig, p1, spend_headroom),
        S,
        "headroom still spent"
    );
}

/// A P0 grant released unused gives its headroom back: P0 can still spend all of it
/// without pushing the others back.
#[test]
fn g8_a_released_p0_grant_gives_back_its_headroom() {
    let rig = Rig::new(headroom_rule());
    let p0 = rig.agent("picard", Priority::P0);
    let p1 = rig.agent("data", Priority::P1);
    let delay = p1_delay_after(&rig, p1, || {
        rig.gov.release(go(rig.decide(p0, &Request::read())));
        rig.made(go(rig.decide(p0, &Request::read())));
        rig.made(go(rig.decide(p0, &Request::read())));
    });
    assert_eq!(
        delay, S,
        "a released grant still counted against the headroom"
    );
}

/// Requests without an endpoint share one window of a per-endpoint rule; it does not count
/// against an endpoint seen for the first time, whose window is empty.
#[test]
fn g8_requests_without_an_endpoint_do_not_fill_a_new_endpoints_window() {
    let mut cfg = github_pacing_only();
    cfg.pacing.windows.retain(|w| w.measure == Measure::Points);
    cfg.pacing.windows[0].smooth_burst = None;
    cfg.pacing.windows[0].p0_headroom = 0;
    let rig = Rig::new(cfg);
    let a = rig.agent("data", Priority::P1);
    for _ in 0..180 {
        rig.made(go(rig.decide(a, &Request::write())));
    }
    let w = wait(rig.decide(a, &Request::write()));
    rig.gov.cancel(&w.ticket);
    assert!(rig
        .decide(a, &Request::write().with_endpoint("/pulls"))
        .is_go());
}

/// Even spend paces only outside green: once a new window turns the light green again, the
/// schedule it built up in amber holds nobody back.
#[test]
fn g8_even_spend_stops_once_the_light_is_green_again() {
    let mut cfg = light_only();
    cfg.pacing.even_spend = true;
    cfg.pacing.even_spend_burst = 0.0;
    let rig = Rig::new(cfg);
    let data = rig.agent("data", Priority::P1);
    // Amber, 300 left for 600 s: the grant puts the next one 2 s later.
    rig.gov
        .observe_without_grant(data, rig.core, &rig.ok(300, 1000, 600));
    rig.made(go(rig.decide(data, &Request::read())));
    // A new window (a reset an hour on), full again: green.
    rig.gov
        .observe_without_grant(data, rig.core, &rig.ok(1000, 1000, 3600));
    rig.advance(secs(1)); // maintenance due: the full path, which checks every rule
    assert!(
        rig.decide(data, &Request::read()).is_go(),
        "paced by even spend in green"
    );
}
