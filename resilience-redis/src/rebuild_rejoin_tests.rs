//! G7, crate-internal: after Redis lost its data and a window was rebuilt, a process of the
//! *new* state whose lease expired comes back. Its calls are sent as its process would,
//! which needs the script's own call; the server is a real, throwaway `redis-server`.

use crate::script::{self, Op, Reply, View};
use crate::test_server as server;
use crate::{QuotaSpec, RedisQuota, RedisQuotaConfig, SharedQuota};
use resilience_core::governor::Priority;
use std::time::Duration;

const TTL: Duration = Duration::from_millis(1_500);

async fn node(url: &str, p: &str, name: &str, share: u32) -> (RedisQuota, SharedQuota) {
    let cfg = RedisQuotaConfig::new(url)
        .prefix(p)
        .node(name)
        .timeouts(Duration::from_millis(500), Duration::from_millis(300))
        .lease_ttl(TTL)
        .reserve_share_permille(share);
    let r = RedisQuota::connect(cfg).await.expect("connect");
    let q = r
        .resource("core", QuotaSpec::new(1_000, Duration::from_secs(3_600)))
        .await
        .expect("resource");
    (r, q)
}

/// A renewal by `fixed`'s process, on `carrier`'s connection, with the view `view`.
async fn renew(carrier: &SharedQuota, fixed: &script::Fixed, view: &View) -> Reply {
    let (mut conn, _) = carrier.inner.link.current().expect("connected");
    script::call(&mut conn, fixed, view, &Op::Renew)
        .await
        .expect("call")
        .expect("reply")
}

/// What the state accounts for: the pool, every reservation and what is held.
async fn accounted(q: &SharedQuota) -> u64 {
    let s = q.snapshot().await.expect("snapshot");
    s.pool + s.reserved_total + s.held
}

/// Its reservation went back to the pool when its lease was reaped; the window's rebuild
/// (for processes holding a lease of the lost state) let it keep that reservation again, on
/// top of the pool, once others had spent from it: 100 counted twice here (review
/// helper-39's lead). It only rejoins.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_lease_of_the_rebuilt_state_expired_rejoins_without_its_old_reservation() {
    let Some(srv) = server::server() else { return };
    if !srv.owned() {
        return server::skip("flushes its redis-server: RESILIENCE_REDIS_URL is set");
    }
    let p = server::prefix("rebuilt-expired");
    let (_ra, a) = node(&srv.url, &p, "a", 0).await;
    let _anchor = a.acquire(1, Priority::P1).await.expect("anchor");
    assert!(srv.cmd("FLUSHALL").is_some_and(|r| r.starts_with("+OK")));
    // a's lease is of the lost state: the window is rebuilt from its view.
    a.renew().await.expect("rebuilt");
    let rebuilt = a.snapshot().await.expect("snapshot");
    assert_eq!(rebuilt.pool, 999, "{rebuilt:?}");
    // Process g joins the new state with a reservation, then is cut off.
    let mut g = a.state.fixed.clone();
    g.node = "g".into();
    g.share_permille = 500;
    // Fail-closed, no express lane: nothing is held for it when its lease is reaped.
    g.hold = 0;
    g.keep = 0;
    let state = a.state.local.lock().state;
    let joined = renew(
        &a,
        &g,
        &View {
            state,
            ..View::default()
        },
    )
    .await;
    assert!(joined.reserved > 100, "{joined:?}");
    tokio::time::sleep(TTL + Duration::from_millis(300)).await;
    let reaped = accounted(&a).await;
    // Others spend 100 from the pool meanwhile.
    let spent = a.acquire(100, Priority::P1).await.expect("spend");
    assert!(!spent.from_reserve(), "{spent:?}");
    let before = accounted(&a).await;
    assert_eq!(before, reaped - 100);
    // g is back, with the view it last had.
    let view = View {
        epoch: joined.epoch,
        reset_at_ms: joined.reset_at_ms,
        pool: joined.pool,
        members: joined.members,
        local_reserved: joined.reserved,
        state: joined.state,
        ..View::default()
    };
    let back = renew(&a, &g, &view).await;
    assert_ne!(back.epoch, joined.epoch, "a new lease: {back:?}");
    assert_eq!(accounted(&a).await, before, "nothing counted twice");
}

