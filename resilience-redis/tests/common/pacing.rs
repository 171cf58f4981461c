//! Shared by the G7 + G8 tests of the shared rules' rebuild: a node with the rules and no
//! reservation, a 10-creations-a-minute rule, and asks that wait out the quota's rebuild.

#![allow(dead_code)]

use super::node::{cfg, go, MS};
use resilience_core::governor::{Measure, Pacing, Priority, Request, Selector, WindowRule};
use resilience_redis::{
    QuotaDecision, QuotaSpec, QuotaWait, QuotaWaitReason, RedisQuota, RedisQuotaConfig, SharedQuota,
};
use std::time::{Duration, Instant};

/// `node` with no reservation on a large hour-long resource under `pacing`: every grant is
/// judged on the shared rules.
pub async fn client(url: &str, p: &str, node: &str, pacing: &Pacing) -> (RedisQuota, SharedQuota) {
    client_with(cfg(url, p, node), Some(pacing.clone())).await
}

/// A client configured by `c`, with no reservation, of the resource `core` (a large
/// hour-long primary quota), paced by `pacing` through the script.
pub async fn client_with(c: RedisQuotaConfig, pacing: Option<Pacing>) -> (RedisQuota, SharedQuota) {
    reserving_with(c.reserve_share_permille(0), pacing).await
}

/// As [`client_with`], with the config's reservation (and so an express lane with quota to
/// spend).
pub async fn reserving_with(
    c: RedisQuotaConfig,
    pacing: Option<Pacing>,
) -> (RedisQuota, SharedQuota) {
    let r = RedisQuota::connect(c).await.expect("connect");
    let mut spec = QuotaSpec::new(1_000_000, Duration::from_secs(3_600));
    if let Some(p) = pacing {
        spec = spec.shared_pacing(p);
    }
    let q = r.resource("core", spec).await.expect("resource");
    (r, q)
}

/// Pacing by these window rules alone.
pub fn rules(windows: Vec<WindowRule>) -> Pacing {
    Pacing {
        windows,
        ..Pacing::default()
    }
}

/// The wait of a decision that must be one.
pub fn wait_of(d: QuotaDecision) -> QuotaWait {
    match d {
        QuotaDecision::Wait(w) => w,
        QuotaDecision::Go(g) => panic!("expected a wait, got a grant {g:?}"),
    }
}

/// 10 creations per minute, shared.
pub fn creates_per_minute() -> Pacing {
    Pacing {
        windows: vec![WindowRule::new(
            "creates",
            Selector::Creates,
            Measure::Requests,
            10,
            Duration::from_secs(60),
        )],
        ..Pacing::default()
    }
}

/// The first decision on `r` that is not "recovering": the quota's rebuild (the pool stays
/// closed until every process has rejoined) waited out.
async fn past_the_rebuild(q: &SharedQuota, r: &Request<'_>) -> QuotaDecision {
    let t = Instant::now();
    loop {
        match q.try_acquire_request(r, Priority::P1).await.expect("ask") {
            QuotaDecision::Wait(w) if w.reason == QuotaWaitReason::Recovering => {
                assert!(t.elapsed() < Duration::from_secs(10), "never rebuilt");
                tokio::time::sleep(MS(20)).await;
            }
            d => return d,
        }
    }
}

/// The wait of a decision that must be one, past the rebuild.
pub async fn paced(q: &SharedQuota, r: &Request<'_>) -> QuotaWait {
    match past_the_rebuild(q, r).await {
        QuotaDecision::Wait(w) => w,
        QuotaDecision::Go(g) => panic!("granted past a full rule after the loss: {g:?}"),
    }
}

/// A decision that must be a grant, past the rebuild.
pub async fn granted(q: &SharedQuota, r: &Request<'_>) {
    let _ = go(past_the_rebuild(q, r).await);
}

/// Every one of `qs`, asking at once (a rebuild may wait for each one's report), finds the
/// creations rule full for most of a minute.
pub async fn full_for_the_minute(qs: &[&SharedQuota]) {
    let asks: Vec<_> = qs
        .iter()
        .map(|&q| {
            let q = q.clone();
            tokio::spawn(async move { paced(&q, &Request::create()).await })
        })
        .collect();
    for ask in asks {
        let w = ask.await.expect("ask");
        assert_eq!(w.reason, QuotaWaitReason::Paced, "{w:?}");
        // The oldest creation leaves the window about 60 s after it was made.
        assert!(w.delay > Duration::from_secs(50), "{w:?}");
    }
}

/// Deletes the rule counts of resource `core` under prefix `p` (as a `volatile-*` maxmemory
/// policy can evict them alone), asserting they were there.
pub fn evict(srv: &super::server::RedisServer, p: &str) {
    let evicted = srv.cmd(&format!("DEL {{{p}:core}}:p"));
    assert!(
        evicted.as_deref().is_some_and(|r| r.starts_with(":1")),
        "{evicted:?}"
    );
}

/// One ask that must wait: its wait.
pub async fn refused(q: &SharedQuota, r: &Request<'_>) -> QuotaWait {
    match q.try_acquire_request(r, Priority::P1).await.expect("ask") {
        QuotaDecision::Wait(w) => w,
        QuotaDecision::Go(g) => panic!("expected a wait, got {g:?}"),
    }
}

/// `n` creations by `q`, each granted at once.
pub async fn create(q: &SharedQuota, n: usize) {
    for _ in 0..n {
        let _ = go(q
            .try_acquire_request(&Request::create(), Priority::P1)
            .await
            .expect("create"));
    }
}
