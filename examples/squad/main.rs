//! The Squad incident, twice: 9 agents sharing one GitHub token retry on their own (naive),
//! then go through the rate governor (governed). Prints a side-by-side table and writes a
//! plot of remaining quota and requests over time.
//!
//! Two scenarios: `incident` (the default) is the incident as it happened, every limit
//! self-inflicted; `outage` adds a 60 s block at minute 8 that no client can foresee.
//!
//! ```sh
//! cargo run --release --example squad                  # loopback HTTP emulator, scaled real time
//! cargo run --release --example squad -- --virtual-time --seed 7
//! cargo run --release --example squad -- --virtual-time --scenario outage
//! cargo run --release --example squad -- --virtual-time --json
//! cargo run --release --example squad -- --backend redis --processes 3   # G7, see below
//! cargo run --release --example squad -- --backend redis --processes 3 --shared-pacing
//! ```
//!
//! `--backend redis` runs the governed side as `--processes` OS processes that share one
//! quota through Redis (`--redis-url`, or a throwaway `redis-server` started here), against
//! one emulator on scaled real time (`multi.rs`); the naive side runs as usual. Each
//! worker's governor then paces to its share of GitHub's secondary limits; with
//! `--shared-pacing`, Redis judges the whole limits for every worker together
//! (`QuotaSpec::shared_pacing`, times divided by `--speedup`), and each worker's governor
//! keeps the whole rules to order its own agents.
//!
//! The emulator, the workload, both schedulers, the metrics and the lower bound live in
//! `resilience_emulator::squad`; this file only parses flags and prints.

mod multi;

use clap::{Parser, ValueEnum};
use resilience_emulator::squad::{
    self, report, Governed, Naive, Progress, Run, RunError, Scenario,
};
use resilience_emulator::Limits;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

