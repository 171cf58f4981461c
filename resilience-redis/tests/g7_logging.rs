//! G7: what a process logs about an outage. In a test binary of its own: `tracing` caches
//! per call site whether anyone listens, and another test of the same process meeting an
//! outage on another thread (with no subscriber) can race this test's thread-local one.

mod common;

use common::node::{cfg, go, quota, MS};
use common::server::{prefix, server, skip};
use resilience_core::governor::Priority;
use resilience_redis::LinkState;
use std::time::{Duration, Instant};

/// Collects formatted log lines.
#[derive(Clone, Default)]
struct Logs(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("logs").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    fn count(&self, needle: &str) -> usize {
        String::from_utf8_lossy(&self.0.lock().expect("logs"))
            .matches(needle)
            .count()
    }
}

// Current-thread runtime: every task logs on the test's thread, into its subscriber.
#[tokio::test]
async fn g7_an_outage_is_logged_once_with_the_safe_url_and_so_is_the_rejoin() {
    let Some(mut srv) = server() else { return };
    if !srv.owned() {
        return skip("needs a redis-server it can kill: RESILIENCE_REDIS_URL is set");
    }
    let logs = Logs::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let c = cfg(&srv.url, &prefix("log"), "a").reserve_share_permille(100);
    let (r, q) = quota(c, 100, MS(60_000)).await;
    srv.kill();
    for _ in 0..30 {
        let _ = q.try_acquire(1, Priority::P1).await;
    }
    assert_eq!(logs.count("Redis unreachable"), 1, "logged once per outage");
    assert_eq!(logs.count(&format!("url={}", srv.url)), 1);
    // The reservation (10) less the acquire whose reply was lost with the connection.
    assert_eq!(
        logs.count("local_shares=core=9"),
        1,
        "names the local share"
    );
    srv.restart();
    let t = Instant::now();
    while r.link_state() != LinkState::Connected {
        assert!(t.elapsed() < Duration::from_secs(10), "never rejoined");
        tokio::time::sleep(MS(50)).await;
    }
    let _ = go(q
        .try_acquire(1, Priority::P1)
        .await
        .expect("acquire after the rejoin"));
    assert_eq!(logs.count("rejoined"), 1);
}
