//! The squad demo's targets (DESIGN §7), on virtual time, for several seeds.
//!
//! Scenario `incident` (the default) is the incident as it happened: every limit the squad
//! meets is one it trips itself. The naive squad reproduces the incident (a secondary limit
//! tripped within the first minute, a penalty kept shut by retries, a herd when it lifts);
//! the governed squad paces under every limit and gets no rate-limited response at all.
//!
//! Scenario `outage` adds a 60 s block at minute 8 that no client can foresee: the governed
//! squad loses exactly the requests already sent when the first rejection came back, then
//! holds everyone and releases them paced and in priority order (G6).
//!
//! Every run is deterministic for a seed and each is made once for the whole file.

use resilience::clock::Clock;
use resilience_emulator::squad::{self, report, Governed, Metrics, Naive, Run, Scenario};
use resilience_emulator::{Limits, LockoutCause, Outcome, Priority};
use std::sync::OnceLock;

const SEEDS: [u64; 3] = [7, 1, 2026];

#[derive(Debug, Clone, Copy)]
enum Side {
    Naive,
    Governed,
}

fn run(scenario: Scenario, side: Side, seed: u64) -> Run {
    let w = scenario.workload(seed);
    let limits = Limits::github();
    let run = match side {
        Side::Naive => {
            squad::run_virtual(&w, &limits, seed, |env| Ok(Naive::new(env.clock.clone())))
        }
        Side::Governed => {
            squad::run_virtual(&w, &limits, seed, |env| Ok(Governed::github(env, &w)?))
        }
    };
    run.expect("the squad runs")
}

/// The runs of one scenario and side for every seed, made once for all tests of this file.
fn runs(scenario: Scenario, side: Side) -> &'static [(u64, Run)] {
    static CELLS: [OnceLock<Vec<(u64, Run)>>; 4] = [const { OnceLock::new() }; 4];
    let cell = match (scenario, side) {
        (Scenario::Incident, Side::Naive) => &CELLS[0],
        (Scenario::Incident, Side::Governed) => &CELLS[1],
        (Scenario::Outage, Side::Naive) => &CELLS[2],
        (Scenario::Outage, Side::Governed) => &CELLS[3],
    };
    cell.get_or_init(|| SEEDS.iter().map(|&s| (s, run(scenario, side, s))).collect())
}

fn each(scenario: Scenario, side: Side, check: impl Fn(u64, &Run, &Metrics)) {
    for (seed, run) in runs(scenario, side) {
        check(*seed, run, &run.metrics);
    }
}

// ---- incident: the naive squad reproduces it ------------------------------------------------

#[test]
fn incident_naive_squad_trips_a_secondary_limit_itself_and_cascades() {
    let penalty = Limits::github().penalty.as_secs_f64();
    each(Scenario::Incident, Side::Naive, |seed, run, m| {
        assert!(m.rate_limited_responses >= 20, "seed {seed}: {m:#?}");
        // Nothing is scripted: the first lockout is a secondary limit the squad breached.
        let first = run
            .lockouts
            .iter()
            .min_by_key(|l| l.start)
            .expect("a lockout");
        assert!(
            matches!(first.cause, LockoutCause::Secondary(_)),
            "seed {seed}: {first:?}"
        );
        // Cascade: retries into the penalty box keep extending one 60 s penalty.
        assert!(m.longest_lockout_s >= 5.0 * penalty, "seed {seed}: {m:#?}");
        assert!(m.goodput_ratio < 0.9, "seed {seed}: {m:#?}");
    });
}

#[test]
fn incident_naive_squad_flushes_a_thundering_herd_when_the_lockout_ends() {
    // The calls given up during the lockout all rerun at the same reconciliation tick.
    each(Scenario::Incident, Side::Naive, |seed, _, m| {
        assert!(
            m.peak_requests_per_100ms_after_block >= 20,
            "seed {seed}: {m:#?}"
        );
    });
}

// ---- incident: the governed squad meets every target ----------------------------------------

#[test]
fn g8_incident_governed_squad_gets_no_rate_limited_response() {
    // Every limit of the incident is self-inflicted, so pacing (points per endpoint, content
    // creation, concurrency, the primary budget) must keep every request clear.
    each(Scenario::Incident, Side::Governed, |seed, run, m| {
        assert_eq!(m.rate_limited_responses, 0, "seed {seed}: {m:#?}");
        assert!(run.lockouts.is_empty(), "seed {seed}: {:?}", run.lockouts);
    });
}

/// No P0 call of the incident waits a second, the longest included (the percentiles, per
/// call, cannot see one stalled step: `resilience-emulator/tests/p0_wait.rs`).
#[test]
fn g1_g2_incident_governed_p0_calls_never_wait_a_second() {
    each(Scenario::Incident, Side::Governed, |seed, _, m| {
        assert!(m.p0_wait_max_s <= 1.0, "seed {seed}: {m:#?}");
    });
}

/// The targets both scenarios share: no inversions, P0 p95 ≤ 1 s, ≤ 3 requests per 100 ms
/// after any block, goodput ≥ 0.95, every task finished.
fn meets_the_shared_targets(scenario: Scenario) {
    each(scenario, Side::Governed, |seed, _, m| {
        let at = format!("{scenario} seed {seed}: {m:#?}");
        assert_eq!(m.priority_inversions, 0, "{at}");
        // In one process a request reaches the emulator the instant it is admitted.
        assert_eq!(m.p2_arrivals_during_p0_wait, 0, "{at}");
        assert!(m.p0_wait_p95_s <= 1.0, "{at}");
        assert!(m.peak_requests_per_100ms_after_block <= 3, "{at}");
        assert_eq!(m.unfinished_tasks, 0, "{at}");
        assert!(m.goodput_ratio >= 0.95, "{at}");
    });
}

