//! G7 + G8: per-endpoint windows of the shared rules (`Selector::Endpoint`), judged by the
//! script for every process together against a real redis-server: one window per endpoint,
//! their number bounded (`SHARED_ENDPOINT_CAP`), idle ones evicted to make room.

mod common;

use common::node::{cfg, go, MS};
use common::pacing::{client_with, rules, wait_of};
use common::server::{prefix, server};
use resilience_core::governor::{Measure, Priority, Request, Selector, WindowRule};
use resilience_redis::{QuotaDecision, QuotaWaitReason, SHARED_ENDPOINT_CAP};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_per_endpoint_windows_are_separate_and_their_number_bounded() {
    let Some(srv) = server() else { return };
    let p = prefix("pace-ep");
    let rule = rules(vec![WindowRule::new(
        "points",
        Selector::All,
        Measure::Points,
        10,
        Duration::from_secs(60),
    )
    .per_endpoint()]);
    let (_ra, a) = client_with(cfg(&srv.url, &p, "a"), Some(rule.clone())).await;
    let (_rb, b) = client_with(cfg(&srv.url, &p, "b"), Some(rule)).await;
    let w = |e: &'static str| Request::write().with_endpoint(e); // 5 points
    let _ = go(a
        .try_acquire_request(&w("POST /a"), Priority::P1)
        .await
        .expect("a1"));
    let _ = go(b
        .try_acquire_request(&w("POST /a"), Priority::P1)
        .await
        .expect("a2"));
    let wt = wait_of(
        a.try_acquire_request(&w("POST /a"), Priority::P1)
            .await
            .expect("a3"),
    );
    assert_eq!(wt.reason, QuotaWaitReason::Paced);
    let _ = go(b
        .try_acquire_request(&w("POST /b"), Priority::P1)
        .await
        .expect("b1"));
    // A request of more points than the rule allows can never pass: an error, not a wait.
    let big = Request::read().with_points(11).with_endpoint("GET /c");
    assert!(a.try_acquire_request(&big, Priority::P0).await.is_err());
    // Past the cap, endpoints share one window (never less counted than their own), and the
    // state stays bounded.
    let names: Vec<String> = (0..SHARED_ENDPOINT_CAP + 8)
        .map(|i| format!("GET /n{i}"))
        .collect();
    let mut refused = 0;
    for n in &names {
        let r = Request::write().with_endpoint(n);
        match a.try_acquire_request(&r, Priority::P1).await.expect("ask") {
            QuotaDecision::Go(_) => {}
            QuotaDecision::Wait(w) => {
                assert_eq!(w.reason, QuotaWaitReason::Paced);
                refused += 1;
            }
        }
    }
    // 32 own windows (two were taken by /a and /b), then the overflow window takes two
    // writes of 5 points: the rest wait.
    assert_eq!(
        refused,
        names.len() - (SHARED_ENDPOINT_CAP as usize - 2) - 2
    );
    if srv.owned() {
        let count = |c: &str| -> usize {
            srv.cmd(c)
                .and_then(|s| s.trim().trim_start_matches(':').parse().ok())
                .expect("a count")
        };
        // One ring per endpoint up to the cap, the overflow ring, the rule's ring count, the
        // lifetime and the expiry.
        let cap = SHARED_ENDPOINT_CAP as usize;
        let fields = count(&format!("HLEN {{{p}:core}}:p"));
        assert_eq!(fields, cap + 4, "the rules' state has {fields} fields");
        assert_eq!(count(&format!("ZCARD {{{p}:core}}:i")), cap + 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_idle_endpoint_windows_are_evicted_to_make_room() {
    let Some(srv) = server() else { return };
    if !srv.owned() {
        return; // reads the index's size
    }
    let p = prefix("pace-evict");
    let rule = rules(vec![WindowRule::new(
        "points",
        Selector::All,
        Measure::Points,
        10,
        MS(300),
    )
    .per_endpoint()]);
    let (_r, q) = client_with(cfg(&srv.url, &p, "a"), Some(rule)).await;
    let indexed = || -> usize {
        srv.cmd(&format!("ZCARD {{{p}:core}}:i"))
            .and_then(|s| s.trim().trim_start_matches(':').parse().ok())
            .expect("zcard")
    };
    let cap = SHARED_ENDPOINT_CAP as usize;
    for i in 0..=cap {
        let name = format!("POST /n{i}");
        let _ = go(q
            .try_acquire_request(&Request::write().with_endpoint(&name), Priority::P1)
            .await
            .expect("ask"));
    }
    assert_eq!(indexed(), cap + 1, "the cap's rings and the overflow ring");
    // Every window is over: a new endpoint evicts idle rings and gets one of its own, with
    // its whole limit (two writes of 5 points), and no more.
    tokio::time::sleep(MS(400)).await;
    let fresh = Request::write().with_endpoint("POST /fresh");
    for _ in 0..2 {
        let _ = go(q
            .try_acquire_request(&fresh, Priority::P1)
            .await
            .expect("fresh"));
    }
    let w = wait_of(
        q.try_acquire_request(&fresh, Priority::P1)
            .await
            .expect("3rd"),
    );
    assert_eq!(w.reason, QuotaWaitReason::Paced);
    assert!(indexed() <= cap + 2 - 16, "idle rings left: {}", indexed());
}
