//! The governed squad as N OS processes sharing one quota through Redis (G7).
//!
//! The parent starts the emulator's loopback server on a clock anchored at a wall-clock
//! instant a little ahead ([`AnchoredClock`]), then N workers (this same binary, told what
//! to do through `SQUAD_*` environment variables). Worker `k` runs agents `k, k + N, ...`
//! with its own governor (priority order, pacing to its share of the secondary limits) and
//! the quota shared in Redis (primary quota, G6 block), on the same anchored clock. Each
//! worker prints its agents' records as `SQUAD ...` lines; the parent merges them with the
//! emulator's log and measures the run with the in-process demo's code.
//!
//! With [`Job::shared_pacing`], the secondary limits are not split: every worker gives Redis
//! GitHub's whole G8 rules ([`QuotaSpec::shared_pacing`]), their times divided by the speedup
//! (Redis counts real time), and its own governor keeps the same whole rules on the emulated
//! clock (see [`worker_config`]).
//!
//! Shared by the example (`examples/squad/main.rs`) and `tests/squad_redis.rs`.

#![allow(dead_code)] // each includer uses a different part

use resilience_core::clock::Clock;
use resilience_core::governor::ResourceId;
use resilience_core::governor::{
    AgentId, Cascade, Governor, Observation, Pacing, ResetAt, ResourceConfig, SpacingRule,
    WindowRule,
};
use resilience_core::sleep::AsyncSleeper;
use resilience_emulator::server::EmulatorServer;
use resilience_emulator::squad::{
    self, split, AnchoredClock, CallInfo, CallRecord, Driver, Http, Progress, Records, Refusal,
    Run, RunError, Scenario, Scheduler, TaskRecord,
};
use resilience_emulator::time::ScaledSleeper;
use resilience_emulator::{Emulator, Limits, Response};
use resilience_redis::{
    acquire_shared, QuotaSpec, RedisQuota, RedisQuotaConfig, SharedPermit, SharedQuota, WaitPolicy,
};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Set (to `k/n`) in a worker's environment.
pub const WORKER_ENV: &str = "SQUAD_WORKER";

/// Real time between the parent's start and the anchored zero: enough for N workers to
/// start, connect to Redis and wait, so every agent starts at emulated zero.
const START_LEAD: Duration = Duration::from_secs(3);

/// One multi-process run.
#[derive(Debug, Clone)]
pub struct Job {
    /// Which workload.
    pub scenario: Scenario,
    /// Its seed.
    pub seed: u64,
    /// How many times faster than real time the emulated clock runs.
    pub speedup: f64,
    /// Worker processes.
    pub processes: usize,
    /// The Redis every worker shares.
    pub redis_url: String,
    /// Key prefix in Redis (unique per run, so runs never share a window).
    pub prefix: String,
    /// Share GitHub's whole G8 rules through Redis ([`QuotaSpec::shared_pacing`]) instead
    /// of giving each worker's governor its part of them.
    pub shared_pacing: bool,
}

