//! Two workers sharing one quota through Redis: each asks the shared quota before every
//! call and reports the response's headers, so together they never spend past the limit.
//! (Real deployments run one worker per process or host; here they are two connections in
//! one process, so the example needs nothing but a Redis.)
//!
//! ```sh
//! redis-server --port 6390 --save '' &
//! cargo run -p resilience-redis --example two_workers -- redis://127.0.0.1:6390
//! ```

use resilience_core::governor::{Observation, Priority};
use resilience_redis::{QuotaSpec, RedisQuota, RedisQuotaConfig, SharedQuota};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A stand-in for the rate-limited API: 20 calls a minute, answered with GitHub's headers.
struct Api {
    limit: u64,
    used: AtomicU64,
    reset: u64,
}

impl Api {
    fn call(&self) -> Observation {
        let used = self.used.fetch_add(1, Ordering::SeqCst) + 1;
        let status = if used > self.limit { 429 } else { 200 };
        Observation::from_headers(
            status,
            [
                ("x-ratelimit-limit", self.limit.to_string()),
                (
                    "x-ratelimit-remaining",
                    self.limit.saturating_sub(used).to_string(),
                ),
                ("x-ratelimit-reset", self.reset.to_string()),
                ("x-ratelimit-resource", "core".to_string()),
            ],
        )
    }
}

async fn worker(name: &str, quota: SharedQuota, api: Arc<Api>, calls: u32) -> u32 {
    let mut made = 0;
    let mut refused = 0;
    for i in 0..calls {
        let priority = if i % 4 == 0 {
            Priority::P0
        } else {
            Priority::P1
        };
        // Waits at most 200 ms: once the minute's quota is spent, the rest give up.
        let grant = match quota
            .acquire_within(1, priority, Some(Duration::from_millis(200)))
            .await
        {
            Ok(g) => g,
            Err(e) => {
                if refused == 0 {
                    println!("{name}: call {i} not made: {e}");
                }
                refused += 1;
                continue;
            }
        };
        let response = api.call();
        made += 1;
        quota
            .observe(Some(grant), &response)
            .await
            .expect("observe");
    }
    println!("{name}: {made} calls made, {refused} not");
    made
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "redis://127.0.0.1:6379".into());
    let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
    let api = Arc::new(Api {
        limit: 20,
        used: AtomicU64::new(0),
        reset: now + 60,
    });
    // A fresh prefix per run, so a second run does not find this one's spent window.
    let prefix = format!("two-workers-{now}");
    let spec = QuotaSpec::new(20, Duration::from_secs(60)).with_bucket("core");

    let mut handles = Vec::new();
    let mut connections = Vec::new();
    for name in ["worker-a", "worker-b"] {
        let config = RedisQuotaConfig::new(url.as_str())
            .prefix(&prefix)
            .node(name);
        let redis = RedisQuota::connect(config).await?;
        let quota = redis.resource("core", spec.clone()).await?;
        connections.push(redis);
        let api = api.clone();
        handles.push(tokio::spawn(worker(name, quota, api, 15)));
    }
    for h in handles {
        h.await?;
    }
    let sent = api.used.load(Ordering::SeqCst);
    println!("the API saw {sent} calls against a limit of {}", api.limit);
    assert!(sent <= api.limit, "overspent");

    // Before exiting: give the reservations back now, not after the lease TTL.
    for redis in &connections {
        redis.shutdown().await?;
    }
    Ok(())
}
