//! G7 + G8: when Redis loses its data (killed and restarted empty), the shared pacing rules'
//! counts are rebuilt from every process's report of its own grants, so the windows open
//! at the loss are not spent twice. Against a real redis-server this test owns.

mod common;

use common::node::{cfg, go, rejoined, MS};
use common::pacing::{client, create, creates_per_minute, full_for_the_minute, granted, paced};
use common::server::{prefix, server, skip};
use resilience_core::governor::{Measure, Pacing, Priority, Request, Selector, WindowRule};
use resilience_redis::{QuotaDecision, QuotaSpec, QuotaWaitReason, RedisQuota};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_window_counts_are_rebuilt_from_every_process_after_redis_loses_its_data() {
    let Some(mut srv) = server() else { return };
    if !srv.owned() {
        return skip("restarts its redis-server: RESILIENCE_REDIS_URL is set");
    }
    let p = prefix("pace-rebuild");
    let pacing = Pacing {
        windows: vec![
            WindowRule::new(
                "creates",
                Selector::Creates,
                Measure::Requests,
                10,
                Duration::from_secs(60),
            ),
            WindowRule::new(
                "points",
                Selector::All,
                Measure::Points,
                40,
                Duration::from_secs(60),
            )
            .per_endpoint(),
        ],
        ..Pacing::default()
    };
    let (ra, a) = client(&srv.url, &p, "a", &pacing).await;
    let (rb, b) = client(&srv.url, &p, "b", &pacing).await;
    let create = |e| Request::create().with_endpoint(e); // 5 points
    for _ in 0..6 {
        let _ = go(a
            .try_acquire_request(&create("/a"), Priority::P1)
            .await
            .expect("a"));
    }
    for _ in 0..4 {
        let _ = go(b
            .try_acquire_request(&create("/b"), Priority::P1)
            .await
            .expect("b"));
    }
    // 10 creations: the rule is full. /a has 30 points of 40, /b 20.
    let full = paced(&a, &create("/c")).await;
    assert_eq!(full.reason, QuotaWaitReason::Paced);

    srv.kill();
    srv.restart();
    rejoined(&ra, &a).await;
    rejoined(&rb, &b).await;

    // Without the reports, both processes could create 10 more in this minute.
    for q in [&a, &b] {
        let w = paced(q, &create("/c")).await;
        assert_eq!(w.reason, QuotaWaitReason::Paced, "{w:?}");
        // The oldest creation leaves the window about 60 s after it was made.
        assert!(w.delay > Duration::from_secs(50), "{w:?}");
    }
    // Each endpoint got back its own count, no more: /a 30 (11 more points would pass 40,
    // 10 fit), /b 20 (11 fit).
    let points = |n, e| Request::read().with_points(n).with_endpoint(e);
    let w = paced(&a, &points(11, "/a")).await;
    assert_eq!(w.reason, QuotaWaitReason::Paced, "{w:?}");
    granted(&b, &points(11, "/b")).await;
    granted(&a, &points(10, "/a")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_write_spacing_is_rebuilt_after_redis_loses_its_data() {
    let Some(mut srv) = server() else { return };
    if !srv.owned() {
        return skip("restarts its redis-server: RESILIENCE_REDIS_URL is set");
    }
    let p = prefix("pace-rebuild-gap");
    let pacing = Pacing::default().with_write_spacing(Duration::from_secs(30));
    let (ra, a) = client(&srv.url, &p, "a", &pacing).await;
    let (rb, b) = client(&srv.url, &p, "b", &pacing).await;
    let _ = go(a
        .try_acquire_request(&Request::write(), Priority::P1)
        .await
        .expect("write"));
    srv.kill();
    srv.restart();
    rejoined(&ra, &a).await;
    rejoined(&rb, &b).await;
    // b made no write, but a's was made less than 30 s ago: b waits out the gap.
    let w = paced(&b, &Request::write()).await;
    assert_eq!(w.reason, QuotaWaitReason::Paced, "{w:?}");
    assert!(w.delay > Duration::from_secs(25), "{w:?}");
    // Reads are not spaced.
    granted(&b, &Request::read()).await;
}

/// A process that used more endpoints in a window than its log keeps one by one (256)
/// reports the rest as one overflow count; the rebuild counts it against every endpoint,
/// since it could be any endpoint's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_a_reported_overflow_counts_against_every_endpoint() {
    let Some(mut srv) = server() else { return };
    if !srv.owned() {
        return skip("restarts its redis-server: RESILIENCE_REDIS_URL is set");
    }
    let p = prefix("pace-rebuild-over");
    let pacing = Pacing {
        windows: vec![WindowRule::new(
            "points",
            Selector::All,
            Measure::Points,
            1_000,
            Duration::from_secs(60),
        )
        .per_endpoint()],
        ..Pacing::default()
    };
    let (ra, a) = client(&srv.url, &p, "a", &pacing).await;
    // One point on each of 257 endpoints: the last is past the log's bound.
    for i in 0..=256 {
        let e = format!("/e{i}");
        let _ = go(a
            .try_acquire_request(&Request::read().with_endpoint(&e), Priority::P1)
            .await
            .expect("read"));
    }
    srv.kill();
    srv.restart();
    rejoined(&ra, &a).await;
    let _ = a.snapshot().await.expect("snapshot"); // the report, if the renewal has not sent it
                                                   // The endpoints the rebuild gave a window of their own (the server keeps 32).
    let fields = srv
        .cmd(&format!(
            "EVAL \"return table.concat(redis.call('HKEYS', KEYS[1]), ',')\" 1 {{{p}:core}}:p"
        ))
        .expect("HKEYS");
    let own: Vec<String> = fields
        .split("/e")
        .skip(1)
        .filter_map(|s| s.split(|c: char| !c.is_ascii_digit()).next())
        .map(|n| format!("/e{n}"))
        .collect();
    assert!(
        !own.is_empty(),
        "no endpoint window was rebuilt: {fields:?}"
    );
    for e in own.iter().take(3) {
        // Its own point and the overflow's: 998 more fit, 999 do not.
        let w = paced(&a, &Request::read().with_points(999).with_endpoint(e)).await;
        assert_eq!(w.reason, QuotaWaitReason::Paced, "{e}: {w:?}");
        granted(&a, &Request::read().with_points(998).with_endpoint(e)).await;
    }
}

/// While the quota rebuilds, a process that has reported may not spend its reservation on
/// a resource with shared rules: the counts still lack the reports of the processes not
/// back yet. Once they are, the rules hold their grants too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_no_reservation_is_spent_past_rules_that_still_lack_a_report() {
    let Some(mut srv) = server() else { return };
    if !srv.owned() {
        return skip("restarts its redis-server: RESILIENCE_REDIS_URL is set");
    }
    let p = prefix("pace-rebuild-res");
    let pacing = creates_per_minute();
    let spec = QuotaSpec::new(1_000_000, Duration::from_secs(3_600)).shared_pacing(pacing);
    let ra = RedisQuota::connect(cfg(&srv.url, &p, "a").reserve_share_permille(200))
        .await
        .expect("connect a");
    let a = ra.resource("core", spec.clone()).await.expect("a");
    // b reaches Redis through a proxy the test can cut.
    let proxy = common::proxy::Proxy::start(&srv.url).await;
    let rb = RedisQuota::connect(cfg(&proxy.url, &p, "b").reserve_share_permille(0))
        .await
        .expect("connect b");
    let b = rb.resource("core", spec).await.expect("b");
    for (q, n) in [(&a, 6), (&b, 4)] {
        for _ in 0..n {
            let _ = go(q
                .try_acquire_request(&Request::create(), Priority::P0)
                .await
                .expect("create"));
        }
    }
    assert!(
        a.snapshot().await.expect("a").reserved > 0,
        "a holds a reservation"
    );
    proxy.cut();
    srv.kill();
    srv.restart();
    rejoined(&ra, &a).await;
    // a has reported its 6; b, cut off, has not: nothing is granted, not even from a's
    // reservation, until b is back (or a lease TTL has passed).
    for _ in 0..3 {
        match a
            .try_acquire_request(&Request::create(), Priority::P0)
            .await
            .expect("ask")
        {
            QuotaDecision::Wait(w) => assert_eq!(w.reason, QuotaWaitReason::Recovering, "{w:?}"),
            QuotaDecision::Go(g) => panic!("granted before b reported: {g:?}"),
        }
    }
    proxy.restore();
    rejoined(&rb, &b).await;
    let w = paced(&a, &Request::create()).await;
    assert_eq!(w.reason, QuotaWaitReason::Paced, "{w:?}");
}

