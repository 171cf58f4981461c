//! G7 across OS processes: this test binary runs itself again as workers
//! (`g7_worker_entry`, ignored unless `G7_WORKER` is set), all against one redis-server.

mod common;

use common::server::{prefix, server, skip};
use common::worker::{lines, run_if_worker, Job};
use resilience_redis::{OnLoss, QuotaSpec, RedisQuota, RedisQuotaConfig};
use std::collections::BTreeMap;
use std::process::Child;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

const WORKER_ARGS: [&str; 4] = ["g7_worker_entry", "--exact", "--ignored", "--nocapture"];

/// The body of every child process; does nothing in a normal test run.
#[test]
#[ignore = "run by the G7 tests as a child process"]
fn g7_worker_entry() {
    run_if_worker();
}

#[derive(Debug, Default)]
struct Report {
    /// Cost granted per window (keyed by the server-time reset, identical on every host).
    per_window: BTreeMap<u64, u64>,
    offline: u64,
    online: u64,
    /// Paid through the express lane (no round trip).
    express: u64,

    unavailable: u64,
    errors: Vec<String>,
    /// Every grant as (ms since its worker started, cost, offline).
    grants: Grants,
}

/// Hundreds of grants: failure messages print how many, not each one.
#[derive(Default)]
struct Grants(Vec<(u64, u64, bool)>);

impl std::fmt::Debug for Grants {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} grants", self.0.len())
    }
}

fn collect(children: Vec<Child>, outs: Vec<Receiver<String>>) -> Report {
    let mut r = Report::default();
    for (mut c, rx) in children.into_iter().zip(outs) {
        let status = c.wait().expect("worker exit");
        assert!(status.success(), "worker failed: {status}");
        for line in rx.iter() {
            let f: Vec<&str> = line.split_whitespace().collect();
            match f.as_slice() {
                ["GRANT", reset, cost, offline, rest @ ..] => {
                    let (reset, cost): (u64, u64) = (reset.parse().unwrap(), cost.parse().unwrap());
                    *r.per_window.entry(reset).or_default() += cost;
                    if rest.get(2) == Some(&"1") {
                        r.express += cost;
                    }
                    if *offline == "1" {
                        r.offline += cost;
                    } else {
                        r.online += cost;
                    }
                    let t_ms = rest.get(1).and_then(|t| t.parse().ok()).unwrap_or(0);
                    r.grants.0.push((t_ms, cost, *offline == "1"));
                }
                ["UNAVAILABLE", n] => r.unavailable += n.parse::<u64>().unwrap(),
                ["ERROR", ..] | ["CONNECT_ERROR", ..] => r.errors.push(line.clone()),
                _ => {}
            }
        }
    }
    r
}

fn spawn_all(jobs: &[Job]) -> (Vec<Child>, Vec<Receiver<String>>) {
    let mut children: Vec<Child> = jobs.iter().map(|j| j.spawn(&WORKER_ARGS)).collect();
    let outs = children.iter_mut().map(lines).collect();
    (children, outs)
}

/// Half the tasks ask at P0, so the express lane (paid from each process's reservation
/// with no round trip, reported later) races the pool on every host.
#[test]
fn g7_processes_never_exceed_the_quota_of_any_window() {
    let Some(srv) = server() else { return };
    let p = prefix("procs");
    let jobs: Vec<Job> = (0..3)
        .map(|i| {
            let mut j = Job::new("spend", &srv.url, &p, &format!("w{i}"));
            (j.limit, j.window_ms, j.run_ms, j.tasks) = (60, 400, 2_500, 4);
            (j.share_permille, j.p0_tasks) = (300, 2);
            j
        })
        .collect();
    let (children, outs) = spawn_all(&jobs);
    let r = collect(children, outs);
    eprintln!("g7 processes: {r:?}");
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert!(r.express > 0, "the express lane was never used: {r:?}");
    for (reset, spent) in &r.per_window {
        assert!(
            *spent <= 60,
            "window resetting at {reset}: {spent} granted of 60"
        );
    }
    // Real contention: several windows, most of them spent to the last unit.
    let full = r.per_window.values().filter(|&&s| s == 60).count();
    assert!(r.per_window.len() >= 3 && full >= 2, "{:?}", r.per_window);
}

