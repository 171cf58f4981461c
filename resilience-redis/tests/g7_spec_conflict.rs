//! G7: processes that give one resource different windows are told, not silently run on the
//! first one's; a process that opens a resource twice with different specs is told too.

mod common;

use common::node::{cfg, MS};
use common::server::{prefix, server};
use resilience_redis::{QuotaSpec, RedisQuota, RedisQuotaError};

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
