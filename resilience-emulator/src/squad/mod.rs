//! The Squad incident as a reproducible experiment.
//!
//! [`incident`] is the workload (9 agents, 10 pull requests, Ralph polling every 5 minutes)
//! with only the limits the squad trips itself; [`outage`] adds one block at minute 8 that no
//! client can foresee; a [`Scenario`] names either. A [`Scheduler`] decides when each agent
//! calls and retries ([`Naive`] is what agents do alone; a rate governor is the other side); the
//! [`Driver`] runs the agents; [`measure`] turns the emulator's log and the agents' records
//! into [`Metrics`], judged against the [`lower_bound`].
//!
//! [`run_virtual`] does all of it on paused tokio time in milliseconds, deterministically for
//! a seed; [`run_http`] does it against the loopback server on scaled real time.

mod bound;
mod driver;
mod governed;
mod incident;
mod metrics;
pub mod report;
mod scenario;
mod scheduler;
pub mod split;
mod transport;
mod workload;

pub use bound::{lower_bound, LowerBound};
pub use driver::{CallRecord, Driver, Records, TaskRecord};
pub use governed::{governor_priority, governor_request, Governed};
pub use incident::{incident, outage, OUTAGE_LENGTH, OUTAGE_START};
pub use metrics::{
    arrivals_during_p0_wait, herd_peak, inversions, inverted, measure, merged, percentile, Metrics,
    HERD_BUCKET, HERD_WINDOW,
};
pub use scenario::{Scenario, UnknownScenario};
pub use scheduler::{CallInfo, Naive, Refusal, Scheduler};
pub use split::AnchoredClock;
pub use transport::{Http, InProcess, Transport};
pub use workload::{AgentScript, Call, Step, Task, Workload};

pub(crate) use crate::model::endpoint_template as template;

use crate::limits::{Limits, LimitsError};
use crate::model::{Emulator, Lockout, LogEntry};
use crate::server::EmulatorServer;
use crate::time::{ScaledSleeper, TokioClock};
use resilience_core::clock::Clock;
use resilience_core::sleep::AsyncSleeper;
use std::sync::Arc;
use std::time::Duration;

/// The endpoint template a path is paced under (ids and hashes folded), as [`Governed`]
/// passes it to the governor; for schedulers built outside this crate.
pub fn endpoint(path: &str) -> String {
    template(path)
}

/// The token every agent of the squad shares.
pub const TOKEN: &str = "squad-token";

/// A fixed wall-clock origin (2026-03-21T00:00:00Z) so virtual runs print the same epochs.
const UNIX_ORIGIN: Duration = Duration::from_secs(1_774_051_200);

/// Why a run could not start: bad limits, a scheduler that could not be built, no runtime,
/// no loopback socket.
pub type RunError = Box<dyn std::error::Error + Send + Sync>;

/// What a scheduler may be built from.
#[derive(Debug, Clone)]
pub struct Env {
    /// The run's clock (virtual, or scaled real time).
    pub clock: Arc<dyn Clock>,
    /// The run's sleeper, consistent with the clock.
    pub sleeper: Arc<dyn AsyncSleeper>,
    /// The emulator (for inspection; agents reach it only through the transport).
    pub emulator: Arc<Emulator>,
    /// The run's seed.
    pub seed: u64,
}

/// Everything a run produced.
#[derive(Debug, Clone)]
pub struct Run {
    /// The measure.
    pub metrics: Metrics,
    /// The lower bound's terms.
    pub bound: LowerBound,
    /// The emulator's request log.
    pub log: Vec<LogEntry>,
    /// The emulator's lockouts.
    pub lockouts: Vec<Lockout>,
    /// The agents' records.
    pub records: Records,
}

/// Live figures for a progress line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    /// Emulated time.
    pub now: Duration,
    /// Requests so far.
    pub requests: usize,
    /// Rate-limited answers so far.
    pub rate_limited: usize,
    /// Primary quota left.
    pub remaining: u32,
    /// Tasks done (finished or abandoned).
    pub tasks_done: usize,
    /// Tasks in the workload.
    pub tasks_total: usize,
}