#[test]
fn g7_outage_processes_degrade_recover_and_overspend_nothing() {
    let Some(mut srv) = server() else { return };
    if !srv.owned() {
        return skip("needs a redis-server it can kill: RESILIENCE_REDIS_URL is set");
    }
    let p = prefix("outage");
    // One 30 s window for the whole run, so every grant (before, during and after the
    // outage, online or offline) counts against the same 1000. Paced so that the window
    // outlasts the outage (about 225 grants a second in all), with small local shares
    // (about 2% of the pool each), so each process runs out of its share while Redis is down.
    let jobs: Vec<Job> = (0..3)
        .map(|i| {
            let mut j = Job::new("spend", &srv.url, &p, &format!("w{i}"));
            (j.limit, j.window_ms, j.ttl_ms, j.share_permille) = (1_000, 30_000, 3_000, 60);
            (j.run_ms, j.pace_ms, j.tasks, j.p0_tasks) = (6_000, 40, 3, 1);
            j
        })
        .collect();
    let spawned = Instant::now();
    let (children, outs) = spawn_all(&jobs);
    std::thread::sleep(Duration::from_millis(1_200));
    let down = spawned.elapsed();
    srv.kill(); // no persistence: Redis comes back empty
    std::thread::sleep(Duration::from_millis(1_300));
    srv.restart();
    // Each worker's clock starts after its spawn, so a grant stamped later than this (in
    // its worker's time) was made after Redis answered again.
    let back = spawned.elapsed();
    let r = collect(children, outs);
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    let sum = |f: &dyn Fn(&(u64, u64, bool)) -> bool| -> u64 {
        r.grants.0.iter().filter(|g| f(g)).map(|g| g.1).sum()
    };
    let online_after = sum(&|&(t, _, off)| !off && t > ms(back));
    eprintln!(
        "g7 outage: down at {down:?}, back at {back:?}; granted online before the kill {}, \
         offline {}, online after the restart {online_after}; {r:?}",
        sum(&|&(t, _, off)| !off && t < ms(down)),
        sum(&|&(_, _, off)| off),
    );
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(
        r.per_window.len(),
        1,
        "one window, rebuilt after the restart: {:?}",
        r.per_window
    );
    let spent: u64 = r.per_window.values().sum();
    assert!(spent <= 1_000, "overspent: {spent} of 1000 ({r:?})");
    assert!(
        r.offline > 0,
        "nobody spent its reservation while Redis was down: {r:?}"
    );
    assert!(
        r.unavailable > 0,
        "nobody ran out of its local share: {r:?}"
    );
    // Recovered: Redis granted again after it came back (the run goes on 3.5 s past it).
    assert!(
        online_after >= 100,
        "did not recover: {online_after} granted through Redis after the restart ({r:?})"
    );
}

fn wait_line(rx: &Receiver<String>, tag: &str) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(100)) {
            if line.starts_with(tag) {
                return line.split_whitespace().map(str::to_owned).collect();
            }
        }
    }
    panic!("no {tag} line from the worker");
}

