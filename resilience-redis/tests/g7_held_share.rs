//! G5 + G7: the reservation of a degraded lease that ran out stays held until its holder
//! reports (or the window ends), even past a reading that looks late enough to count all it
//! spent. Freeing it there (tried, and reverted) overspent twice: a slower reading of an
//! earlier grant at the same ledger position (cost-0 grants tie it) set the pool after the
//! share was gone; and a Redis clock stepped ahead reaped the lease of a holder still
//! spending. Each test here failed with it.

mod common;

use common::node::{cfg, go, MS};
use common::proxy::Proxy;
use common::server::{prefix, server};
use resilience_core::governor::{Observation, Priority};
use resilience_redis::{QuotaDecision, QuotaSpec, RedisQuota, RedisQuotaConfig, SharedQuota};
use std::time::Duration;

const LIMIT: u64 = 100;

async fn node(c: RedisQuotaConfig) -> (RedisQuota, SharedQuota) {
    let r = RedisQuota::connect(c.call_bound(MS(1_000)))
        .await
        .expect("connect");
    let q = r
        .resource("core", QuotaSpec::new(LIMIT, Duration::from_secs(3600)))
        .await
        .expect("resource");
    (r, q)
}

fn reading(used: u64) -> Observation {
    Observation::new(200)
        .with_limit(LIMIT)
        .with_remaining(LIMIT - used)
}

/// Grants `b` (no reservation) gives until refused.
async fn drain(b: &SharedQuota) -> u64 {
    let mut n = 0;
    loop {
        match b.try_acquire(1, Priority::P1).await.expect("acquire") {
            QuotaDecision::Go(_) => n += 1,
            QuotaDecision::Wait(_) => return n,
        }
        assert!(n < 1000);
    }
}

/// A holder `a` (half the pool reserved, degraded mode) behind a proxy, just cut off from
/// Redis, and `b` with no reservation; the calls sent upstream so far (a's one anchor).
struct Holder {
    proxy: Proxy,
    _ra: RedisQuota,
    _rb: RedisQuota,
    a: SharedQuota,
    b: SharedQuota,
    used: u64,
    share: u64,
}

async fn holder_cut_off(srv: &common::server::RedisServer, p: &str, ttl: Duration) -> Holder {
    let proxy = Proxy::start(&srv.url).await;
    let (ra, a) = node(
        cfg(&proxy.url, p, "a")
            .reserve_share_permille(500)
            .lease_ttl(ttl),
    )
    .await;
    let (rb, b) = node(cfg(&srv.url, p, "b").reserve_share_permille(0)).await;
    let g = go(a.try_acquire(1, Priority::P1).await.expect("anchor"));
    a.observe(Some(g), &reading(1)).await.expect("observe");
    let share = a.snapshot().await.expect("snapshot").reserved;
    assert!(share >= 10, "{share}");
    proxy.cut();
    let _ = a.try_acquire(1, Priority::P1).await; // notices the loss
    Holder {
        proxy,
        _ra: ra,
        _rb: rb,
        a,
        b,
        used: 1,
        share,
    }
}

/// A cost-0 grant (a conditional request) a call bound after the holder's lease ran out; a
/// slower response of an earlier grant at the same ledger position, read upstream before
/// the holder's offline calls landed, comes back after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g5_a_held_share_outlives_a_late_reading_and_a_stale_one_after_it() {
    let Some(srv) = server() else { return };
    let p = prefix("held-stale-reading");
    let Holder {
        proxy: _proxy,
        a,
        b,
        mut used,
        share,
        ..
    } = holder_cut_off(&srv, &p, MS(600)).await;
    // a spends all it can of its share offline before its own deadline.
    let mut offline = 0;
    let t = std::time::Instant::now();
    while t.elapsed() < MS(300) {
        if let Ok(QuotaDecision::Go(g)) = a.try_acquire(1, Priority::P1).await {
            assert!(g.is_offline(), "{g:?}");
            offline += 1;
        }
    }
    assert!(offline >= 5, "{offline}");
    used += offline;
    tokio::time::sleep(MS(900)).await;
    let s = b.snapshot().await.expect("snapshot"); // reaps a's lease
    assert_eq!((s.members, s.held), (1, share), "{s:?}");

    // g1: granted before a's (slow) calls landed upstream; its response is slow too.
    let g1 = go(b.try_acquire(1, Priority::P1).await.expect("acquire"));
    used += 1;
    // A call bound (5 slots) later: a conditional request, cost 0, same ledger position.
    tokio::time::sleep(MS(1_300)).await;
    let g2 = go(b.try_acquire(0, Priority::P1).await.expect("acquire 0"));
    b.observe(Some(g2), &reading(used))
        .await
        .expect("observe g2");
    let s = b.snapshot().await.expect("snapshot");
    assert_eq!(s.held, share, "{s:?}");
    // g1's response arrives now: read upstream before a's offline calls landed.
    b.observe(Some(g1), &reading(used - offline))
        .await
        .expect("observe g1");
    let more = drain(&b).await;
    assert!(
        used + more <= LIMIT,
        "overspent: {} calls upstream in a window of {LIMIT}",
        used + more
    );
}