impl Job {
    fn env(&self, k: usize, start_unix: Duration, emulator_url: &str) -> Vec<(String, String)> {
        [
            (WORKER_ENV, format!("{k}/{}", self.processes)),
            ("SQUAD_SCENARIO", self.scenario.to_string()),
            ("SQUAD_SEED", self.seed.to_string()),
            ("SQUAD_SPEEDUP", self.speedup.to_string()),
            ("SQUAD_START_UNIX_NS", start_unix.as_nanos().to_string()),
            ("SQUAD_EMULATOR_URL", emulator_url.to_owned()),
            ("SQUAD_REDIS_URL", self.redis_url.clone()),
            ("SQUAD_PREFIX", self.prefix.clone()),
            (
                "SQUAD_SHARED_PACING",
                u8::from(self.shared_pacing).to_string(),
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
    }
}

/// Whether this process was started as a worker.
pub fn is_worker() -> bool {
    std::env::var_os(WORKER_ENV).is_some()
}

fn now_unix() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
}

/// A unique Redis key prefix for one run.
pub fn unique_prefix() -> String {
    format!("squad-{}-{}", std::process::id(), now_unix().as_millis())
}

// ---------------------------------------------------------------------------------------
// Parent

/// Runs the governed side of `job` as `job.processes` workers, each started from
/// `command()` (this binary, set up so that it calls [`worker_main`]); `on_tick` gets a
/// [`Progress`] every 200 ms of real time.
pub async fn run_governed(
    job: &Job,
    command: impl Fn() -> Command,
    on_tick: impl Fn(Progress) + Send + Sync + 'static,
) -> Result<Run, RunError> {
    let on_tick = Arc::new(on_tick);
    let on_end = on_tick.clone();
    if job.processes == 0 || job.processes > 9 {
        return Err(format!("--processes must be 1 to 9, got {}", job.processes).into());
    }
    let workload = job.scenario.workload(job.seed);
    let limits = Limits::github();
    let start_unix = now_unix() + START_LEAD;
    let clock: Arc<dyn Clock> = Arc::new(AnchoredClock::new(start_unix, job.speedup));
    let sleeper: Arc<dyn AsyncSleeper> = Arc::new(ScaledSleeper::new(job.speedup));
    let emu = Arc::new(Emulator::new(limits.clone(), clock.clone(), job.seed)?);
    for (start, len) in &workload.scripted_blocks {
        emu.script_block(*start, *len);
    }
    let server = EmulatorServer::start(emu.clone(), workload.latency, sleeper).await?;
    let done = Arc::new(AtomicUsize::new(0));
    let mut waits = Vec::new();
    for k in 0..job.processes {
        let mut cmd = command();
        cmd.envs(job.env(k, start_unix, &server.url()))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let child = cmd.spawn()?;
        let done = done.clone();
        waits.push(tokio::task::spawn_blocking(move || {
            collect(k, child, &done)
        }));
    }
    let tasks_total = workload.task_count();
    let ticker = {
        let (emu, clock, done) = (emu.clone(), clock.clone(), done.clone());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(200)).await;
                let finished = done.load(Ordering::Relaxed);
                on_tick(Progress::of(&emu, clock.now(), finished, tasks_total));
            }
        })
    };
    let mut lines = Vec::new();
    let mut failure = None;
    for w in waits {
        match w.await? {
            Ok(mut l) => lines.append(&mut l),
            Err(e) => failure = failure.or(Some(e)),
        }
    }
    ticker.abort();
    server.shutdown();
    if let Some(e) = failure {
        return Err(e.into());
    }
    let records = parse(&lines, &workload)?;
    // The last line shows the end, not the last 200 ms tick.
    on_end(Progress::of(
        &emu,
        clock.now(),
        records.tasks.len(),
        tasks_total,
    ));
    let bound = squad::lower_bound(&workload, &limits);
    let (log, lockouts) = (emu.log(), emu.lockouts());
    Ok(Run {
        metrics: squad::measure(&log, &lockouts, &records, &bound),
        bound,
        log,
        lockouts,
        records,
    })
}

/// Reads worker `k`'s `SQUAD` lines (counting finished tasks live) until it exits.
fn collect(
    k: usize,
    mut child: std::process::Child,
    done: &AtomicUsize,
) -> Result<Vec<String>, String> {
    let mut stderr = child.stderr.take();
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(e) = stderr.as_mut() {
            let _ = e.read_to_string(&mut s);
        }
        s
    });
    let mut lines = Vec::new();
    if let Some(out) = child.stdout.take() {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if let Some(rest) = line.strip_prefix("SQUAD ") {
                if rest.starts_with("DONE") {
                    done.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                lines.push(rest.to_owned());
            }
        }
    }
    let status = child.wait().map_err(|e| format!("worker {k}: {e}"))?;
    let err = err_reader.join().unwrap_or_default();
    if !status.success() {
        let tail: Vec<&str> = err.lines().rev().take(12).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(format!(
            "worker {k} failed ({status}):\n{}",
            tail.join("\n")
        ));
    }
    Ok(lines)
}