/// A process that joins after the loss has nothing to report: it does not count as one of
/// the processes the rebuild waits for (before, it did, and opened the pool to grants judged
/// on counts that still lacked the absent process's report).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_a_process_new_after_the_loss_does_not_open_the_rebuild() {
    let Some(mut srv) = server() else { return };
    if !srv.owned() {
        return skip("restarts its redis-server: RESILIENCE_REDIS_URL is set");
    }
    let p = prefix("pace-rebuild-new");
    let pacing = creates_per_minute();
    // a, which will be absent, reaches Redis through a proxy the test can cut.
    let proxy = common::proxy::Proxy::start(&srv.url).await;
    let (_ra, a) = client(&proxy.url, &p, "a", &pacing).await;
    let (rb, b) = client(&srv.url, &p, "b", &pacing).await;
    for _ in 0..10 {
        let _ = go(a
            .try_acquire_request(&Request::create(), Priority::P1)
            .await
            .expect("create"));
    }
    let _ = b.snapshot().await.expect("b knows the window");
    proxy.cut();
    srv.kill();
    srv.restart();
    rejoined(&rb, &b).await;
    // c is new: it joins while the rebuild waits for a.
    let (_rc, c) = client(&srv.url, &p, "c", &pacing).await;
    for q in [&b, &c] {
        match q
            .try_acquire_request(&Request::create(), Priority::P1)
            .await
            .expect("ask")
        {
            QuotaDecision::Wait(w) => assert_eq!(w.reason, QuotaWaitReason::Recovering, "{w:?}"),
            QuotaDecision::Go(g) => panic!("granted before a reported its 10: {g:?}"),
        }
    }
    proxy.restore();
}

