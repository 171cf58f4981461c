//! The child process of the multi-process G7 tests and of the bench: the test binary runs
//! itself again with `G7_WORKER` set, and this is what the child does. It prints one line per
//! fact (`GRANT`, `COUNT`, `READY`, ...), parsed by the parent.

#![allow(dead_code)]

use resilience_core::governor::{Observation, Priority};
use resilience_redis::{
    OnLoss, QuotaDecision, QuotaSpec, RedisQuota, RedisQuotaConfig, RedisQuotaError, WaitPolicy,
};
use std::io::{BufRead, Write};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Settings passed to a child through its environment.
#[derive(Debug, Clone)]
pub struct Job {
    pub mode: &'static str,
    pub url: String,
    pub prefix: String,
    pub node: String,
    pub limit: u64,
    pub window_ms: u64,
    pub ttl_ms: u64,
    pub degraded: bool,
    pub share_permille: u32,
    pub run_ms: u64,
    pub pace_ms: u64,
    pub tasks: u32,
    /// How many of the `spend` tasks ask at P0 (the express lane), the rest at P1.
    pub p0_tasks: u32,
    /// The express lane on (the default) or off.
    pub express: bool,
    /// Shared G8 rules of the resource: `none`, or `window:<limit>:<ms>` (every request,
    /// counted once, in any `ms`).
    pub pacing: String,
}

impl Job {
    pub fn new(mode: &'static str, url: &str, prefix: &str, node: &str) -> Self {
        Self {
            mode,
            url: url.into(),
            prefix: prefix.into(),
            node: node.into(),
            limit: 100,
            window_ms: 1_000,
            ttl_ms: 2_000,
            degraded: true,
            share_permille: 100,
            run_ms: 2_000,
            pace_ms: 0,
            tasks: 4,
            p0_tasks: 0,
            express: true,
            pacing: "none".into(),
        }
    }

    /// Starts `exe` (this test or bench binary) as a child running this job.
    pub fn spawn(&self, exe_args: &[&str]) -> Child {
        let exe = std::env::current_exe().expect("current exe");
        Command::new(exe)
            .args(exe_args)
            .env("G7_WORKER", self.mode)
            .env("G7_URL", &self.url)
            .env("G7_PREFIX", &self.prefix)
            .env("G7_NODE", &self.node)
            .env("G7_LIMIT", self.limit.to_string())
            .env("G7_WINDOW_MS", self.window_ms.to_string())
            .env("G7_TTL_MS", self.ttl_ms.to_string())
            .env("G7_DEGRADED", if self.degraded { "1" } else { "0" })
            .env("G7_SHARE", self.share_permille.to_string())
            .env("G7_RUN_MS", self.run_ms.to_string())
            .env("G7_PACE_MS", self.pace_ms.to_string())
            .env("G7_TASKS", self.tasks.to_string())
            .env("G7_P0_TASKS", self.p0_tasks.to_string())
            .env("G7_EXPRESS", if self.express { "1" } else { "0" })
            .env("G7_PACING", &self.pacing)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn worker")
    }

    fn from_env() -> Option<Self> {
        let mode: &'static str = match std::env::var("G7_WORKER").ok()?.as_str() {
            "spend" => "spend",
            "hold" => "hold",
            "pause" => "pause",
            "bench" => "bench",
            _ => return None,
        };
        let var = |k: &str| std::env::var(k).unwrap_or_default();
        let num = |k: &str| var(k).parse::<u64>().unwrap_or(0);
        Some(Self {
            mode,
            url: var("G7_URL"),
            prefix: var("G7_PREFIX"),
            node: var("G7_NODE"),
            limit: num("G7_LIMIT"),
            window_ms: num("G7_WINDOW_MS"),
            ttl_ms: num("G7_TTL_MS"),
            degraded: var("G7_DEGRADED") == "1",
            share_permille: u32::try_from(num("G7_SHARE")).unwrap_or(0),
            run_ms: num("G7_RUN_MS"),
            pace_ms: num("G7_PACE_MS"),
            tasks: u32::try_from(num("G7_TASKS")).unwrap_or(1).max(1),
            p0_tasks: u32::try_from(num("G7_P0_TASKS")).unwrap_or(0),
            express: var("G7_EXPRESS") != "0",
            pacing: var("G7_PACING"),
        })
    }

    pub fn config(&self) -> RedisQuotaConfig {
        let ms = Duration::from_millis;
        let wait = WaitPolicy {
            poll: ms(100),
            ..WaitPolicy::default()
        };
        RedisQuotaConfig::new(&self.url)
            .prefix(&self.prefix)
            .node(&self.node)
            .lease_ttl(ms(self.ttl_ms))
            .on_loss(if self.degraded {
                OnLoss::Degraded
            } else {
                OnLoss::FailClosed
            })
            .reserve_share_permille(self.share_permille)
            .express(self.express.then_some(Priority::P0), 8)
            .timeouts(ms(500), ms(300))
            .reconnect_every(ms(100))
            .wait(wait)
            // The workers' calls are instant. Spending reported without a grant to settle
            // (express, offline) counts as on its way for a call bound, also against the
            // next window: with the 30 s default, against every one of these short windows.
            .call_bound(ms(200))
    }
}