#[test]
fn g1_g6_g8_incident_governed_squad_meets_the_shared_targets() {
    meets_the_shared_targets(Scenario::Incident);
}

#[test]
fn g2_governed_squad_still_serves_the_background_poller() {
    // Priority must not starve the poller: every Ralph round finishes (G2 promotion).
    for scenario in Scenario::ALL {
        each(scenario, Side::Governed, |seed, run, _| {
            let ralph: Vec<_> = run
                .records
                .tasks
                .iter()
                .filter(|t| t.agent == "ralph")
                .collect();
            assert!(
                ralph.len() == 5 && ralph.iter().all(|t| t.finished),
                "{scenario} seed {seed}: {ralph:?}"
            );
            assert!(run.log.iter().any(|e| e.priority == Priority::P2));
        });
    }
}

// ---- outage: an unforeseeable block (G6) ----------------------------------------------------

#[test]
fn g6_outage_governed_squad_loses_only_requests_sent_before_the_first_rejection_arrived() {
    let latency = Scenario::Outage.workload(0).latency;
    each(Scenario::Outage, Side::Governed, |seed, run, m| {
        let limited: Vec<_> = run
            .log
            .iter()
            .filter(|e| e.outcome.is_rate_limited())
            .collect();
        // The block was met (otherwise this scenario would test nothing) ...
        let first_received = limited
            .iter()
            .map(|e| e.at + latency.of(e.kind))
            .min()
            .unwrap_or_else(|| panic!("seed {seed}: the block was never met: {m:#?}"));
        for e in &limited {
            // ... every rejection is the block's, none self-inflicted ...
            assert_eq!(e.outcome, Outcome::Scripted, "seed {seed}: {e:?}");
            // ... and was sent before any rejection could be known: nothing sent after it.
            assert!(
                e.at < first_received,
                "seed {seed}: {e:?} sent after a rejection arrived at {first_received:?}"
            );
        }
    });
}

#[test]
fn g6_outage_governed_squad_holds_everyone_until_the_block_ends() {
    let (start, length) = (squad::OUTAGE_START, squad::OUTAGE_LENGTH);
    each(Scenario::Outage, Side::Governed, |seed, run, _| {
        let last_rejected = run
            .log
            .iter()
            .filter(|e| e.outcome.is_rate_limited())
            .map(|e| e.at)
            .max()
            .expect("the block was met");
        // After the last in-flight rejection, no request is sent until the block is over.
        let inside = run
            .log
            .iter()
            .filter(|e| e.at > last_rejected && e.at < start + length)
            .count();
        assert_eq!(inside, 0, "seed {seed}");
    });
}

#[test]
fn g1_g6_g8_outage_governed_squad_meets_the_shared_targets() {
    meets_the_shared_targets(Scenario::Outage);
}

// ---- both sides, both scenarios ---------------------------------------------------------------

#[test]
fn virtual_runs_are_deterministic_for_a_seed() {
    for (scenario, side) in [
        (Scenario::Incident, Side::Naive),
        (Scenario::Outage, Side::Governed),
    ] {
        let (seed, cached) = &runs(scenario, side)[0];
        let again = run(scenario, side, *seed);
        assert_eq!(again.metrics, cached.metrics, "{scenario} {side:?}");
        assert_eq!(again.log, cached.log, "{scenario} {side:?}");
    }
}

#[test]
fn goodput_is_lower_bound_over_completion_and_at_most_one() {
    for (_, run) in [
        &runs(Scenario::Incident, Side::Naive)[0],
        &runs(Scenario::Outage, Side::Governed)[0],
    ] {
        let m = run.metrics;
        assert!((m.goodput_ratio - m.lower_bound_s / m.completion_s).abs() < 1e-9);
        assert!(m.goodput_ratio <= 1.0, "{m:#?}");
        assert_eq!(m.lower_bound_s, run.bound.total().as_secs_f64());
    }
}

#[test]
fn json_report_has_the_thirteen_metrics_per_side() {
    let (naive, governed) = (
        &runs(Scenario::Incident, Side::Naive)[0].1,
        &runs(Scenario::Incident, Side::Governed)[0].1,
    );
    let v: serde_json::Value =
        serde_json::from_str(&report::json(&naive.metrics, &governed.metrics)).expect("json");
    let object = v.as_object().expect("one object");
    assert_eq!(object.len(), 2);
    let fields = [
        "requests",
        "rate_limited_responses",
        "longest_lockout_s",
        "p0_wait_p50_s",
        "p0_wait_p95_s",
        "p0_wait_max_s",
        "goodput_ratio",
        "lower_bound_s",
        "completion_s",
        "peak_requests_per_100ms_after_block",
        "priority_inversions",
        "p2_arrivals_during_p0_wait",
        "unfinished_tasks",
    ];
    for side in ["naive", "governed"] {
        let metrics = object[side].as_object().expect(side);
        let mut keys: Vec<_> = metrics.keys().map(String::as_str).collect();
        keys.sort_unstable();
        let mut expected = fields.to_vec();
        expected.sort_unstable();
        assert_eq!(keys, expected, "{side}");
    }
    assert_eq!(
        object["governed"]["rate_limited_responses"],
        governed.metrics.rate_limited_responses
    );
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