/// The call answered "report first" may have reaped an expired lease: what that changed is
/// saved (before, the reply returned without writing the state, and the dead lease's
/// reservation stayed counted, out of every pool, until the window ended).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_a_call_asked_for_its_report_keeps_what_it_reaped() {
    let Some(mut srv) = server() else { return };
    if !srv.owned() {
        return skip("restarts its redis-server: RESILIENCE_REDIS_URL is set");
    }
    let p = prefix("pace-rebuild-reap");
    // A minute's window: a's create still counts when it comes back, so it has a report.
    let pacing = creates_per_minute();
    let spec = QuotaSpec::new(1_000, Duration::from_secs(3_600)).shared_pacing(pacing);
    // a: through a proxy, absent from the loss until after b's lease has expired.
    let pa = common::proxy::Proxy::start(&srv.url).await;
    let ra = RedisQuota::connect(cfg(&pa.url, &p, "a").reserve_share_permille(0))
        .await
        .expect("connect a");
    let a = ra.resource("core", spec.clone()).await.expect("a");
    // b: holds half the pool, can spend nothing offline (its expired lease holds nothing
    // back), and is cut off after it has rejoined.
    let pb = common::proxy::Proxy::start(&srv.url).await;
    let rb = RedisQuota::connect(
        cfg(&pb.url, &p, "b")
            .reserve_share_permille(500)
            .lease_ttl(MS(600))
            .express(None, 0)
            .on_loss(resilience_redis::OnLoss::FailClosed),
    )
    .await
    .expect("connect b");
    let b = rb.resource("core", spec).await.expect("b");
    let _ = go(a
        .try_acquire_request(&Request::create(), Priority::P1)
        .await
        .expect("a's create"));
    let _ = go(b
        .try_acquire_request(&Request::read(), Priority::P1)
        .await
        .expect("b's read"));
    assert!(
        b.snapshot().await.expect("b").reserved > 0,
        "b holds a reservation"
    );
    pa.cut();
    srv.kill();
    srv.restart();
    rejoined(&rb, &b).await;
    assert!(
        b.snapshot().await.expect("b").reserved > 0,
        "b kept its reservation"
    );
    pb.cut();
    tokio::time::sleep(MS(800)).await; // b's lease expires
    pa.restore();
    rejoined(&ra, &a).await; // its renewal is asked for the report, and reaps b
    let s = a.snapshot().await.expect("a");
    assert_eq!(
        s.reserved_total, 0,
        "b's reservation is still counted: {s:?}"
    );
    assert_eq!(s.members, 1, "{s:?}");
}