#[derive(Parser, Debug)]
#[command(about = "The Squad incident: naive retry vs the rate governor, on a GitHub emulator")]
struct Args {
    /// Run in process on a virtual clock: finishes in well under a second, same output for
    /// the same seed.
    #[arg(long)]
    virtual_time: bool,
    /// Print one JSON object `{"naive": {...}, "governed": {...}}` instead of the table.
    #[arg(long)]
    json: bool,
    /// `incident` (self-inflicted limits only) or `outage` (plus an unforeseeable 60 s block
    /// at minute 8).
    #[arg(long, default_value_t = Scenario::Incident)]
    scenario: Scenario,
    /// Seed for the agents' thinking times, the emulator's retry-after coin and the
    /// governor's jitter.
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// In real-time mode, how many times faster than real time the emulated clock runs.
    #[arg(long, default_value_t = 30.0)]
    speedup: f64,
    /// Where to write the SVG plot.
    #[arg(long, default_value = "target/squad.svg")]
    svg: PathBuf,
    /// `memory`: the governed squad in this process, one governor. `redis`: as
    /// `--processes` OS processes, each with its own governor, sharing the quota in Redis.
    #[arg(long, value_enum, default_value_t = Backend::Memory)]
    backend: Backend,
    /// With `--backend redis`: the Redis to share the quota through (default: start a
    /// throwaway `redis-server` on a free loopback port).
    #[arg(long)]
    redis_url: Option<String>,
    /// With `--backend redis`: how many worker processes split the 9 agents.
    #[arg(long, default_value_t = 3)]
    processes: usize,
    /// With `--backend redis`: Redis paces the whole secondary limits (points and
    /// creations per minute, concurrency) for every process together, instead of each
    /// process's governor pacing to its share of them.
    #[arg(long)]
    shared_pacing: bool,
    /// The emulator restarts a secondary-limit penalty on every request made during it, an
    /// assumption (GitHub warns that requests made while limited may get an integration
    /// banned, but does not say this). Turn it off to see how much of the naive side's
    /// outage comes from it.
    #[arg(long)]
    no_penalty_restart: bool,
    /// Internal: run as a worker of `--backend redis` (its job is in `SQUAD_*` variables).
    #[arg(long, hide = true)]
    worker: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Backend {
    Memory,
    Redis,
}

fn main() {
    let args = Args::parse();
    if args.worker || multi::is_worker() {
        if let Err(e) = multi::worker_main() {
            eprintln!("squad worker: {e}");
            std::process::exit(2);
        }
        return;
    }
    if let Err(e) = run(&args) {
        eprintln!("squad: {e}");
        std::process::exit(2);
    }
}

fn run(args: &Args) -> Result<(), RunError> {
    if !(args.speedup.is_finite() && args.speedup > 0.0) {
        return Err(format!("--speedup must be a positive number, got {}", args.speedup).into());
    }
    let workload = args.scenario.workload(args.seed);
    let limits = Limits {
        extend_penalty_on_blocked_request: !args.no_penalty_restart,
        ..Limits::github()
    };
    let redis = args.backend == Backend::Redis;
    if redis && args.virtual_time {
        return Err("--backend redis runs real processes: it cannot use --virtual-time".into());
    }
    if args.shared_pacing && !redis {
        return Err("--shared-pacing shares the pacing through Redis: add --backend redis".into());
    }
    let (naive, governed) = if args.virtual_time {
        let naive = squad::run_virtual(&workload, &limits, args.seed, |env| {
            Ok(Naive::new(env.clock.clone()))
        })?;
        let governed = squad::run_virtual(&workload, &limits, args.seed, |env| {
            Ok(Governed::github(env, &workload)?)
        })?;
        (naive, governed)
    } else {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?;
        let quiet = args.json;
        if redis {
            // Both sides at once, each on its own emulator: the naive side's lockouts keep
            // it idle most of the time, and the demo stays under 3 minutes at x30.
            let board = Arc::new(Mutex::new([None, None]));
            let naive_board = board.clone();
            let naive = squad::run_http(
                &workload,
                &limits,
                args.seed,
                args.speedup,
                |env| Ok(Naive::new(env.clock.clone())),
                move |p| show_both(&naive_board, 0, p, quiet),
            );
            let governed = governed_processes(args, move |p| show_both(&board, 1, p, quiet));
            let (naive, governed) = rt.block_on(async { tokio::join!(naive, governed) });
            end_progress(quiet);
            (naive?, governed?)
        } else {
            let naive = rt.block_on(squad::run_http(
                &workload,
                &limits,
                args.seed,
                args.speedup,
                |env| Ok(Naive::new(env.clock.clone())),
                move |p| progress("naive   ", p, quiet),
            ))?;
            end_progress(quiet);
            let governed = rt.block_on(squad::run_http(
                &workload,
                &limits,
                args.seed,
                args.speedup,
                |env| Ok(Governed::github(env, &workload)?),
                move |p| progress("governed", p, quiet),
            ))?;
            end_progress(quiet);
            (naive, governed)
        }
    };
    write_svg(args, &naive, &governed, limits.primary_limit)?;
    if args.json {
        println!("{}", report::json(&naive.metrics, &governed.metrics));
    } else {
        let mode = if args.virtual_time {
            "virtual time".to_owned()
        } else if redis {
            format!(
                "loopback HTTP, real time x{}; governed: {} processes sharing the quota{} in Redis",
                args.speedup,
                args.processes,
                if args.shared_pacing {
                    " and the pacing rules"
                } else {
                    ""
                }
            )
        } else {
            format!("loopback HTTP, real time x{}", args.speedup)
        };
        println!(
            "Squad scenario `{}` ({}), seed {}, {mode}\n",
            args.scenario,
            args.scenario.describe(),
            args.seed
        );
        print!("{}", report::table(&naive.metrics, &governed.metrics));
        println!("\nplot: {}", args.svg.display());
    }
    Ok(())
}

/// The governed side as `--processes` workers (this binary again) sharing a Redis quota.
async fn governed_processes(
    args: &Args,
    on_tick: impl Fn(Progress) + Send + Sync + 'static,
) -> Result<Run, RunError> {
    let local;
    let redis_url = match &args.redis_url {
        Some(url) => url.clone(),
        None => {
            local = multi::LocalRedis::start()
                .ok_or("--backend redis: no --redis-url and no redis-server on the PATH")?;
            local.url.clone()
        }
    };
    let job = multi::Job {
        scenario: args.scenario,
        seed: args.seed,
        speedup: args.speedup,
        processes: args.processes,
        redis_url,
        prefix: multi::unique_prefix(),
        shared_pacing: args.shared_pacing,
    };
    let exe = std::env::current_exe()?;
    multi::run_governed(
        &job,
        || {
            let mut c = std::process::Command::new(&exe);
            c.arg("--worker");
            c
        },
        on_tick,
    )
    .await
}

fn write_svg(args: &Args, naive: &Run, governed: &Run, limit: u32) -> Result<(), RunError> {
    if let Some(dir) = args.svg.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let title = format!("Squad {} (seed {})", args.scenario, args.seed);
    std::fs::write(&args.svg, report::svg(&title, naive, governed, limit))?;
    Ok(())
}

/// The live progress line, on stderr so `--json` output stays one object.
fn progress(label: &str, p: Progress, quiet: bool) {
    if quiet {
        return;
    }
    eprint!(
        "\r{label}  t={:>6.0}s  requests={:>5}  rate-limited={:>5}  remaining={:>5}  tasks {:>2}/{}   ",
        p.now.as_secs_f64(),
        p.requests,
        p.rate_limited,
        p.remaining,
        p.tasks_done,
        p.tasks_total
    );
    let _ = std::io::stderr().flush();
}

/// One progress line for both sides running at once (slot 0 naive, 1 governed).
fn show_both(board: &Mutex<[Option<Progress>; 2]>, slot: usize, p: Progress, quiet: bool) {
    if quiet {
        return;
    }
    let mut b = board.lock().unwrap_or_else(|e| e.into_inner());
    b[slot] = Some(p);
    let side = |label: &str, p: Option<Progress>| {
        p.map_or(String::new(), |p| {
            format!(
                "{label} t={:>5.0}s req={:>5} limited={:>5} tasks {:>2}/{}",
                p.now.as_secs_f64(),
                p.requests,
                p.rate_limited,
                p.tasks_done,
                p.tasks_total
            )
        })
    };
    eprint!(
        "\r{}  |  {}   ",
        side("naive", b[0]),
        side("governed", b[1])
    );
    let _ = std::io::stderr().flush();
}

fn end_progress(quiet: bool) {
    if !quiet {
        eprintln!();
    }
}