/// A snapshot under a lease the process has not heard of yet (its join's reply was lost)
/// names no lease, yet its reply's counter is the process's newest. Its lease record must
/// hold that counter too: left behind, the next call looked behind a reply it had, and the
/// whole state was wiped as rolled back (a rebuild for nothing, every lease lost).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_reply_naming_no_lease_is_not_taken_for_a_rollback() {
    let Some(srv) = server::server() else { return };
    let p = server::prefix("no-lease-ops");
    let (_ra, a) = node(&srv.url, &p, "a", 0).await;
    let _anchor = a.acquire(1, Priority::P1).await.expect("anchor");
    let mut g = a.state.fixed.clone();
    g.node = "g".into();
    let state = a.state.local.lock().state;
    let unheard = View {
        state,
        ..View::default()
    };
    // The join's reply is lost: g still names no lease.
    let joined = renew(&a, &g, &unheard).await;
    assert_ne!(joined.epoch, 0, "{joined:?}");
    let (mut conn, _) = a.inner.link.current().expect("connected");
    let snap = script::call(&mut conn, &g, &unheard, &Op::Snapshot)
        .await
        .expect("call")
        .expect("reply");
    assert!(snap.ops > joined.ops, "{snap:?}");
    let newest = View {
        ops: snap.ops,
        ..unheard
    };
    let again = renew(&a, &g, &newest).await;
    assert_eq!(again.state, state, "not rebuilt: {again:?}");
}

/// A state the process saw replaced comes back, and a stale call (a release of a grant of
/// that state, `call_for` with its lease) names it: the gone list must still find it. The
/// state was born on a host whose clock was ahead (its counters above the new state's), so
/// the counter the call carries (the new state's) is below it and below the lease record:
/// with the gone list read only for calls naming another state, nothing saw the comeback
/// (review helper-43).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_state_seen_replaced_is_found_by_a_stale_call_naming_it() {
    let Some(srv) = server::server() else { return };
    let p = server::prefix("gone-stale");
    let k = |x: &str| format!("{{{p}:core}}:{x}");
    let (_ra, a) = node(&srv.url, &p, "a", 0).await;
    let _anchor = a.acquire(1, Priority::P1).await.expect("anchor");
    // Born three hours ahead.
    srv.move_counters_ahead(&p, 10_800_000);
    a.renew().await.expect("renew");
    let old = a.state.local.lock().lease();
    for x in ["q", "l"] {
        let c = srv.cmd(&format!("COPY {} {}-copy", k(x), k(x)));
        assert_eq!(c.as_deref().map(str::trim), Some(":1"), "{c:?}");
    }
    let del = srv.cmd(&format!("DEL {}", k("q")));
    assert_eq!(del.as_deref().map(str::trim), Some(":1"), "{del:?}");
    a.renew().await.expect("renew");
    a.renew().await.expect("rejoined");
    let new = a.state.local.lock().state;
    assert_ne!(new, old.state, "a new state");
    for x in ["q", "l"] {
        let c = srv.cmd(&format!("COPY {}-copy {} REPLACE", k(x), k(x)));
        assert_eq!(c.as_deref().map(str::trim), Some(":1"), "{c:?}");
    }
    // The stale call, as `call_once` builds it for `of = Some(old)`.
    let mut view = a.state.local.lock().view(0);
    view.epoch = old.epoch;
    view.state = old.state;
    assert!(view.gone.contains(&old.state), "{view:?}");
    let (mut conn, _) = a.inner.link.current().expect("connected");
    let r = script::call(&mut conn, &a.state.fixed, &view, &Op::Snapshot)
        .await
        .expect("call")
        .expect("reply");
    assert!(r.state != old.state && r.state != new, "rebuilt: {r:?}");
}