/// Moves `node`'s lease expiry to `back_ms` before the server's now, in the lease hash and the
/// expiry zset: what the server sees once its clock has jumped ahead past the expiry (a failover
/// to a replica, with the data, whose clock is ahead; an NTP step on the Redis host).
fn clock_ahead_for_lease(srv: &common::server::RedisServer, p: &str, node: &str, back_ms: u64) {
    let k = |x: &str| format!("{{{p}:core}}:{x}");
    let script = "local v=redis.call('HGET',KEYS[1],ARGV[1]) \
        local e,r,w,o,x,c=string.match(v,'^(%d+):(%d+):(%d+):(%d+):(%d+):(%d+)$') \
        local t=redis.call('TIME') \
        local now=tonumber(t[1])*1000+math.floor(tonumber(t[2])/1000) \
        local nx=now-tonumber(ARGV[2]) \
        redis.call('HSET',KEYS[1],ARGV[1],e..':'..r..':'..w..':'..o..':'..string.format('%d',nx)..':'..c) \
        redis.call('ZADD',KEYS[2],nx,ARGV[1]) \
        return v..' -> '..string.format('%d',nx)";
    srv.cmd(&format!(
        "EVAL \"{script}\" 2 {} {} {node} {back_ms}",
        k("l"),
        k("e")
    ))
    .expect("the lease moved");
}

/// The lease's expiry and the grant's time are the server's clock; the holder's deadline is
/// its own. A server clock that jumps ahead (the lease's expiry now 2 s behind it) reaps the
/// lease of a process still spending offline; a reading after that must not free its share.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g5_a_redis_clock_stepped_ahead_does_not_free_the_share_of_a_holder_still_spending() {
    let Some(srv) = server() else { return };
    let p = prefix("held-clock-ahead");
    let Holder {
        proxy: _proxy,
        a,
        b,
        mut used,
        share,
        ..
    } = holder_cut_off(&srv, &p, MS(4_000)).await;
    let mut offline = 0;
    for _ in 0..5 {
        if let Ok(QuotaDecision::Go(g)) = a.try_acquire(1, Priority::P1).await {
            assert!(g.is_offline(), "{g:?}");
            offline += 1;
        }
    }
    used += offline;
    // The Redis host's clock jumps ahead (failover): a's lease expiry is 2 s in its past.
    clock_ahead_for_lease(&srv, &p, "a", 2_000);
    tokio::time::sleep(MS(60)).await;
    let s = b.snapshot().await.expect("snapshot"); // reaps a's lease
    assert_eq!((s.members, s.held), (1, share), "{s:?}");
    let g2 = go(b.try_acquire(1, Priority::P1).await.expect("acquire"));
    used += 1;
    b.observe(Some(g2), &reading(used)).await.expect("observe");
    let s = b.snapshot().await.expect("snapshot");
    assert_eq!(s.held, share, "{s:?}");
    // a, still cut off and within its own deadline, spends the rest of its share.
    let mut later = 0;
    let t = std::time::Instant::now();
    while t.elapsed() < MS(1_500) {
        if let Ok(QuotaDecision::Go(g)) = a.try_acquire(1, Priority::P1).await {
            assert!(g.is_offline(), "{g:?}");
            later += 1;
        }
    }
    used += later;
    let more = drain(&b).await;
    assert!(
        used + more <= LIMIT,
        "overspent: {} calls upstream in a window of {LIMIT}",
        used + more
    );
}
