//! G7: the reset a process heard while cut off, in the view a rebuild takes after a data
//! loss: as read (not the offline stop's early second), on the server's clock.

mod common;

use common::node::{cfg, go, offline_grant, quota, rejoined, unix_now, MS};
use common::proxy::Proxy;
use common::server::{prefix, server, state_key};
use resilience_core::governor::{Observation, Priority};
use resilience_redis::{LinkState, QuotaDecision};
use std::sync::Arc;

/// A process cut off reads `x-ratelimit-reset: R` (40 left). Redis then loses its data; the
/// process rejoins and the window is rebuilt from its view. Upstream's window may last until
/// R itself (the header is whole seconds, rounded up), so the view says R, not R - 1 s (the
/// offline stop's early second): a rebuilt window ending then gave out a whole new pool
/// inside upstream's old one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_rebuild_takes_the_heard_reset_as_read() {
    let Some(srv) = server() else { return };
    let p = prefix("heard-view");
    let proxy = Proxy::start(&srv.url).await;
    let a_cfg = cfg(&proxy.url, &p, "a")
        .reserve_share_permille(500)
        .lease_ttl(MS(30_000))
        .call_bound(MS(400))
        .express(None, 1);
    let (ra, a) = quota(a_cfg, 100, MS(3_600_000)).await;
    let g = go(a.try_acquire(1, Priority::P1).await.expect("a"));
    a.observe(Some(g), &Observation::new(200))
        .await
        .expect("observe");
    proxy.cut();
    let spent = offline_grant(&a).await;
    assert_eq!(ra.link_state(), LinkState::Degraded);
    let spent = spent.expect("an offline grant");
    let reset_s = (unix_now() + MS(4_000)).as_secs() + 1;
    let headers = [
        ("x-ratelimit-limit", "100".to_owned()),
        ("x-ratelimit-remaining", "40".to_owned()),
        ("x-ratelimit-reset", reset_s.to_string()),
    ];
    let _ = a
        .observe(Some(spent), &Observation::from_headers(200, headers))
        .await;
    // Redis loses its data.
    let del = ["q", "l", "e", "h", "r"]
        .map(|k| state_key(&p, k))
        .join(" ");
    srv.cmd(&format!("DEL {del}")).expect("delete");
    proxy.restore();
    rejoined(&ra, &a).await;
    let _ = a.renew().await;
    let reset_at = srv.state_field(&p, "reset_at") as u64;
    eprintln!(
        "header reset {} ms, rebuilt reset_at {reset_at} ms",
        reset_s * 1000
    );
    // Just past the rebuilt end, before upstream's (R): what is given out?
    let wake = reset_at + 150;
    let now = unix_now().as_millis() as u64;
    if wake > now {
        tokio::time::sleep(MS(wake - now)).await;
    }
    let before_r = (unix_now().as_millis() as u64) < reset_s * 1000;
    let mut granted = Vec::new();
    while let Ok(QuotaDecision::Go(g)) = a.try_acquire(1, Priority::P1).await {
        granted.push(g);
        if granted.len() > 200 {
            break;
        }
    }
    eprintln!(
        "granted {} before upstream's reset: {before_r}",
        granted.len()
    );
    assert!(
        reset_at >= reset_s * 1000,
        "the rebuilt window ends at {reset_at}, before the header's {} (granted {} at +{} ms, before it: {before_r}, with <= 40 left upstream)",
        reset_s * 1000,
        granted.len(),
        wake.saturating_sub(reset_s * 1000 - 1000)
    );
}

/// This host's wall clock, `behind` or `ahead` of the Redis server's (README: "Time is
/// Redis's (TIME), so host clocks may disagree").
#[derive(Debug)]
struct Skewed {
    inner: resilience_core::clock::BootClock,
    behind: std::time::Duration,
    ahead: std::time::Duration,
}

impl resilience_core::clock::Clock for Skewed {
    fn now(&self) -> std::time::Duration {
        self.inner.now()
    }
    fn unix_time(&self) -> std::time::Duration {
        (self.inner.unix_time() + self.ahead).saturating_sub(self.behind)
    }
}