async fn observer(url: &str, p: &str, on_loss: OnLoss) -> resilience_redis::SharedQuota {
    let c = RedisQuotaConfig::new(url)
        .prefix(p)
        .node("observer")
        .on_loss(on_loss)
        .reserve_share_permille(0);
    let r = RedisQuota::connect(c).await.expect("connect");
    r.resource("r", QuotaSpec::new(100, Duration::from_secs(60)))
        .await
        .expect("resource")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_killed_holder_reservation_returns_after_the_ttl() {
    let Some(srv) = server() else { return };
    let p = prefix("lease");
    let mut job = Job::new("hold", &srv.url, &p, "holder");
    (job.limit, job.window_ms, job.ttl_ms, job.share_permille) = (100, 60_000, 1_000, 200);
    job.degraded = false; // fail-closed: the reservation can never be spent offline
    job.express = false; // ... nor through the express lane
    let mut child = job.spawn(&WORKER_ARGS);
    let rx = lines(&mut child);
    let ready = wait_line(&rx, "READY");
    let reserved: u64 = ready[1].parse().unwrap();
    let obs = observer(&srv.url, &p, OnLoss::FailClosed).await;
    let before = obs.snapshot().await.expect("snapshot");
    assert!(
        reserved > 0 && before.reserved_total == reserved,
        "{before:?}"
    );
    assert_eq!(before.members, 2);
    child.kill().expect("kill the holder");
    let _ = child.wait();
    tokio::time::sleep(Duration::from_millis(1_300)).await;
    let after = obs.snapshot().await.expect("snapshot"); // reaps the expired lease
    assert_eq!(after.members, 1, "{after:?}");
    assert_eq!(after.reserved_total, 0, "{after:?}");
    assert_eq!(
        after.pool,
        before.pool + reserved,
        "reservation returned: {after:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_killed_degraded_holder_reservation_is_held_not_regranted() {
    let Some(srv) = server() else { return };
    let p = prefix("held");
    let mut job = Job::new("hold", &srv.url, &p, "holder");
    (job.limit, job.window_ms, job.ttl_ms, job.share_permille) = (100, 60_000, 1_000, 200);
    let mut child = job.spawn(&WORKER_ARGS);
    let rx = lines(&mut child);
    let reserved: u64 = wait_line(&rx, "READY")[1].parse().unwrap();
    let obs = observer(&srv.url, &p, OnLoss::Degraded).await;
    let before = obs.snapshot().await.expect("snapshot");
    child.kill().expect("kill the holder");
    let _ = child.wait();
    tokio::time::sleep(Duration::from_millis(1_300)).await;
    let after = obs.snapshot().await.expect("snapshot");
    // It might have been cut off from Redis and spending it offline: held, never re-granted,
    // until it reports or the window ends.
    assert_eq!((after.members, after.held), (1, reserved), "{after:?}");
    assert_eq!(after.pool, before.pool, "{after:?}");
}

/// Fail-closed with the express lane on (the default): the dead holder may have spent up
/// to its express allowance (8) without reporting it, so that much is held until the window
/// ends and the rest of its reservation returns after the TTL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_killed_express_holder_returns_all_but_its_express_allowance_after_the_ttl() {
    let Some(srv) = server() else { return };
    let p = prefix("xhold");
    let mut job = Job::new("hold", &srv.url, &p, "holder");
    (job.limit, job.window_ms, job.ttl_ms, job.share_permille) = (100, 60_000, 1_000, 200);
    job.degraded = false;
    let mut child = job.spawn(&WORKER_ARGS);
    let rx = lines(&mut child);
    let reserved: u64 = wait_line(&rx, "READY")[1].parse().unwrap();
    assert!(
        reserved > 8,
        "a reservation larger than the allowance: {reserved}"
    );
    let obs = observer(&srv.url, &p, OnLoss::FailClosed).await;
    let before = obs.snapshot().await.expect("snapshot");
    child.kill().expect("kill the holder");
    let _ = child.wait();
    tokio::time::sleep(Duration::from_millis(1_300)).await;
    let after = obs.snapshot().await.expect("snapshot");
    assert_eq!((after.members, after.held), (1, 8), "{after:?}");
    assert_eq!(after.pool, before.pool + reserved - 8, "{after:?}");
}

#[test]
fn g7_paused_expired_holder_is_fenced() {
    let Some(srv) = server() else { return };
    let p = prefix("fence");
    let mut job = Job::new("pause", &srv.url, &p, "sleeper");
    (job.limit, job.window_ms, job.ttl_ms) = (100, 60_000, 600);
    let mut child = job.spawn(&WORKER_ARGS);
    let rx = lines(&mut child);
    let old_epoch = wait_line(&rx, "GRANTED")[1].clone();
    let pid = child.id().to_string();
    let signal = |sig: &str| {
        let ok = std::process::Command::new("kill")
            .args([sig, &pid])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "kill {sig}");
    };
    // A pause (GC, swap, SIGSTOP) longer than the lease: another process reaps it.
    signal("-STOP");
    std::thread::sleep(Duration::from_millis(1_000));
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    // Everything outside the pool is accounted for: reservations live and held.
    let total = |s: &resilience_redis::QuotaSnapshot| s.pool + s.reserved_total + s.held;
    let before = rt.block_on(async {
        let q = observer(&srv.url, &p, OnLoss::Degraded).await;
        let s = q.snapshot().await.expect("snapshot");
        (s.members, total(&s))
    });
    assert_eq!(before.0, 1, "the sleeper's lease was reaped");
    signal("-CONT");
    use std::io::Write;
    let mut stdin = child.stdin.take().expect("stdin");
    writeln!(stdin, "go").expect("wake the worker");
    assert_eq!(
        wait_line(&rx, "RELEASE")[1],
        "Ok(Fenced)",
        "a stale release is refused"
    );
    assert_eq!(
        wait_line(&rx, "OBSERVE")[1],
        "Ok(Fenced)",
        "a stale reading is ignored"
    );
    let new_epoch = wait_line(&rx, "EPOCH")[1].clone();
    assert_ne!(
        new_epoch, old_epoch,
        "the holder came back under a new epoch"
    );
    let _ = child.wait();
    let after = rt.block_on(async {
        let q = observer(&srv.url, &p, OnLoss::Degraded).await;
        total(&q.snapshot().await.expect("snapshot"))
    });
    // The two grants stay spent: the stale release credited nothing, the stale reading
    // (remaining 100000) did not refill the pool. Of its held reservation the returning
    // holder gets back all but its express allowance (8): a call of its old lease sent before
    // its last express spending could still be on its way, so that much stays out of the
    // pool until the window ends.
    assert_eq!((before.1, after), (98, 98 - 8));
}