/// In a child: runs the job named by the environment and returns true. In the parent: false.
pub fn run_if_worker() -> bool {
    let Some(job) = Job::from_env() else {
        return false;
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(run(job));
    true
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

async fn run(job: Job) {
    let redis = match RedisQuota::connect(job.config()).await {
        Ok(r) => r,
        Err(e) => {
            say(&format!("CONNECT_ERROR {e}"));
            return;
        }
    };
    let spec =
        QuotaSpec::new(job.limit, Duration::from_millis(job.window_ms)).shared_pacing_of(&job);
    let quota = redis.resource("r", spec).await.expect("resource");
    match job.mode {
        "spend" => spend(&job, &quota).await,
        "bench" => bench(&job, &quota).await,
        "hold" => {
            for _ in 0..3 {
                let g = quota.acquire(1, Priority::P1).await.expect("grant");
                say(&format!(
                    "GRANT {} {} 0 {}",
                    g.reset_at_ms(),
                    g.cost(),
                    g.epoch()
                ));
            }
            let s = quota.snapshot().await.expect("snapshot");
            say(&format!("READY {} {}", s.reserved, s.epoch));
            tokio::time::sleep(Duration::from_secs(3_600)).await;
        }
        "pause" => {
            let g = quota.acquire(1, Priority::P1).await.expect("grant");
            let h = quota.acquire(1, Priority::P1).await.expect("grant");
            say(&format!("GRANTED {}", g.epoch()));
            // Wait for the parent (which stops and resumes this process meanwhile).
            let mut line = String::new();
            let _ = std::io::stdin().lock().read_line(&mut line);
            let released = quota.release(g).await;
            say(&format!("RELEASE {released:?}"));
            let obs = Observation::from_headers(200, [("x-ratelimit-remaining", "100000")]);
            let observed = quota.observe(Some(h), &obs).await;
            say(&format!("OBSERVE {observed:?}"));
            let s = quota.snapshot().await.expect("snapshot");
            say(&format!("EPOCH {}", s.epoch));
        }
        _ => {}
    }
}

/// Acquires as fast as allowed (or every `pace_ms`) for `run_ms` on `tasks` tasks; prints
/// every grant: `GRANT <reset_at_ms> <cost> <offline> <epoch> <t_ms> <express> <server_ms>`.
async fn spend(job: &Job, quota: &resilience_redis::SharedQuota) {
    let start = Instant::now();
    let stop = start + Duration::from_millis(job.run_ms);
    let unavailable = Arc::new(AtomicU64::new(0));
    let mut handles = Vec::new();
    for task in 0..job.tasks {
        let (q, un, pace) = (quota.clone(), unavailable.clone(), job.pace_ms);
        let priority = if task < job.p0_tasks {
            Priority::P0
        } else {
            Priority::P1
        };
        handles.push(tokio::spawn(async move {
            let mut lines = Vec::new();
            while Instant::now() < stop {
                let left = stop.saturating_duration_since(Instant::now());
                let bound = left.min(Duration::from_millis(300));
                match q.acquire_within(1, priority, Some(bound)).await {
                    Ok(g) => {
                        lines.push(format!(
                            "GRANT {} {} {} {} {} {} {}",
                            g.reset_at_ms(),
                            g.cost(),
                            u8::from(g.is_offline()),
                            g.epoch(),
                            start.elapsed().as_millis(),
                            u8::from(g.is_express()),
                            g.granted_at_ms()
                        ));
                        // The call came back (no headers): it is no longer on its way, so
                        // the next window need not count it.
                        let _ = q.observe(Some(g), &Observation::new(200)).await;
                    }
                    Err(RedisQuotaError::Unavailable { .. }) => {
                        un.fetch_add(1, Ordering::Relaxed);
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    Err(RedisQuotaError::WaitTooLong { .. }) => {}
                    Err(e) => lines.push(format!("ERROR {e}")),
                }
                if pace > 0 {
                    tokio::time::sleep(Duration::from_millis(pace)).await;
                }
            }
            lines
        }));
    }
    let mut all = Vec::new();
    for h in handles {
        all.extend(h.await.unwrap_or_default());
    }
    for l in all {
        say(&l);
    }
    say(&format!(
        "UNAVAILABLE {}",
        unavailable.load(Ordering::Relaxed)
    ));
    let _ = quota.leave().await;
}

/// Hammers `try_acquire` (one round trip each) for `run_ms`; prints `COUNT <grants> <asks>`.
async fn bench(job: &Job, quota: &resilience_redis::SharedQuota) {
    let stop = Instant::now() + Duration::from_millis(job.run_ms);
    let (grants, asks) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let mut handles = Vec::new();
    // With shared rules, reads spread over 16 endpoints (per-endpoint windows).
    const ENDPOINTS: [&str; 16] = [
        "GET /e0", "GET /e1", "GET /e2", "GET /e3", "GET /e4", "GET /e5", "GET /e6", "GET /e7",
        "GET /e8", "GET /e9", "GET /e10", "GET /e11", "GET /e12", "GET /e13", "GET /e14",
        "GET /e15",
    ];
    let paced = job.pacing != "none" && !job.pacing.is_empty();
    for task in 0..job.tasks {
        let (q, g, a) = (quota.clone(), grants.clone(), asks.clone());
        handles.push(tokio::spawn(async move {
            let mut i = task as usize;
            while Instant::now() < stop {
                a.fetch_add(1, Ordering::Relaxed);
                let d = if paced {
                    i += 1;
                    let r = resilience_core::governor::Request::read()
                        .with_endpoint(ENDPOINTS[i % ENDPOINTS.len()]);
                    q.try_acquire_request(&r, Priority::P1).await
                } else {
                    q.try_acquire(1, Priority::P1).await
                };
                if let Ok(QuotaDecision::Go(_)) = d {
                    g.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    for h in handles {
        let _ = h.await;
    }
    say(&format!(
        "COUNT {} {}",
        grants.load(Ordering::Relaxed),
        asks.load(Ordering::Relaxed)
    ));
}

/// Reads a child's stdout lines on a thread; `recv` them as they come.
pub fn lines(child: &mut Child) -> std::sync::mpsc::Receiver<String> {
    let out = child.stdout.take().expect("piped stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// The job's shared G8 rules on a spec.
trait SharedPacingOf {
    fn shared_pacing_of(self, job: &Job) -> Self;
}

impl SharedPacingOf for QuotaSpec {
    fn shared_pacing_of(self, job: &Job) -> Self {
        use resilience_core::governor::{Measure, Pacing, Selector, WindowRule};
        match job.pacing.split(':').collect::<Vec<_>>().as_slice() {
            ["window", limit, ms] => {
                let rule = WindowRule::new(
                    "window",
                    Selector::All,
                    Measure::Requests,
                    limit.parse().unwrap_or(1),
                    Duration::from_millis(ms.parse().unwrap_or(1_000)),
                );
                self.shared_pacing(Pacing {
                    windows: vec![rule],
                    ..Pacing::default()
                })
            }
            ["wide"] => {
                // GitHub's rule shapes with limits nothing reaches: every ask is counted.
                let mut p = Pacing::github().with_write_spacing(Duration::from_secs(1));
                p.max_concurrent = None;
                for w in &mut p.windows {
                    w.limit = 1 << 30;
                }
                self.shared_pacing(p)
            }
            ["github"] => {
                self.shared_pacing(Pacing::github().with_write_spacing(Duration::from_secs(1)))
            }
            _ => self,
        }
    }
}