impl Progress {
    /// The emulator's view at `now`, with the task counts the caller keeps.
    pub fn of(emu: &Emulator, now: Duration, tasks_done: usize, tasks_total: usize) -> Self {
        let log = emu.log();
        Self {
            now,
            requests: log.len(),
            rate_limited: log.iter().filter(|e| e.outcome.is_rate_limited()).count(),
            remaining: emu
                .snapshot(TOKEN, now)
                .map_or(emu.limits().primary_limit, |s| s.remaining),
            tasks_done,
            tasks_total,
        }
    }
}

fn emulator(
    limits: &Limits,
    clock: Arc<dyn Clock>,
    w: &Workload,
    seed: u64,
) -> Result<Arc<Emulator>, LimitsError> {
    let emu = Emulator::new(limits.clone(), clock, seed)?;
    for (start, len) in &w.scripted_blocks {
        emu.script_block(*start, *len);
    }
    Ok(Arc::new(emu))
}

fn finish(emu: &Emulator, records: Records, w: &Workload) -> Run {
    let bound = lower_bound(w, emu.limits());
    let (log, lockouts) = (emu.log(), emu.lockouts());
    Run {
        metrics: measure(&log, &lockouts, &records, &bound),
        bound,
        log,
        lockouts,
        records,
    }
}

/// Runs `workload` in process on virtual time (a current-thread tokio runtime with paused
/// time, built here), with the scheduler `make` builds. Same seed, same run.
pub fn run_virtual<S: Scheduler>(
    workload: &Workload,
    limits: &Limits,
    seed: u64,
    make: impl FnOnce(&Env) -> Result<S, RunError>,
) -> Result<Run, RunError> {
    limits.validate()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()?;
    rt.block_on(async {
        let clock: Arc<dyn Clock> = Arc::new(TokioClock::new(1.0).with_unix_origin(UNIX_ORIGIN));
        let sleeper: Arc<dyn AsyncSleeper> = Arc::new(ScaledSleeper::new(1.0));
        let emu = emulator(limits, clock.clone(), workload, seed)?;
        let env = Env {
            clock: clock.clone(),
            sleeper: sleeper.clone(),
            emulator: emu.clone(),
            seed,
        };
        let scheduler = Arc::new(make(&env)?);
        let transport = Arc::new(InProcess::new(
            emu.clone(),
            workload.latency,
            sleeper.clone(),
        ));
        let driver = Driver::new(scheduler, transport, clock, sleeper, TOKEN);
        let records = driver.run(workload).await;
        Ok(finish(&emu, records, workload))
    })
}

/// Runs `workload` against a loopback [`EmulatorServer`] over HTTP on real time sped up
/// `speedup` times; `on_tick` gets a [`Progress`] every 200 ms of real time. Call it on a
/// multi-threaded tokio runtime.
pub async fn run_http<S: Scheduler>(
    workload: &Workload,
    limits: &Limits,
    seed: u64,
    speedup: f64,
    make: impl FnOnce(&Env) -> Result<S, RunError>,
    on_tick: impl Fn(Progress) + Send + 'static,
) -> Result<Run, RunError> {
    let clock: Arc<dyn Clock> = Arc::new(TokioClock::new(speedup));
    let sleeper: Arc<dyn AsyncSleeper> = Arc::new(ScaledSleeper::new(speedup));
    let emu = emulator(limits, clock.clone(), workload, seed)?;
    let server = EmulatorServer::start(emu.clone(), workload.latency, sleeper.clone()).await?;
    let env = Env {
        clock: clock.clone(),
        sleeper: sleeper.clone(),
        emulator: emu.clone(),
        seed,
    };
    let scheduler = Arc::new(make(&env)?);
    let transport = Arc::new(Http::new(server.url()));
    let driver = Driver::new(scheduler, transport, clock.clone(), sleeper, TOKEN);
    let records = driver.records();
    let tasks_total = workload.task_count();
    let ticker = {
        let (emu, clock) = (emu.clone(), clock.clone());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(200)).await;
                let done = records.lock().tasks.len();
                on_tick(Progress::of(&emu, clock.now(), done, tasks_total));
            }
        })
    };
    let records = driver.run(workload).await;
    ticker.abort();
    server.shutdown();
    Ok(finish(&emu, records, workload))
}
