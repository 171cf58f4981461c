//! G4 + G7: the cascade detector shared through Redis (`QuotaSpec::shared_cascade`): agents
//! limited in *different* processes switch every process to sequential mode (one call in
//! flight at a time, higher priorities first), which good responses end. Against a real
//! redis-server.

mod common;

use common::node::{cfg, go, MS};
use common::server::{prefix, server};
use resilience_core::governor::{Cascade, Observation, Priority};
use resilience_redis::{
    QuotaDecision, QuotaGrant, QuotaSpec, QuotaWaitReason, RedisQuota, RedisQuotaConfig,
    SharedQuota,
};
use std::time::Duration;

fn cascade() -> Cascade {
    Cascade {
        agents: 3,
        window: Duration::from_secs(30),
        clear_after: 2,
    }
}

async fn node(c: RedisQuotaConfig, cascade: Option<Cascade>) -> (RedisQuota, SharedQuota) {
    let r = RedisQuota::connect(c).await.expect("connect");
    let mut spec = QuotaSpec::new(1_000_000, Duration::from_secs(3_600));
    if let Some(c) = cascade {
        spec = spec.shared_cascade(c);
    }
    let q = r.resource("core", spec).await.expect("resource");
    (r, q)
}

async fn nodes(p: &str, url: &str, n: usize) -> Vec<(RedisQuota, SharedQuota)> {
    let mut out = Vec::new();
    for i in 0..n {
        let c = cfg(url, p, &format!("n{i}")).reserve_share_permille(0);
        out.push(node(c, Some(cascade())).await);
    }
    out
}

/// A secondary rate limit whose block (1 ms) is over by the time anyone asks again.
fn limited() -> Observation {
    Observation::from_headers(429, [("retry-after", "0")])
}

fn good() -> Observation {
    Observation::from_headers(200, [("x-ratelimit-remaining", "4000")])
}

async fn grant(q: &SharedQuota, p: Priority) -> QuotaGrant {
    go(q.try_acquire(1, p).await.expect("acquire"))
}

async fn waits(q: &SharedQuota, p: Priority) -> QuotaWaitReason {
    match q.try_acquire(1, p).await.expect("acquire") {
        QuotaDecision::Wait(w) => w.reason,
        QuotaDecision::Go(g) => panic!("granted: {g:?}"),
    }
}

/// Limits one agent in `q`'s process.
async fn limit(q: &SharedQuota, agent: &str) {
    let g = grant(q, Priority::P1).await.for_agent(agent);
    q.observe(Some(g), &limited()).await.expect("observe");
    tokio::time::sleep(MS(5)).await; // past the 1 ms block
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g4_agents_limited_in_three_processes_switch_every_process_to_one_call_at_a_time() {
    let Some(srv) = server() else { return };
    let p = prefix("cascade");
    let n = nodes(&p, &srv.url, 3).await;
    let (a, b, c) = (&n[0].1, &n[1].1, &n[2].1);
    // One agent limited in each of two processes: not a cascade, calls go side by side.
    limit(a, "picard").await;
    limit(b, "ralph").await;
    let g1 = grant(a, Priority::P1).await;
    let g2 = grant(b, Priority::P1).await;
    assert!(!a.snapshot().await.expect("snapshot").sequential);
    // The detector's state lives beside the lease counter: epochs still count on from the
    // state's birth (ms x 1000), which fencing across a data loss relies on.
    assert!(
        g1.epoch() > g1.window() && g2.epoch() > g2.window(),
        "{g1:?} {g2:?}"
    );
    drop((g1, g2)); // unsettled: they count as in flight until the call bound
    let c_snapshot = c.snapshot().await.expect("snapshot");
    assert!(!c_snapshot.sequential, "{c_snapshot:?}");
    // A third, in a third process: every process is held to one call at a time.
    let (_r, d) = node(
        cfg(&srv.url, &p, "d").reserve_share_permille(0),
        Some(cascade()),
    )
    .await;
    limit(c, "data").await;
    assert!(d.snapshot().await.expect("snapshot").sequential);
    // Two calls are still in flight from before: everyone waits.
    assert_eq!(waits(&d, Priority::P1).await, QuotaWaitReason::Sequential);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g4_sequential_mode_lets_one_call_through_then_good_responses_end_it() {
    let Some(srv) = server() else { return };
    let p = prefix("cascade-seq");
    let n = nodes(&p, &srv.url, 3).await;
    let (a, b, c) = (&n[0].1, &n[1].1, &n[2].1);
    // Three agents of one process (as `acquire_shared` names them) are a cascade too.
    for agent in ["worf", "troi", "data"] {
        limit(a, agent).await;
    }
    let first = grant(b, Priority::P1).await;
    assert_eq!(waits(c, Priority::P1).await, QuotaWaitReason::Sequential);
    assert_eq!(waits(a, Priority::P0).await, QuotaWaitReason::Sequential);
    // The call settles with a good response: the next may go, and the P0 refused above goes
    // before a P2 of another process (the priority mark).
    b.observe(Some(first), &good()).await.expect("observe");
    assert_eq!(waits(c, Priority::P2).await, QuotaWaitReason::Yielding);
    let second = grant(a, Priority::P0).await;
    a.observe(Some(second), &good()).await.expect("observe");
    // Two good responses in a row after the block: sequential mode ends for every process.
    let s = c.snapshot().await.expect("snapshot");
    assert!(!s.sequential, "{s:?}");
    // (P0: the P0 refused above still makes lower priorities yield for a poll bound.)
    let g1 = grant(b, Priority::P0).await;
    let g2 = grant(c, Priority::P0).await;
    drop((g1, g2));
}

/// A process that does not share the detector neither counts a limit nor ends the mode;
/// limits older than the window are forgotten.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g4_only_processes_sharing_the_detector_count_and_old_limits_are_forgotten() {
    let Some(srv) = server() else { return };
    let p = prefix("cascade-opt");
    let short = Cascade {
        window: MS(300),
        ..cascade()
    };
    let (_ra, a) = node(
        cfg(&srv.url, &p, "a").reserve_share_permille(0),
        Some(short.clone()),
    )
    .await;
    let (_rb, b) = node(cfg(&srv.url, &p, "b").reserve_share_permille(0), None).await;
    limit(&b, "x").await;
    limit(&b, "y").await;
    limit(&a, "z").await;
    assert!(
        !a.snapshot().await.expect("snapshot").sequential,
        "b's limits were counted"
    );
    limit(&a, "w").await;
    tokio::time::sleep(MS(400)).await; // z and w leave the window
    limit(&a, "v").await;
    assert!(
        !a.snapshot().await.expect("snapshot").sequential,
        "old limits were counted"
    );
}

/// While sequential mode is on, the express lane is shut: a P0 call waits its turn at the
/// server instead of going past the one call in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g4_sequential_mode_shuts_the_express_lane() {
    let Some(srv) = server() else { return };
    let p = prefix("cascade-express");
    // a has a reservation and the default express lane (P0).
    let (_ra, a) = node(
        cfg(&srv.url, &p, "a").reserve_share_permille(200),
        Some(cascade()),
    )
    .await;
    let (_rb, b) = node(
        cfg(&srv.url, &p, "b").reserve_share_permille(0),
        Some(cascade()),
    )
    .await;
    // a learns its reservation and the window.
    let learn = grant(&a, Priority::P1).await;
    a.release(learn).await.expect("release");
    for agent in ["1", "2", "3"] {
        limit(&b, agent).await;
    }
    let held = grant(&b, Priority::P1).await;
    // The mode's news (published like a block's) has reached a, and a reply after it
    // (reopening the lane for a block whose end a has heard).
    tokio::time::sleep(MS(100)).await;
    assert!(a.snapshot().await.expect("snapshot").sequential);
    // (`acquire` takes the lane when it is open; `try_acquire` never does.)
    match a.acquire_within(1, Priority::P0, Some(MS(50))).await {
        Err(resilience_redis::RedisQuotaError::WaitTooLong { .. }) => {}
        other => panic!("past sequential mode: {other:?}"),
    }
    drop(held);
}

