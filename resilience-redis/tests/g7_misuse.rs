//! G7 misused: processes that give one resource different windows are told, not silently
//! run on the first one's; so is a process that opens a resource twice with different
//! specs; a grant settled through another resource's handle is settled on its own.

mod common;

use common::node::{cfg, go, MS};
use common::server::{prefix, server};
use resilience_core::governor::{Observation, Priority};
use resilience_redis::{QuotaSpec, RedisQuota, RedisQuotaError, Settled};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_process_giving_another_window_than_the_state_in_redis_is_refused_by_name() {
    let Some(srv) = server() else { return };
    let p = prefix("spec-window");
    let a = RedisQuota::connect(cfg(&srv.url, &p, "a"))
        .await
        .expect("a");
    let core = a
        .resource("core", QuotaSpec::new(100, MS(60_000)))
        .await
        .expect("created");
    let b = RedisQuota::connect(cfg(&srv.url, &p, "b"))
        .await
        .expect("b");
    let e = b
        .resource("core", QuotaSpec::new(5_000, MS(3_600_000)))
        .await
        .unwrap_err();
    let RedisQuotaError::Config { field, reason } = &e else {
        panic!("{e:?}");
    };
    assert_eq!(*field, "window");
    for part in ["60.000s", "3600.000s", &format!("{{{p}:core}}:*")] {
        assert!(reason.contains(part), "`{part}` in: {e}");
    }
    // It left again: the first process's state is as it was, with one member.
    let s = core.snapshot().await.expect("snapshot");
    assert_eq!((s.members, s.limit), (1, 100), "{s:?}");
    // The same window (another limit: a reading may have moved it) is fine.
    b.resource("core", QuotaSpec::new(5_000, MS(60_000)))
        .await
        .expect("same window");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_resource_opened_again_in_one_process_with_another_spec_is_refused() {
    let Some(srv) = server() else { return };
    let a = RedisQuota::connect(cfg(&srv.url, &prefix("spec-twice"), "a"))
        .await
        .expect("a");
    a.resource("core", QuotaSpec::new(100, MS(60_000)))
        .await
        .expect("created");
    a.resource("core", QuotaSpec::new(100, MS(60_000)))
        .await
        .expect("the same spec again");
    let e = a
        .resource("core", QuotaSpec::new(100, MS(60_000)).with_bucket("core"))
        .await
        .unwrap_err();
    assert!(
        matches!(&e, RedisQuotaError::Config { field: "spec", reason } if reason.contains("first opened")),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_grant_settled_through_another_resources_handle_is_settled_on_its_own() {
    let Some(srv) = server() else { return };
    let p = prefix("wrong-handle");
    let r = RedisQuota::connect(cfg(&srv.url, &p, "a").reserve_share_permille(0))
        .await
        .expect("a");
    let core = r
        .resource("core", QuotaSpec::new(100, MS(60_000)))
        .await
        .expect("core");
    let search = r
        .resource("search", QuotaSpec::new(30, MS(60_000)))
        .await
        .expect("search");
    let g = go(search.try_acquire(1, Priority::P1).await.expect("acquire"));
    assert_eq!(core.release(g).await.expect("release"), Settled::Applied);
    assert_eq!(search.snapshot().await.expect("snapshot").pool, 30);
    let g = go(search.try_acquire(1, Priority::P1).await.expect("acquire"));
    let reading = Observation::new(200).with_limit(30).with_remaining(10);
    assert_eq!(
        core.observe(Some(g), &reading).await.expect("observe"),
        Settled::Applied
    );
    assert_eq!(search.snapshot().await.expect("snapshot").pool, 10);
    assert_eq!(core.snapshot().await.expect("snapshot").pool, 100);
    // A grant of another connection, whose resource this one has not opened: told.
    let other = RedisQuota::connect(cfg(&srv.url, &p, "b").reserve_share_permille(0))
        .await
        .expect("b");
    let graphql = other
        .resource("graphql", QuotaSpec::new(10, MS(60_000)))
        .await
        .expect("graphql");
    let g = go(graphql.try_acquire(1, Priority::P1).await.expect("acquire"));
    let e = core.release(g).await.unwrap_err();
    assert!(
        matches!(&e, RedisQuotaError::Config { field: "grant", reason } if reason.contains("graphql")),
        "{e}"
    );
}