/// `CALL agent wanted_ns sent_ns ok attempts` and `TASK agent finished end_ns name`; the
/// priority is the agent's in the workload.
fn parse(lines: &[String], workload: &squad::Workload) -> Result<Records, String> {
    let priority: BTreeMap<&str, _> = workload
        .agents
        .iter()
        .map(|a| (a.name.as_str(), a.priority))
        .collect();
    let bad = |l: &str| format!("unreadable worker line: {l}");
    let ns = |s: &str| s.parse::<u64>().map(Duration::from_nanos);
    let mut records = Records::default();
    for l in lines {
        let f: Vec<&str> = l.splitn(6, ' ').collect();
        match f.as_slice() {
            ["CALL", agent, wanted, sent, ok, attempts] => {
                let p = priority.get(agent).ok_or_else(|| bad(l))?;
                records.calls.push(CallRecord {
                    agent: (*agent).to_owned(),
                    priority: *p,
                    wanted: ns(wanted).map_err(|_| bad(l))?,
                    sent: ns(sent).map_err(|_| bad(l))?,
                    ok: *ok == "1",
                    attempts: attempts.parse().map_err(|_| bad(l))?,
                });
            }
            ["TASK", agent, finished, end, name @ ..] => records.tasks.push(TaskRecord {
                agent: (*agent).to_owned(),
                name: name.join(" "),
                finished: *finished == "1",
                end: ns(end).map_err(|_| bad(l))?,
            }),
            _ => return Err(bad(l)),
        }
    }
    Ok(records)
}

// ---------------------------------------------------------------------------------------
// Worker

fn var(name: &str) -> Result<String, RunError> {
    std::env::var(name).map_err(|_| format!("worker: {name} not set").into())
}

/// What a worker does: run its agents through its governor and the shared quota, print
/// their records. Call it when [`is_worker`].
pub fn worker_main() -> Result<(), RunError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(worker())
}

async fn worker() -> Result<(), RunError> {
    let kn = var(WORKER_ENV)?;
    let (k, n) = kn
        .split_once('/')
        .and_then(|(k, n)| Some((k.parse::<usize>().ok()?, n.parse::<usize>().ok()?)))
        .ok_or_else(|| format!("worker: {WORKER_ENV}={kn}, expected k/n"))?;
    let scenario: Scenario = var("SQUAD_SCENARIO")?.parse()?;
    let seed: u64 = var("SQUAD_SEED")?.parse()?;
    let speedup: f64 = var("SQUAD_SPEEDUP")?.parse()?;
    let start = Duration::from_nanos(var("SQUAD_START_UNIX_NS")?.parse()?);
    let whole = scenario.workload(seed);
    let limits = Limits::github();
    let part = split::part(&whole, k, n).ok_or_else(|| format!("worker {k} of {n}"))?;
    let shared_pacing = match var("SQUAD_SHARED_PACING")?.as_str() {
        "0" => false,
        "1" => true,
        other => {
            return Err(format!("worker: SQUAD_SHARED_PACING={other}, expected 0 or 1").into())
        }
    };
    let config = worker_config(&whole, &part, shared_pacing)?;
    let anchored = AnchoredClock::new(start, speedup);
    let clock: Arc<dyn Clock> = Arc::new(anchored);
    let sleeper: Arc<dyn AsyncSleeper> = Arc::new(ScaledSleeper::new(speedup));
    let governor = Governor::builder()
        .clock(clock.clone())
        .sleeper(sleeper.clone())
        .seed(seed.wrapping_add(k as u64 + 1))
        .build()?;
    // G4 across the workers: agents limited in different processes add up (its window in
    // Redis's real time, as the rules').
    let cascade = Cascade {
        window: config.cascade.window.div_f64(speedup),
        ..config.cascade.clone()
    };
    let resource = governor.add_resource("core", config)?;
    let mut agents = BTreeMap::new();
    for a in &part.agents {
        let id = governor.register(&a.name, squad::governor_priority(a.priority))?;
        agents.insert(a.name.clone(), id);
    }
    let redis = RedisQuota::connect(
        RedisQuotaConfig::new(var("SQUAD_REDIS_URL")?)
            .prefix(var("SQUAD_PREFIX")?)
            .node(format!("squad-worker-{k}"))
            .wait(scaled_wait(speedup)),
    )
    .await?;
    let hour = Duration::from_secs(3_600).div_f64(speedup);
    let mut spec = QuotaSpec::new(u64::from(limits.primary_limit), hour).shared_cascade(cascade);
    if shared_pacing {
        spec = spec.shared_pacing(real_time_pacing(&ResourceConfig::github().pacing, speedup));
    }
    let quota = redis.resource("core", spec).await?;
    let scheduler = Arc::new(RedisGoverned {
        // One governor per worker process, alive for all of it: leaking it gives the
        // permits the `'static` lifetime a scheduler's permit needs.
        governor: Box::leak(Box::new(governor)),
        quota,
        resource,
        agents,
        clock: clock.clone(),
        speedup,
        max_attempts: 20,
    });
    let transport = Arc::new(Http::new(var("SQUAD_EMULATOR_URL")?));
    tokio::time::sleep(anchored.until_start()).await;
    let driver = Driver::new(scheduler, transport, clock, sleeper, squad::TOKEN);
    let live = driver.records();
    let progress = tokio::spawn(async move {
        let mut seen = 0;
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let now = live.lock().tasks.len();
            for _ in seen..now {
                println!("SQUAD DONE");
            }
            seen = now;
        }
    });
    let records = driver.run(&part).await;
    progress.abort();
    let mut out = std::io::stdout().lock();
    for c in &records.calls {
        writeln!(
            out,
            "SQUAD CALL {} {} {} {} {}",
            c.agent,
            c.wanted.as_nanos(),
            c.sent.as_nanos(),
            u8::from(c.ok),
            c.attempts
        )?;
    }
    for t in &records.tasks {
        writeln!(
            out,
            "SQUAD TASK {} {} {} {}",
            t.agent,
            u8::from(t.finished),
            t.end.as_nanos(),
            t.name
        )?;
    }
    out.flush()?;
    drop(redis);
    Ok(())
}