/// With no traffic no good response ever ends sequential mode: the next quota window does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g4_a_new_quota_window_ends_sequential_mode() {
    let Some(srv) = server() else { return };
    let p = prefix("cascade-window");
    let r = RedisQuota::connect(cfg(&srv.url, &p, "a").reserve_share_permille(0))
        .await
        .expect("connect");
    let q = r
        .resource(
            "core",
            QuotaSpec::new(1_000, MS(400)).shared_cascade(cascade()),
        )
        .await
        .expect("resource");
    for agent in ["1", "2", "3"] {
        limit(&q, agent).await;
    }
    assert!(q.snapshot().await.expect("snapshot").sequential);
    tokio::time::sleep(MS(500)).await; // past the window's reset
    let s = q.snapshot().await.expect("snapshot");
    assert!(!s.sequential, "{s:?}");
}

/// `acquire_shared` names the governor's agent: three agents of one process limited through
/// their permits put the other process in sequential mode too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g4_acquire_shared_counts_the_governors_agents() {
    use resilience_core::governor::{Governor, Request, ResourceConfig};
    use resilience_redis::acquire_shared;
    let Some(srv) = server() else { return };
    let p = prefix("cascade-gov");
    let n = nodes(&p, &srv.url, 2).await;
    let (a, b) = (&n[0].1, &n[1].1);
    let gov = Governor::builder().seed(7).build().expect("governor");
    let core = gov
        .add_resource("core", ResourceConfig::github())
        .expect("resource");
    for name in ["picard", "riker", "data"] {
        // P0: its G6 release window after each 1 ms block is under half a second.
        let agent = gov.register(name, Priority::P0).expect("agent");
        let permit = acquire_shared(&gov, a, agent, core, Request::read())
            .await
            .expect("permit");
        assert_eq!(permit.shared().and_then(|g| g.agent()), Some(name));
        let _ = permit.observe(&limited()).await;
        tokio::time::sleep(MS(5)).await;
    }
    assert!(b.snapshot().await.expect("snapshot").sequential);
}

/// G4 across a data loss: the cascade's limits did not end with Redis's data. A process
/// that knew the lost state was in sequential mode brings it to the state that replaces it.
/// Forgotten (as it was, review helper-47), every process went back to calls side by side.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g4_sequential_mode_outlives_a_data_loss() {
    let Some(mut srv) = server() else { return };
    if !srv.owned() {
        return common::server::skip("needs a redis-server it can kill");
    }
    let p = prefix("cascade-loss");
    let n = nodes(&p, &srv.url, 3).await;
    for ((_, q), agent) in n.iter().zip(["picard", "ralph", "data"]) {
        limit(q, agent).await;
    }
    let (ra, a) = &n[0];
    assert!(a.snapshot().await.expect("snapshot").sequential);
    srv.kill();
    srv.restart();
    common::node::rejoined(ra, a).await;
    let (_r, d) = node(
        cfg(&srv.url, &p, "d").reserve_share_permille(0),
        Some(cascade()),
    )
    .await;
    // (Its calls wait for the rebuild first: the three that knew the lost state are back
    // only once they call.)
    let s = d.snapshot().await.expect("snapshot");
    assert!(s.sequential, "{s:?}");
}