/// The same with a delta reset (`ResetAt::After`, the IETF fields; the squad's shared
/// observation sends only these) on a host whose clock is 20 s behind Redis's. Upstream's
/// window ends in 10 s with 40 left. Sent on this host's clock, the view's reset was 11 s in
/// the server's past: the rebuild read the window as over and started a fresh one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_delta_reset_heard_on_a_host_behind_redis_is_rebuilt_on_the_servers_clock() {
    let Some((rebuilt, granted)) = delta_heard_then_loss(20_000, "heard-skew").await else {
        return;
    };
    assert!(
        rebuilt != 0,
        "a live window (10 s left upstream, an hour as told) read as ended: no rebuild, {granted} granted at once"
    );
}

/// Control: the same with the clocks agreeing: the window is rebuilt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_delta_reset_heard_with_clocks_agreeing_is_rebuilt() {
    let Some((rebuilt, granted)) = delta_heard_then_loss(0, "heard-noskew").await else {
        return;
    };
    assert!(rebuilt != 0, "rebuilt {rebuilt}, granted {granted}");
}

async fn delta_heard_then_loss(behind_ms: u64, name: &str) -> Option<(i64, usize)> {
    use resilience_core::governor::ResetAt;
    let srv = server()?;
    let p = prefix(name);
    let proxy = Proxy::start(&srv.url).await;
    let a_cfg = cfg(&proxy.url, &p, "a")
        .reserve_share_permille(500)
        .lease_ttl(MS(30_000))
        .call_bound(MS(400))
        .express(None, 1);
    let clock = Arc::new(Skewed {
        inner: resilience_core::clock::BootClock::new(),
        behind: MS(behind_ms),
        ahead: MS(0),
    });
    let ra = resilience_redis::RedisQuota::connect_with(
        a_cfg,
        clock,
        Arc::new(resilience_core::sleep::TokioSleeper),
    )
    .await
    .expect("connect");
    let a = ra
        .resource("core", resilience_redis::QuotaSpec::new(100, MS(3_600_000)))
        .await
        .expect("resource");
    let g = go(a.try_acquire(1, Priority::P1).await.expect("a"));
    a.observe(Some(g), &Observation::new(200))
        .await
        .expect("observe");
    let seen = a.snapshot().await.expect("snapshot").pool;
    proxy.cut();
    let spent = offline_grant(&a).await;
    assert_eq!(ra.link_state(), LinkState::Degraded);
    let spent = spent.expect("an offline grant");
    let obs = Observation::new(200)
        .with_limit(100)
        .with_remaining(40)
        .with_reset(ResetAt::After(10));
    let _ = a.observe(Some(spent), &obs).await;
    let del = ["q", "l", "e", "h", "r"]
        .map(|k| state_key(&p, k))
        .join(" ");
    srv.cmd(&format!("DEL {del}")).expect("delete");
    proxy.restore();
    rejoined(&ra, &a).await;
    let _ = a.renew().await;
    let rebuilt = srv.state_field(&p, "rebuilt");
    let reset_at = srv.state_field(&p, "reset_at");
    let mut granted = Vec::new();
    while let Ok(QuotaDecision::Go(g)) = a.try_acquire(1, Priority::P1).await {
        granted.push(g);
        if granted.len() > 200 {
            break;
        }
    }
    eprintln!("behind {behind_ms} ms: pool seen {seen}; rebuilt {rebuilt}, reset_at {reset_at}; granted {}", granted.len());
    Some((rebuilt, granted.len()))
}