/// The worker's own governor: its part of GitHub's rules, or with shared pacing the whole
/// rules. Whole, not none: Redis then judges the sum of every process's grants, and the
/// local rules order this process's agents by priority before they reach it (a waiter on
/// a rule holds back lower priorities, smoothing keeps a P0 call's wait for the next unit
/// short) and keep one process from asking Redis for what the rules cannot give. With none,
/// every agent would ask Redis at once, and a rule's freed unit would go to whichever
/// sleeper asks first, whatever its priority. A part would pace each process to a third of
/// the limits, and the shared rules would never bind. (On the incident, whole and none both
/// met the targets, within run-to-run noise: its governed side seldom meets a rule.)
fn worker_config(
    whole: &squad::Workload,
    part: &squad::Workload,
    shared_pacing: bool,
) -> Result<ResourceConfig, RunError> {
    if shared_pacing {
        Ok(ResourceConfig::github())
    } else {
        Ok(split::config_for_part(
            whole,
            part,
            ResourceConfig::github(),
        )?)
    }
}

/// `pacing` with every time in it divided by `speedup`: the shared rules are counted on the
/// Redis server's clock (real time), the emulator's limits on its clock, `speedup` times
/// faster.
pub fn real_time_pacing(pacing: &Pacing, speedup: f64) -> Pacing {
    let s = |d: &mut Duration| *d = d.div_f64(speedup);
    let mut p = pacing.clone();
    // Destructured so that a new time in the rules cannot be left unscaled unnoticed.
    let Pacing {
        even_spend: _,
        even_spend_burst: _,
        max_concurrent: _,
        windows,
        spacings,
        poll_interval,
        unrelated_hold,
    } = &mut p;
    for w in windows {
        let WindowRule {
            name: _,
            selector: _,
            measure: _,
            limit: _,
            window,
            margin,
            smooth_burst: _,
            p0_headroom: _,
            per_endpoint: _,
        } = w;
        s(window);
        s(margin);
    }
    for sp in spacings {
        let SpacingRule {
            name: _,
            selector: _,
            gap,
        } = sp;
        s(gap);
    }
    s(poll_interval);
    *poll_interval = (*poll_interval).max(Duration::from_millis(1));
    s(unrelated_hold);
    p
}

/// The shared quota's waits are on the Redis server's clock (real time): scale them so that
/// they last what they would in emulated time.
fn scaled_wait(speedup: f64) -> WaitPolicy {
    let d = WaitPolicy::default();
    let s = |x: Duration| x.div_f64(speedup);
    WaitPolicy {
        windows: d.windows.map(|(a, b)| (s(a), s(b))),
        poll: s(d.poll).max(Duration::from_millis(5)),
        wake_jitter: s(d.wake_jitter),
        secondary_block: s(d.secondary_block),
        max_secondary_block: s(d.max_secondary_block),
    }
}

