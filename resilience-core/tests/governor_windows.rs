//! G6 priority retry windows: one shared block after a rate limit, released in priority
//! order with per-priority jitter windows, paced.

mod governor_support;

use governor_support::*;
use resilience_core::governor::{
    LimitKind, Observation, Priority, RefusalReason, Request, WaitReason,
};
use std::time::Duration;

fn limited_403_secondary() -> Observation {
    Observation::new(403)
        .with_remaining(4290)
        .with_body(r#"{"message":"You have exceeded a secondary rate limit."}"#)
}

#[test]
fn g6_retry_after_sets_one_shared_block_for_every_agent() {
    let rig = Rig::new(light_only());
    let a = rig.agent("data", Priority::P1);
    let b = rig.agent("picard", Priority::P0);
    let g = go(rig.decide(a, &Request::read()));
    let out = rig
        .gov
        .observe(g, &Observation::new(429).with_header("Retry-After", "30"));
    assert_eq!(out.limited, Some(LimitKind::Secondary));
    assert_eq!(out.blocked_until, Some(secs(30)));
    // Every agent, even P0 that was never limited, waits for the same block.
    let w = wait(rig.decide(b, &Request::read()));
    assert_eq!(w.reason, WaitReason::Blocked);
    assert!(
        w.until >= secs(30) && w.until < secs(30) + ms(500),
        "{:?}",
        w.until
    );
    let w = wait(rig.decide(a, &Request::read()));
    assert!(w.until >= secs(30) + ms(500) && w.until < secs(30) + ms(3500));
}

#[test]
fn g6_without_retry_after_the_block_is_60s() {
    let rig = Rig::new(light_only());
    let a = rig.agent("data", Priority::P1);
    let g = go(rig.decide(a, &Request::read()));
    let out = rig.gov.observe(g, &limited_403_secondary());
    assert_eq!(out.blocked_until, Some(secs(60)));
}

#[test]
fn g6_http_date_retry_after_is_read_against_the_wall_clock() {
    let rig = Rig::new(light_only());
    let a = rig.agent("data", Priority::P1);
    let g = go(rig.decide(a, &Request::read()));
    // ManualClock's wall clock starts at 2026-01-01T00:00:00Z.
    let obs = Observation::new(429).with_header("Retry-After", "Thu, 01 Jan 2026 00:00:45 GMT");
    assert_eq!(rig.gov.observe(g, &obs).blocked_until, Some(secs(45)));
}

#[test]
fn g6_spent_quota_blocks_until_reset_and_pauses_everyone() {
    let rig = Rig::new(light_only());
    let a = rig.agent("picard", Priority::P0);
    let g = go(rig.decide(a, &Request::read()));
    let obs = Observation::from_headers(
        403,
        [
            ("x-ratelimit-remaining", "0".to_string()),
            ("x-ratelimit-limit", "5000".to_string()),
            ("x-ratelimit-reset", rig.reset_epoch(120).to_string()),
        ],
    )
    .with_body("API rate limit exceeded for user ID 1.");
    let out = rig.gov.observe(g, &obs);
    assert_eq!(out.limited, Some(LimitKind::Primary));
    assert_eq!(out.blocked_until, Some(secs(121)), "reset + 1 s margin");
    let r = refused(rig.decide(a, &Request::read()));
    assert_eq!(r.reason, RefusalReason::Exhausted);
    // The reset, plus a draw from P0's release window.
    assert!(
        r.retry_after >= secs(120) && r.retry_after < secs(120) + ms(500),
        "{:?}",
        r.retry_after
    );
}

#[test]
fn g6_note_retry_after_hook_blocks_and_never_shortens() {
    let rig = Rig::new(light_only());
    let a = rig.agent("data", Priority::P1);
    rig.gov.note_retry_after(rig.core, secs(10));
    rig.gov.note_retry_after(rig.core, secs(5));
    let snap = rig.gov.snapshot(rig.core).unwrap();
    assert_eq!(snap.blocked_for, Some(secs(10)));
    let w = wait(rig.decide(a, &Request::read()));
    assert!(w.until >= secs(10) + ms(500));
}

#[test]
fn g6_waiters_are_released_in_priority_order_within_their_windows_and_paced() {
    let rig = Rig::new(light_only());
    let agents: Vec<_> = (0..18)
        .map(|i| {
            let p = Priority::from_index(i % 3).unwrap();
            (rig.agent(&format!("a{i}"), p), p)
        })
        .collect();
    rig.gov.note_retry_after(rig.core, secs(60));
    // Everyone asks during the block, at scattered times.
    let jobs: Vec<Job> = agents
        .iter()
        .enumerate()
        .map(|(i, &(a, p))| Job::new(a, p, Request::read(), ms(1000 + 997 * i as u64)))
        .collect();
    let (served, inversions) = simulate(&rig, &jobs);
    assert_eq!(inversions, 0);
    assert_eq!(served.len(), 18);
    let block_end = secs(60);
    // Priority order: every P0 before any P1, every P1 before any P2.
    let prios: Vec<Priority> = served.iter().map(|s| s.priority).collect();
    let mut sorted = prios.clone();
    sorted.sort();
    assert_eq!(prios, sorted, "released out of priority order");
    for s in &served {
        let t = s.granted.unwrap() - block_end;
        let (lo, hi) = [(0, 500), (500, 3500), (3500, 9500)][s.priority.index()];
        // Inside its window, or pushed just past it by the pacing of earlier releases.
        assert!(
            t >= ms(lo) && t < ms(hi) + ms(50 * 6),
            "{:?} released at +{t:?}",
            s.priority
        );
    }
    // Paced: consecutive grants at least 50 ms apart, so never more than 2 in 100 ms.
    let times: Vec<Duration> = served.iter().map(|s| s.granted.unwrap()).collect();
    for pair in times.windows(2) {
        assert!(pair[1] - pair[0] >= ms(50), "{pair:?}");
    }
    for (i, &t) in times.iter().enumerate() {
        let n = times[i..].iter().take_while(|&&u| u < t + ms(100)).count();
        assert!(n <= 2, "{n} grants in 100 ms from {t:?}");
    }
}

#[test]
fn g6_a_block_extended_while_waiting_moves_the_release() {
    let rig = Rig::new(light_only());
    let a = rig.agent("data", Priority::P1);
    rig.gov.note_retry_after(rig.core, secs(10));
    let w = wait(rig.decide(a, &Request::read()));
    rig.advance(secs(5));
    rig.gov.note_retry_after(rig.core, secs(20)); // now blocked until 25 s
    rig.advance_to(w.until);
    let w2 = wait(rig.gov.resume(&w.ticket, &Request::read()));
    assert!(w2.until >= secs(25) + ms(500) && w2.until < secs(25) + ms(3500));
    rig.advance_to(w2.until);
    assert!(rig.gov.resume(&w2.ticket, &Request::read()).is_go());
}

#[test]
fn g6_after_a_block_grants_stay_paced_for_the_recovery_period() {
    let rig = Rig::new(light_only());
    let a = rig.agent("data", Priority::P1);
    rig.gov.note_retry_after(rig.core, secs(1));
    rig.advance(secs(30)); // long after every window, inside the 60 s recovery
    let g = go(rig.decide(a, &Request::read()));
    rig.made(g);
    let w = wait(rig.decide(a, &Request::read()));
    assert_eq!((w.reason, w.delay), (WaitReason::Recovery, ms(50)));
    rig.gov.cancel(&w.ticket);
    rig.advance(secs(31)); // past the recovery: bursts are allowed again
    for _ in 0..5 {
        let g = go(rig.decide(a, &Request::read()));
        rig.made(g);
    }
}

#[test]
fn g6_windows_are_configurable() {
    let mut cfg = light_only();
    cfg.retry_windows.default_block = secs(5);
    cfg.retry_windows.windows = [(ms(0), ms(1)), (ms(2000), ms(2001)), (ms(4000), ms(4001))];
    let rig = Rig::new(cfg);
    let a = rig.agent("data", Priority::P1);
    let g = go(rig.decide(a, &Request::read()));
    assert_eq!(
        rig.gov.observe(g, &limited_403_secondary()).blocked_until,
        Some(secs(5))
    );
    let until = wait(rig.decide(a, &Request::read())).until;
    assert!(until >= secs(7) && until < secs(7) + ms(1), "{until:?}");
}

/// §6 backoff: a secondary limit with no retry-after blocks 60 s; each one that follows
/// with no good response in between doubles it, up to the cap; a good response starts over.
#[test]
fn g6_repeated_secondary_limits_back_off_exponentially_up_to_the_cap() {
    let mut cfg = light_only();
    cfg.retry_windows.max_default_block = secs(200);
    let rig = Rig::new(cfg);
    let a = rig.agent("data", Priority::P0);
    let mut blocks = Vec::new();
    for _ in 0..4 {
        let _ = rig
            .gov
            .observe_without_grant(a, rig.core, &limited_403_secondary());
        let b = rig.gov.snapshot(rig.core).unwrap().blocked_for.unwrap();
        blocks.push(b.as_secs());
        rig.advance(b + secs(5));
    }
    assert_eq!(blocks, [60, 120, 200, 200]);
    rig.call(a, &rig.ok(4200, 5000, 3000));
    let _ = rig
        .gov
        .observe_without_grant(a, rig.core, &limited_403_secondary());
    assert_eq!(
        rig.gov.snapshot(rig.core).unwrap().blocked_for,
        Some(secs(60)),
        "a good response in between starts the backoff over"
    );
}

#[test]
fn g6_a_backoff_cap_below_the_first_block_is_a_named_error() {
    let mut cfg = light_only();
    cfg.retry_windows.max_default_block = secs(30);
    let rig = Rig::new(light_only());
    let err = rig.gov.add_resource("search", cfg).unwrap_err().to_string();
    assert!(err.contains("retry_windows.max_default_block"), "{err}");
}

/// Calls already in flight when a block began bring more limited responses inside it: they
/// are the same limit and do not double the block.
#[test]
fn g6_limits_answered_inside_the_block_do_not_double_it() {
    let rig = Rig::new(light_only());
    let a = rig.agent("data", Priority::P1);
    let grants: Vec<_> = (0..5)
        .map(|_| go(rig.decide(a, &Request::read())))
        .collect();
    for g in grants {
        let _ = rig.gov.observe(g, &limited_403_secondary());
        rig.advance(ms(100));
    }
    // 60 s from the last of them (at 0.4 s), not 120 s or more.
    let left = rig.gov.snapshot(rig.core).unwrap().blocked_for.unwrap();
    assert_eq!(left, secs(60) - ms(100));
}

/// A quota spent by the governor's own count (no 429 seen): the agents paused until the
/// reset are told different times, spread over their priority's window, and the reset
/// itself is paced, so they never all come back at one instant.
#[test]
fn g6_agents_paused_until_a_reset_come_back_spread_and_paced() {
    let mut cfg = light_only();
    cfg.quota.window = secs(3600);
    let rig = Rig::new(cfg);
    let p0 = rig.agent("picard", Priority::P0);
    rig.made(go(rig.decide(p0, &Request::read().with_cost(5000))));
    let agents: Vec<_> = (0..50)
        .map(|i| rig.agent(&format!("a{i}"), Priority::P1))
        .collect();
    let mut hints: Vec<_> = agents
        .iter()
        .map(|&a| refused(rig.decide(a, &Request::read())).retry_after)
        .collect();
    let reset = secs(3600);
    assert!(hints
        .iter()
        .all(|&h| h >= reset + ms(500) && h < reset + ms(3500)));
    hints.sort();
    hints.dedup();
    assert!(hints.len() >= 45, "{} distinct hints of 50", hints.len());
    // All of them asking at once right after the reset: one grant, the rest paced.
    rig.advance_to(reset);
    let granted = agents
        .iter()
        .filter(|&&a| rig.decide(a, &Request::read()).is_go())
        .count();
    assert_eq!(granted, 1);
}
