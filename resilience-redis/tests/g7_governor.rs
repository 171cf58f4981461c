//! G7 with the local governor: each process keeps its own Governor (G1-G6, G8 in process)
//! and consults the shared quota per acquire.

mod common;

use common::server::{prefix, server};
use resilience_core::governor::{Governor, Observation, Priority, Request, ResourceConfig};
use resilience_core::ResilienceError;
use resilience_redis::{
    acquire_shared, QuotaDecision, QuotaSpec, QuotaWaitReason, RedisQuota, RedisQuotaConfig,
};
use std::time::Duration;

async fn shared(url: &str, p: &str, node: &str) -> resilience_redis::SharedQuota {
    let c = RedisQuotaConfig::new(url)
        .prefix(p)
        .node(node)
        .reserve_share_permille(0);
    let r = RedisQuota::connect(c).await.expect("connect");
    r.resource("core", QuotaSpec::new(3, Duration::from_secs(60)))
        .await
        .expect("resource")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_local_governor_spends_only_the_shared_quota_and_shares_its_blocks() {
    let Some(srv) = server() else { return };
    let p = prefix("gov");
    let quota = shared(&srv.url, &p, "a").await;
    let gov = Governor::builder().seed(7).build().expect("governor");
    let core = gov
        .add_resource("core", ResourceConfig::github())
        .expect("resource");
    let agent = gov.register("data", Priority::P1).expect("agent");
    // The local governor alone would allow 5 000; the shared quota allows 3.
    for _ in 0..3 {
        let permit = acquire_shared(&gov, &quota, agent, core, Request::read())
            .await
            .expect("granted");
        assert!(permit.shared().is_some_and(|g| g.cost() == 1));
        // No quota headers: the local governor still believes 5 000 are left.
        let ok = Observation::new(200);
        let _ = permit.observe(&ok).await;
    }
    let req = Request::read().with_max_wait(Duration::from_millis(100));
    let e = acquire_shared(&gov, &quota, agent, core, req)
        .await
        .unwrap_err();
    assert!(
        matches!(&e, ResilienceError::GovernorShed { resource, .. } if &**resource == "core"),
        "a wait past the bound is shed, naming the resource: {e:?}"
    );
    let snap = gov.snapshot(core).expect("local snapshot");
    assert_eq!(
        snap.in_flight, 0,
        "the refused call released its local permit"
    );

    // A 429 seen through one process's governor blocks the resource for every process.
    let p2 = prefix("gov2");
    let (free, elsewhere) = (
        shared(&srv.url, &p2, "c").await,
        shared(&srv.url, &p2, "d").await,
    );
    let permit = acquire_shared(&gov, &free, agent, core, Request::read())
        .await
        .expect("granted");
    let _ = permit
        .observe(&Observation::from_headers(429, [("retry-after", "2")]))
        .await;
    let d = elsewhere.try_acquire(1, Priority::P1).await.expect("ask");
    assert!(
        matches!(d, QuotaDecision::Wait(w) if w.reason == QuotaWaitReason::Blocked),
        "{d:?}"
    );
    // ... and only the resource it was seen on: the first one is merely spent.
    let other = shared(&srv.url, &p, "b").await;
    let d = other.try_acquire(1, Priority::P1).await.expect("ask");
    assert!(
        matches!(d, QuotaDecision::Wait(w) if w.reason == QuotaWaitReason::Exhausted),
        "{d:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_shared_refusal_that_can_never_pass_is_rejected_not_shed_for_ever() {
    let Some(srv) = server() else { return };
    let quota = shared(&srv.url, &prefix("gov-rejected"), "a").await;
    let gov = Governor::builder().seed(7).build().expect("governor");
    let core = gov
        .add_resource("core", ResourceConfig::github())
        .expect("resource");
    let agent = gov.register("data", Priority::P1).expect("agent");
    // The local governor allows a cost of 5; the shared quota is 3 per window.
    let e = acquire_shared(&gov, &quota, agent, core, Request::read().with_cost(5))
        .await
        .unwrap_err();
    let ResilienceError::GovernorRejected { resource, reason } = &e else {
        panic!("a cost above the whole shared quota is rejected: {e:?}");
    };
    assert_eq!(&**resource, "core");
    assert!(
        reason.contains("cost 5") && reason.contains("3 per window"),
        "{reason}"
    );
    assert_eq!(e.retry_after(), None, "no retry layer should wait on it");
    assert!(e.to_string().contains("now or later"), "{e}");
    let snap = gov.snapshot(core).expect("local snapshot");
    assert_eq!(snap.in_flight, 0, "the local permit was released");
}

/// One resource for every call of a GitHub client: a `search` response (its own bucket, 30 a
/// minute) observed on `core` must not set `core`'s shared pool, nor its 429 block `core` for
/// every process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_response_of_another_bucket_neither_sets_the_shared_pool_nor_blocks_it() {
    let Some(srv) = server() else { return };
    let p = prefix("gov-bucket");
    let connect = |node: &'static str| {
        let c = RedisQuotaConfig::new(&srv.url)
            .prefix(&p)
            .node(node)
            .reserve_share_permille(0);
        async move { RedisQuota::connect(c).await.expect("connect") }
    };
    let (a, b) = (connect("a").await, connect("b").await);
    let spec = QuotaSpec::new(100, Duration::from_secs(600)).with_bucket("core");
    let a = a.resource("gh", spec.clone()).await.expect("resource");
    let b = b.resource("gh", spec).await.expect("resource");
    let search = |status| {
        Observation::new(status)
            .with_limit(30)
            .with_remaining(0)
            .with_retry_after(Duration::from_secs(60))
            .with_resource("search")
    };
    for status in [200, 429] {
        let g = a.acquire(1, Priority::P1).await.expect("granted");
        a.observe(Some(g), &search(status)).await.expect("observed");
        let snap = b.snapshot().await.expect("snapshot");
        assert_eq!(
            (snap.limit, snap.pool, snap.blocked_for),
            (100, 100 - if status == 200 { 1 } else { 2 }, None),
            "status {status}: settled as spent, nothing read, nothing blocked"
        );
    }
    assert!(matches!(
        b.try_acquire(1, Priority::P2).await.expect("ask"),
        QuotaDecision::Go(_)
    ));
    // Its own bucket's readings still count.
    let g = a.acquire(1, Priority::P1).await.expect("granted");
    let own = Observation::new(200)
        .with_limit(100)
        .with_remaining(40)
        .with_resource("core");
    a.observe(Some(g), &own).await.expect("observed");
    assert!(b.snapshot().await.expect("snapshot").pool <= 40);
    assert_eq!(QuotaSpec::github().bucket.as_deref(), Some("core"));
}
