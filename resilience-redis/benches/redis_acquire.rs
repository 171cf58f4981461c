//! G7 throughput: acquires through Redis from 2 OS processes on loopback, and round trips per
//! acquire (`INFO commandstats`). A timed bench binary, not criterion: the load comes from
//! two child processes, which a criterion iteration cannot drive.
//!
//! `cargo bench -p resilience-redis --bench redis_acquire` (needs `redis-server`; otherwise
//! uses `RESILIENCE_REDIS_URL`, else prints a skip line). `G7_BENCH_MS` sets the run length
//! (default 3000), `G7_BENCH_TASKS` the concurrent acquirers per process (default 16).
//! `G7_BENCH_PACING` shares G8 rules through the script: `github` (GitHub's rules and write
//! spacing: most asks are refused by a rule, as grants are never settled), `wide` (the same
//! rule shapes with limits nothing reaches and no concurrency cap: every ask is counted);
//! the acquirers then ask for reads spread over 16 endpoints.

#[path = "../tests/common/server.rs"]
mod server;
#[path = "../tests/common/worker.rs"]
mod worker;

use std::time::Instant;

fn main() {
    if worker::run_if_worker() {
        return;
    }
    let Some(srv) = server::server() else { return };
    let env = |k: &str, d: u64| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let (run_ms, tasks) = (env("G7_BENCH_MS", 3_000), env("G7_BENCH_TASKS", 16));
    let prefix = server::prefix("bench");
    let jobs: Vec<worker::Job> = (0..2)
        .map(|i| {
            let mut j = worker::Job::new("bench", &srv.url, &prefix, &format!("bench{i}"));
            j.limit = 1 << 40;
            j.window_ms = 3_600_000;
            j.ttl_ms = 120_000;
            j.run_ms = run_ms;
            j.tasks = u32::try_from(tasks).unwrap_or(16);
            j.pacing = std::env::var("G7_BENCH_PACING").unwrap_or_else(|_| "none".into());
            j
        })
        .collect();
    let before = srv.calls("evalsha");
    let start = Instant::now();
    let mut children: Vec<_> = jobs.iter().map(|j| j.spawn(&[])).collect();
    let outs: Vec<_> = children.iter_mut().map(worker::lines).collect();
    let (mut grants, mut asks) = (0_u64, 0_u64);
    for (mut c, rx) in children.into_iter().zip(outs) {
        let _ = c.wait();
        for line in rx.iter() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if let ["COUNT", g, a] = f.as_slice() {
                grants += g.parse::<u64>().unwrap_or(0);
                asks += a.parse::<u64>().unwrap_or(0);
            }
        }
    }
    let wall = start.elapsed();
    let calls = srv.calls("evalsha").saturating_sub(before);
    let secs = run_ms as f64 / 1000.0;
    println!(
        "redis_acquire: 2 processes x {tasks} tasks, {run_ms} ms, loopback, shared rules: {}",
        jobs[0].pacing
    );
    println!(
        "  grants {grants} ({:.0}/s), acquire calls {asks} ({:.0}/s)",
        grants as f64 / secs,
        asks as f64 / secs
    );
    if calls > 0 {
        // The joins (one per process) are the only script calls besides the acquires.
        println!(
            "  EVALSHA calls {calls}: {:.3} round trips per acquire (joins included)",
            calls as f64 / asks.max(1) as f64
        );
    }
    if let Some(us) = srv.stat("evalsha", "usec_per_call") {
        println!("  Redis CPU per script call {us:.1} us (INFO commandstats usec_per_call)");
    }
    println!("  wall time incl. process start {:.2}s", wall.as_secs_f64());
}