/// The concurrency cap after a loss: the calls each process has in flight (granted, not yet
/// observed or released) come with its report, and count for a call bound (their grants
/// belong to the lost state: settling one frees nothing in the new one). Forgotten (as they
/// were, review helper-47), a cap of 2 let 4 go at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_calls_in_flight_at_the_loss_still_count_in_the_concurrency_cap() {
    let Some(mut srv) = server() else { return };
    if !srv.owned() {
        return skip("restarts its redis-server: RESILIENCE_REDIS_URL is set");
    }
    let p = prefix("pace-rebuild-cap");
    let pacing = Pacing {
        max_concurrent: Some(2),
        ..creates_per_minute()
    };
    let (ra, a) = client(&srv.url, &p, "a", &pacing).await;
    let (rb, b) = client(&srv.url, &p, "b", &pacing).await;
    let read = Request::read();
    let first = go(a
        .try_acquire_request(&read, Priority::P1)
        .await
        .expect("a1"));
    let second = go(a
        .try_acquire_request(&read, Priority::P1)
        .await
        .expect("a2"));
    let full = paced(&b, &read).await;
    assert_eq!(full.reason, QuotaWaitReason::InFlight, "{full:?}");
    srv.kill();
    srv.restart();
    rejoined(&ra, &a).await;
    rejoined(&rb, &b).await;
    for q in [&b, &a] {
        let still = paced(q, &read).await;
        assert_eq!(still.reason, QuotaWaitReason::InFlight, "{still:?}");
        // Until they drop out: the call bound (30 s), in the script's quarter slots.
        assert!(still.delay <= Duration::from_millis(37_500), "{still:?}");
    }
    drop((first, second));
}

/// A loss after the quota window a process knew has ended: its rule windows still count (a
/// minute's creations, or GitHub's hour of them, span the quota's resets). The first process
/// back reports its own grants only; nothing is granted until the others it knew report
/// too. Rebuilt only for a live quota window (as it was, review helper-47), the first
/// process back was granted the minute's 10 creations again at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_the_rules_are_rebuilt_after_a_loss_past_the_quota_windows_end() {
    let Some(mut srv) = server() else { return };
    if !srv.owned() {
        return skip("restarts its redis-server: RESILIENCE_REDIS_URL is set");
    }
    let p = prefix("pace-rebuild-ended");
    let spec = QuotaSpec::new(1_000_000, MS(1_000)).shared_pacing(creates_per_minute());
    let node = |url: String, name: &'static str| {
        let (spec, p) = (spec.clone(), p.clone());
        async move {
            let r = RedisQuota::connect(cfg(&url, &p, name).reserve_share_permille(0))
                .await
                .expect("connect");
            let q = r.resource("core", spec).await.expect("resource");
            (r, q)
        }
    };
    let to_b = common::proxy::Proxy::start(&srv.url).await;
    let (ra, a) = node(srv.url.clone(), "a").await;
    let (rb, b) = node(to_b.url.clone(), "b").await;
    let _ = a.snapshot().await;
    create(&b, 10).await;
    // The 1 s quota window ends; a's view is of it.
    tokio::time::sleep(MS(1_200)).await;
    let _ = a.snapshot().await;
    to_b.cut();
    srv.kill();
    srv.restart();
    rejoined(&ra, &a).await;
    let asked = std::time::Instant::now();
    while asked.elapsed() < Duration::from_secs(2) {
        match a
            .try_acquire_request(&Request::create(), Priority::P1)
            .await
        {
            Ok(QuotaDecision::Go(g)) => panic!("created before b reported: {g:?}"),
            Ok(QuotaDecision::Wait(w)) => {
                assert_eq!(w.reason, QuotaWaitReason::Recovering, "{w:?}");
                tokio::time::sleep(MS(50)).await;
            }
            Err(e) => panic!("{e}"),
        }
    }
    // b is back, and reports: the minute's creations are all spent.
    to_b.restore();
    rejoined(&rb, &b).await;
    full_for_the_minute(&[&a, &b]).await;
}
