//! G7 on the squad: the governed side of the incident as 3 OS processes (this test binary
//! run again as workers), each with its own governor, sharing one quota through a throwaway
//! `redis-server`, against one loopback emulator on scaled real time (x20: about 70 s in a
//! debug build). The targets are the issue's: at most 2 rate-limited responses across all
//! processes, no priority inversion, P0 p95 wait at most 1 s, every task finished, goodput
//! at least 0.90.
//!
//! Skips with one loud line if `redis-server` is not on the PATH.

#[path = "../examples/squad/multi.rs"]
mod multi;

use resilience_emulator::squad::Scenario;
use std::process::Command;

/// x20: a scheduling hiccup of 20 real ms is 0.4 s of emulated time, inside the P0 target
/// of 1 s; at x60 a loaded 2-core machine pushed the P0 p95 past it (1.1 and 1.5 s in two
/// runs with both tests at once), and x30 failed once with two runs sharing the machine.
/// About 70 s a test in a debug build.
const SPEEDUP: f64 = 20.0;

/// The two runs take turns: each is 3 workers and an emulator on real time, and two at once
/// on a 2-core machine measure the machine, not the governor.
static ONE_RUN_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn worker_command(test: &'static str) -> impl Fn() -> Command {
    move || {
        let mut c = Command::new(std::env::current_exe().expect("the test binary's path"));
        c.args([test, "--exact", "--nocapture", "--test-threads", "1"]);
        c
    }
}

fn run(test: &'static str, scenario: Scenario) -> Option<resilience_emulator::squad::Run> {
    if multi::is_worker() {
        multi::worker_main().expect("worker");
        return None;
    }
    let _turn = ONE_RUN_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some(redis) = multi::LocalRedis::start() else {
        eprintln!("!!!! skipped {test}: no redis-server on the PATH !!!!");
        return None;
    };
    let job = multi::Job {
        scenario,
        seed: 7,
        speedup: SPEEDUP,
        processes: 3,
        redis_url: redis.url.clone(),
        prefix: multi::unique_prefix(),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let run = rt
        .block_on(multi::run_governed(&job, worker_command(test), |_| {}))
        .expect("the multi-process run");
    drop(redis);
    Some(run)
}

/// Each inversion with the P0 call it delayed: what a reader of the count needs.
fn print_inversions(run: &resilience_emulator::squad::Run) {
    for (e, c) in resilience_emulator::squad::inverted(&run.log, &run.records) {
        eprintln!(
            "inversion: {} {} {} admitted at {:.3} s, served at {:.3} s, while {} (P0) waited from {:.3} to {:.3} s",
            e.agent,
            e.method,
            e.path,
            e.admitted.unwrap_or(e.at).as_secs_f64(),
            e.at.as_secs_f64(),
            c.agent,
            c.wanted.as_secs_f64(),
            c.sent.as_secs_f64()
        );
    }
}

#[test]
fn g7_squad_incident_governed_by_three_processes_through_redis_meets_the_targets() {
    const TEST: &str =
        "g7_squad_incident_governed_by_three_processes_through_redis_meets_the_targets";
    let Some(run) = run(TEST, Scenario::Incident) else {
        return;
    };
    let m = run.metrics;
    eprintln!("{m:#?}");
    print_inversions(&run);
    let agents: std::collections::BTreeSet<&str> =
        run.log.iter().map(|e| e.agent.as_str()).collect();
    assert_eq!(
        agents.len(),
        9,
        "every agent reached the emulator: {agents:?}"
    );
    let tasks = Scenario::Incident.workload(7).task_count();
    assert_eq!(run.records.tasks.len(), tasks, "every task reported back");
    assert!(m.rate_limited_responses <= 2, "{m:?}");
    assert!(m.p0_wait_p95_s <= 1.0, "{m:?}");
    assert_eq!(m.unfinished_tasks, 0, "{m:?}");
    assert!(m.goodput_ratio >= 0.90, "{m:?}");
    // A P2 request let through while a P0 call waited. Across processes the instant that
    // counts is the admission, not the arrival: a request admitted before the P0 call was
    // wanted may still reach the emulator during its wait (`p2_arrivals_during_p0_wait`,
    // printed above, not a target). Before the express allowance covered Picard's parallel
    // steps of ten reads (8 then, 32 now), the ninth and tenth waited a Redis round trip and
    // Ralph's polls were let through meanwhile: 9 and 1 inversions in two runs at x20.
    assert_eq!(m.priority_inversions, 0, "{m:?}");
}

/// The outage scenario: a block at minute 8 that no client can foresee. The first rejection
/// a worker sees blocks every worker through Redis (G6 across processes), so the squad still
/// finishes near the bound. Known gaps, measured with the express lane over five runs (x30,
/// x20): rejections 2, 1, 3, 1, 7 (the requests already in flight when the block starts: one
/// agent's parallel step of blob reads can put several on the wire within a real
/// millisecond; the single in-process governor has 3 in virtual time) and priority
/// inversions 0, 0, 0, 3, 0. So this test does not hold the outage to the issue's "at most 2
/// rejections, no inversion"; those targets are the incident's, asserted above.
#[test]
fn g7_g6_squad_outage_governed_by_three_processes_shares_the_block() {
    const TEST: &str = "g7_g6_squad_outage_governed_by_three_processes_shares_the_block";
    let Some(run) = run(TEST, Scenario::Outage) else {
        return;
    };
    let m = run.metrics;
    eprintln!("{m:#?}");
    assert!(
        !run.lockouts.is_empty(),
        "the scripted block happened: {m:?}"
    );
    // This bound catches a worker that keeps sending into the 60 s block (the naive squad
    // gets hundreds); each worker's own governor also stops at its own first rejection, so
    // it does not by itself prove the block is shared.
    assert!(m.rate_limited_responses <= 12, "{m:?}");
    assert!(m.p0_wait_p95_s <= 1.0, "{m:?}");
    assert_eq!(m.unfinished_tasks, 0, "{m:?}");
    assert!(m.goodput_ratio >= 0.90, "{m:?}");
}