/// Asks the worker's governor, then the shared quota ([`acquire_shared`]), before every
/// attempt; reports every response to both.
struct RedisGoverned {
    governor: &'static Governor,
    quota: SharedQuota,
    resource: ResourceId,
    agents: BTreeMap<String, AgentId>,
    clock: Arc<dyn Clock>,
    speedup: f64,
    max_attempts: u32,
}

impl RedisGoverned {
    /// The response in real time for the shared quota: `retry-after` and
    /// `x-ratelimit-reset` are emulated times, the shared quota waits on Redis's clock.
    fn shared_observation(&self, response: &Response) -> Observation {
        let timed = |k: &str| {
            k.eq_ignore_ascii_case("retry-after") || k.eq_ignore_ascii_case("x-ratelimit-reset")
        };
        let mut obs = Observation::from_headers(
            response.status,
            response
                .headers
                .iter()
                .filter(|(k, _)| !timed(k))
                .map(|(k, v)| (k, v)),
        )
        .with_body(&response.body);
        if let Some(secs) = response.header_u64("retry-after") {
            obs = obs.with_retry_after(Duration::from_secs(secs).div_f64(self.speedup));
        }
        if let Some(reset) = response.header_u64("x-ratelimit-reset") {
            let left = Duration::from_secs(reset).saturating_sub(self.clock.unix_time());
            obs = obs.with_reset(ResetAt::After(left.div_f64(self.speedup).as_secs().max(1)));
        }
        obs
    }
}

impl Scheduler for RedisGoverned {
    type Permit = SharedPermit<'static>;

    async fn acquire(&self, call: CallInfo<'_>) -> Result<SharedPermit<'static>, Refusal> {
        let Some(&agent) = self.agents.get(call.agent) else {
            return Err(Refusal::GiveUp);
        };
        let endpoint = squad::endpoint(call.path);
        let req = squad::governor_request(call.kind).with_endpoint(&endpoint);
        acquire_shared(self.governor, &self.quota, agent, self.resource, req)
            .await
            .map_err(|e| {
                Refusal::Later(
                    e.retry_after()
                        .unwrap_or(Duration::from_secs(1))
                        .max(Duration::from_millis(1)),
                )
            })
    }

    fn complete(&self, permit: SharedPermit<'static>, _call: CallInfo<'_>, response: &Response) {
        let local = Observation::from_headers(
            response.status,
            response.headers.iter().map(|(k, v)| (k, v)),
        )
        .with_body(&response.body);
        let shared = self.shared_observation(response);
        let (local_permit, grant, quota) = permit.into_parts();
        if let Some(p) = local_permit {
            let _ = p.observe(&local);
        }
        // The local governor has seen it (it orders this process's next attempt); the
        // shared quota learns it one round trip later.
        tokio::spawn(async move {
            let _ = quota.observe(grant, &shared).await;
        });
    }

    fn retry_delay(
        &self,
        _call: CallInfo<'_>,
        attempt: u32,
        _response: &Response,
    ) -> Option<Duration> {
        (attempt < self.max_attempts).then_some(Duration::ZERO)
    }
}

// ---------------------------------------------------------------------------------------
// A throwaway redis-server

/// A `redis-server` on a free loopback port with no persistence, killed on drop.
pub struct LocalRedis {
    child: std::process::Child,
    /// Its URL.
    pub url: String,
    dir: std::path::PathBuf,
}

impl LocalRedis {
    /// Starts one, or `None` if `redis-server` is not on the PATH or does not answer.
    pub fn start() -> Option<Self> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .ok()?
            .port();
        let dir = std::env::temp_dir().join(format!("squad-redis-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).ok()?;
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let me = Self {
            child,
            url: format!("redis://127.0.0.1:{port}"),
            dir,
        };
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if ping(port) {
                return Some(me);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

fn ping(port: u16) -> bool {
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
    let mut buf = [0u8; 7];
    s.write_all(b"PING\r\n").is_ok() && s.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n"
}

impl Drop for LocalRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