/// Returns (header reset ms, rebuilt reset_at ms, grants just past the rebuilt end, whether
/// that was before the header's reset).
async fn epoch_heard_then_loss(ahead_ms: u64, name: &str) -> Option<(u64, u64, usize, bool)> {
    let srv = server()?;
    let p = prefix(name);
    let proxy = Proxy::start(&srv.url).await;
    let a_cfg = cfg(&proxy.url, &p, "a")
        .reserve_share_permille(500)
        .lease_ttl(MS(60_000))
        .call_bound(MS(400))
        .express(None, 1);
    let clock = Arc::new(Skewed {
        inner: resilience_core::clock::BootClock::new(),
        behind: MS(0),
        ahead: MS(ahead_ms),
    });
    let ra = resilience_redis::RedisQuota::connect_with(
        a_cfg,
        clock,
        Arc::new(resilience_core::sleep::TokioSleeper),
    )
    .await
    .expect("connect");
    let a = ra
        .resource("core", resilience_redis::QuotaSpec::new(100, MS(3_600_000)))
        .await
        .expect("resource");
    let g = go(a.try_acquire(1, Priority::P1).await.expect("a"));
    a.observe(Some(g), &Observation::new(200))
        .await
        .expect("observe");
    proxy.cut();
    let spent = offline_grant(&a).await;
    assert_eq!(ra.link_state(), LinkState::Degraded);
    let spent = spent.expect("an offline grant");
    // Upstream (and Redis, on the same host as the test) is on the true clock: its window
    // ends in ~30 s, 40 left.
    let reset_s = (unix_now() + MS(30_000)).as_secs() + 1;
    let headers = [
        ("x-ratelimit-limit", "100".to_owned()),
        ("x-ratelimit-remaining", "40".to_owned()),
        ("x-ratelimit-reset", reset_s.to_string()),
    ];
    let _ = a
        .observe(Some(spent), &Observation::from_headers(200, headers))
        .await;
    let del = ["q", "l", "e", "h", "r"]
        .map(|k| state_key(&p, k))
        .join(" ");
    srv.cmd(&format!("DEL {del}")).expect("delete");
    proxy.restore();
    rejoined(&ra, &a).await;
    let _ = a.renew().await;
    let reset_at = srv
        .cmd(&format!(
            "EVAL \"return cmsgpack.unpack(redis.call('GET', KEYS[1])).reset_at\" 1 {}",
            state_key(&p, "q")
        ))
        .unwrap_or_default()
        .trim()
        .trim_start_matches(':')
        .parse::<u64>()
        .expect("reset_at");
    eprintln!(
        "ahead {ahead_ms} ms: header reset {} ms, rebuilt reset_at {reset_at} ms",
        reset_s * 1000
    );
    let wake = reset_at + 150;
    let now = unix_now().as_millis() as u64;
    if wake > now && wake - now < 40_000 {
        tokio::time::sleep(MS(wake - now)).await;
    }
    let before_r = (unix_now().as_millis() as u64) < reset_s * 1000;
    let mut granted = Vec::new();
    while let Ok(QuotaDecision::Go(g)) = a.try_acquire(1, Priority::P1).await {
        granted.push(g);
        if granted.len() > 200 {
            break;
        }
    }
    eprintln!(
        "granted {} just past the rebuilt end; before upstream's reset: {before_r}",
        granted.len()
    );
    Some((reset_s * 1000, reset_at, granted.len(), before_r))
}

/// This host's wall clock 20 s ahead of Redis's (and upstream's).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_an_epoch_reset_heard_on_a_host_ahead_of_redis_is_rebuilt_as_read() {
    let Some((header, rebuilt, granted, before_r)) = epoch_heard_then_loss(20_000, "-ahead").await
    else {
        return;
    };
    assert!(
        rebuilt >= header,
        "rebuilt window ends at {rebuilt}, {} ms before the header's {header}: granted {granted} then (before upstream's reset: {before_r}), with <= 40 left upstream",
        header.saturating_sub(rebuilt)
    );
}

/// Control: the clocks agree.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_an_epoch_reset_heard_with_clocks_agreeing_is_rebuilt_as_read() {
    let Some((header, rebuilt, granted, before_r)) = epoch_heard_then_loss(0, "-agree").await
    else {
        return;
    };
    assert!(
        rebuilt >= header,
        "rebuilt {rebuilt} < header {header} (granted {granted}, {before_r})"
    );
}
