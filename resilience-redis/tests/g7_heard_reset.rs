//! G7: the reset a process heard while cut off, in the view a rebuild takes after a data
//! loss: as read (not the offline stop's early second), as the server reads resets (an
//! epoch header as read; a delta on the server's clock), whatever this host's clock says.

mod common;

use common::node::{cfg, go, offline_grant, rejoined, unix_now, MS};
use common::proxy::Proxy;
use common::server::{prefix, server, state_key, RedisServer};
use resilience_core::clock::{BootClock, Clock};
use resilience_core::governor::{Observation, Priority, ResetAt};
use resilience_core::sleep::TokioSleeper;
use resilience_redis::{LinkState, QuotaSpec, RedisQuota};
use std::sync::Arc;
use std::time::Duration;

/// This host's wall clock, `ahead` of the Redis server's (negative: behind; README: "Time
/// is Redis's (TIME), so host clocks may disagree").
#[derive(Debug)]
struct Skewed {
    inner: BootClock,
    ahead_ms: i64,
}

impl Clock for Skewed {
    fn now(&self) -> Duration {
        self.inner.now()
    }
    fn unix_time(&self) -> Duration {
        let skew = MS(self.ahead_ms.unsigned_abs());
        if self.ahead_ms >= 0 {
            self.inner.unix_time() + skew
        } else {
            self.inner.unix_time().saturating_sub(skew)
        }
    }
}

/// A process on a host `ahead_ms` ahead of Redis is cut off, reads `heard` (40 left) for an
/// offline grant, and Redis loses its data; the process rejoins and the window is rebuilt
/// from its view. The rebuilt state's `rebuilt` and `reset_at` fields.
async fn heard_then_lost(
    srv: &RedisServer,
    name: &str,
    ahead_ms: i64,
    heard: Observation,
) -> (i64, u64) {
    let p = prefix(name);
    let proxy = Proxy::start(&srv.url).await;
    let a_cfg = cfg(&proxy.url, &p, "a")
        .reserve_share_permille(500)
        .lease_ttl(MS(60_000))
        .call_bound(MS(400))
        .express(None, 1);
    let clock = Arc::new(Skewed {
        inner: BootClock::new(),
        ahead_ms,
    });
    let ra = RedisQuota::connect_with(a_cfg, clock, Arc::new(TokioSleeper))
        .await
        .expect("connect");
    let a = ra
        .resource("core", QuotaSpec::new(100, MS(3_600_000)))
        .await
        .expect("resource");
    let g = go(a.try_acquire(1, Priority::P1).await.expect("a"));
    a.observe(Some(g), &Observation::new(200))
        .await
        .expect("observe");
    proxy.cut();
    let spent = offline_grant(&a).await;
    assert_eq!(ra.link_state(), LinkState::Degraded);
    let _ = a.observe(spent, &heard).await;
    let del = ["q", "l", "e", "h", "r"]
        .map(|k| state_key(&p, k))
        .join(" ");
    srv.cmd(&format!("DEL {del}")).expect("delete");
    proxy.restore();
    rejoined(&ra, &a).await;
    let _ = a.renew().await;
    let rebuilt = srv.state_field(&p, "rebuilt");
    let reset_at = u64::try_from(srv.state_field(&p, "reset_at")).expect("reset_at");
    (rebuilt, reset_at)
}

/// `x-ratelimit-reset` `secs` from now on the true clock (upstream's and Redis's), 40 left;
/// the header's value in ms.
fn epoch_reading(secs: u64) -> (Observation, u64) {
    let reset_s = (unix_now() + MS(secs * 1000)).as_secs() + 1;
    let headers = [
        ("x-ratelimit-limit", "100".to_owned()),
        ("x-ratelimit-remaining", "40".to_owned()),
        ("x-ratelimit-reset", reset_s.to_string()),
    ];
    (Observation::from_headers(200, headers), reset_s * 1000)
}

/// Upstream's window may last until the header's reset R itself (whole seconds, rounded
/// up), so the view says R, not R - 1 s (the offline stop's early second): a rebuilt window
/// ending then gave out a whole new pool inside upstream's old one (100 with 40 left).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_rebuild_takes_the_heard_reset_as_read() {
    let Some(srv) = server() else { return };
    let (heard, header) = epoch_reading(4);
    let (_, reset_at) = heard_then_lost(&srv, "heard-view", 0, heard).await;
    assert!(
        reset_at >= header,
        "rebuilt reset {reset_at}, header {header}"
    );
}

/// On a host 20 s ahead of Redis: an epoch header is upstream's clock, which the script
/// compares resets with. Through this host's clock, the rebuilt window ended 20 s early.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_an_epoch_reset_heard_on_a_host_ahead_of_redis_is_rebuilt_as_read() {
    let Some(srv) = server() else { return };
    let (heard, header) = epoch_reading(30);
    let (_, reset_at) = heard_then_lost(&srv, "heard-ahead", 20_000, heard).await;
    assert!(
        reset_at >= header,
        "rebuilt reset {reset_at}, {} ms before the header's {header}",
        header.saturating_sub(reset_at)
    );
}

/// A delta reset (`ResetAt::After`, the IETF fields; the squad's shared observation sends
/// only these) on a host 20 s behind Redis: upstream's window ends in 10 s. On this host's
/// clock, the view's reset was 11 s in the server's past: the rebuild read the window as
/// over and started a fresh one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_delta_reset_heard_on_a_host_behind_redis_is_rebuilt_on_the_servers_clock() {
    let Some(srv) = server() else { return };
    let heard = Observation::new(200)
        .with_limit(100)
        .with_remaining(40)
        .with_reset(ResetAt::After(10));
    let before = unix_now();
    let (rebuilt, reset_at) = heard_then_lost(&srv, "heard-behind", -20_000, heard).await;
    assert!(rebuilt != 0, "a live window read as ended");
    let ten_s = u64::try_from((before + MS(10_000)).as_millis()).expect("ms");
    assert!(
        reset_at >= ten_s,
        "rebuilt reset {reset_at}, 10 s from the reading {ten_s}"
    );
}
