//! G7 parity with the in-process store's fixes (resilience-core governor_windows,
//! governor_settlement, governor_accounting, governor_lockout): the shared quota keeps its
//! own block, lease and accounting logic, so each defect fixed there is checked here against
//! the Redis backend. Times are scaled down through the crate's settings (G6 block length,
//! release windows, poll bound, window length) so each test runs in about a second.

mod common;

use common::node::{cfg, go, quota, MS};
use common::server::{prefix, server, RedisServer};
use resilience_core::governor::{Observation, Priority};
use resilience_redis::{
    QuotaDecision, QuotaGrant, QuotaWaitReason, RedisQuota, Settled, SharedQuota, WaitPolicy,
};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn reading(rem: u64) -> Observation {
    Observation::from_headers(200, [("x-ratelimit-remaining", rem.to_string())])
}

/// A secondary limit: 429 with quota left and no `retry-after`.
fn secondary() -> Observation {
    Observation::from_headers(429, [("x-ratelimit-remaining", "50")])
}

fn unix_ms() -> u64 {
    u64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("clock")
            .as_millis(),
    )
    .expect("ms")
}

/// A node with no reservation and no express lane: every grant is paid from the pool and
/// asks the server, so a test can follow the pool unit by unit.
async fn plain(
    srv: &RedisServer,
    p: &str,
    node: &str,
    limit: u64,
    window: Duration,
    wait: WaitPolicy,
) -> (RedisQuota, SharedQuota) {
    quota(
        cfg(&srv.url, p, node)
            .reserve_share_permille(0)
            .express(None, 1)
            .wait(wait),
        limit,
        window,
    )
    .await
}

/// The shared block's length right after an observation, in ms.
async fn blocked_ms(q: &SharedQuota) -> u128 {
    q.snapshot()
        .await
        .expect("snapshot")
        .blocked_for
        .map_or(0, |d| d.as_millis())
}

async fn pool(q: &SharedQuota) -> u64 {
    q.snapshot().await.expect("snapshot").pool
}

// ---- 1. G6 backoff of secondary limits ------------------------------------------------

/// §6: "else if remaining > 0 wait ≥ 60 s then back off exponentially". Secondary limits in
/// a row with no `retry-after` (seen by any process) double the shared block each time; a
/// good response starts over. (Base block scaled to 200 ms.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g6_secondary_limits_in_a_row_back_off_exponentially() {
    let Some(srv) = server() else { return };
    let p = prefix("backoff");
    let wait = WaitPolicy {
        secondary_block: MS(200),
        ..WaitPolicy::default()
    };
    let (_ra, a) = plain(&srv, &p, "a", 1_000, MS(3_600_000), wait.clone()).await;
    let (_rb, b) = plain(&srv, &p, "b", 1_000, MS(3_600_000), wait).await;
    let mut blocks = Vec::new();
    for i in 0..3 {
        let q = if i % 2 == 0 { &a } else { &b };
        let g = go(q.try_acquire(1, Priority::P1).await.expect("ask"));
        q.observe(Some(g), &secondary()).await.expect("observe");
        let left = blocked_ms(q).await;
        blocks.push(left);
        tokio::time::sleep(MS(u64::try_from(left).expect("ms") + 30)).await;
    }
    eprintln!("blocks in a row: {blocks:?} ms");
    let near = |got: u128, want: u128| got <= want && got + 40 >= want;
    assert!(
        near(blocks[0], 200) && near(blocks[1], 400) && near(blocks[2], 800),
        "secondary limits in a row must block 200, 400, 800 ms (60 s doubling, scaled): {blocks:?}"
    );
    // A good response (outside any block) starts the backoff over.
    let g = go(a.try_acquire(1, Priority::P1).await.expect("ask"));
    a.observe(Some(g), &reading(900)).await.expect("observe");
    let g = go(b.try_acquire(1, Priority::P1).await.expect("ask"));
    b.observe(Some(g), &secondary()).await.expect("observe");
    let after_good = blocked_ms(&b).await;
    assert!(
        near(after_good, 200),
        "{after_good} ms after a good response"
    );
}

/// The doubling stops at `WaitPolicy::max_secondary_block` (the in-process
/// `retry_windows.max_default_block`, 16 min by default).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g6_secondary_backoff_stops_at_its_cap() {
    let Some(srv) = server() else { return };
    assert_eq!(
        WaitPolicy::default().max_secondary_block,
        Duration::from_secs(16 * 60)
    );
    let p = prefix("backoffcap");
    let wait = WaitPolicy {
        secondary_block: MS(150),
        max_secondary_block: MS(400),
        ..WaitPolicy::default()
    };
    let (_r, a) = plain(&srv, &p, "a", 1_000, MS(3_600_000), wait).await;
    let mut blocks = Vec::new();
    for _ in 0..4 {
        let g = go(a.try_acquire(1, Priority::P1).await.expect("ask"));
        a.observe(Some(g), &secondary()).await.expect("observe");
        let left = blocked_ms(&a).await;
        blocks.push(left);
        tokio::time::sleep(MS(u64::try_from(left).expect("ms") + 30)).await;
    }
    let want = [150, 300, 400, 400];
    assert!(
        blocks.iter().zip(want).all(|(&g, w)| g <= w && g + 40 >= w),
        "{blocks:?}, want about {want:?}"
    );
}

/// The same backoff while Redis is unreachable (degraded mode): the process blocks itself,
/// doubling for each hintless secondary limit in a row it saw (before, every one blocked
/// the base length).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g6_degraded_secondary_limits_in_a_row_back_off_exponentially() {
    let Some(srv) = server() else { return };
    let p = prefix("offbackoff");
    let proxy = common::proxy::Proxy::start(&srv.url).await;
    let wait = WaitPolicy {
        secondary_block: MS(200),
        ..WaitPolicy::default()
    };
    let c = cfg(&proxy.url, &p, "a")
        .reserve_share_permille(500)
        .express(None, 1)
        .wait(wait);
    let (_r, a) = quota(c, 1_000, MS(3_600_000)).await;
    proxy.cut();
    let mut blocks = Vec::new();
    let started = std::time::Instant::now();
    while blocks.len() < 3 {
        assert!(started.elapsed() < Duration::from_secs(10), "{blocks:?}");
        let g = match a.try_acquire(1, Priority::P1).await {
            Ok(QuotaDecision::Go(g)) => g,
            Ok(QuotaDecision::Wait(w)) => {
                tokio::time::sleep(w.delay + MS(30)).await;
                continue;
            }
            Err(e) => panic!("degraded mode refused: {e}"),
        };
        if !g.is_offline() {
            // Sent before the loss was seen: not this test's subject.
            a.release(g).await.ok();
            continue;
        }
        a.observe(Some(g), &secondary()).await.expect("observe");
        match a.try_acquire(1, Priority::P1).await {
            Ok(QuotaDecision::Wait(w)) => blocks.push(w.delay.as_millis()),
            other => panic!("no local block after a secondary limit: {other:?}"),
        }
    }
    eprintln!("offline blocks in a row: {blocks:?} ms");
    let near = |got: u128, want: u128| got <= want && got + 40 >= want;
    assert!(
        near(blocks[0], 200) && near(blocks[1], 400) && near(blocks[2], 800),
        "offline secondary limits in a row must block 200, 400, 800 ms: {blocks:?}"
    );
}

/// Calls in flight when the block began answer inside it with the same limit: they count
/// once (the block runs its base length from the last of them), not one doubling each.
/// Good responses answered inside the block do not start the backoff over either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g6_limits_answered_inside_the_block_count_once() {
    let Some(srv) = server() else { return };
    let p = prefix("backoffonce");
    let wait = WaitPolicy {
        secondary_block: MS(300),
        ..WaitPolicy::default()
    };
    let (_r, a) = plain(&srv, &p, "a", 1_000, MS(3_600_000), wait).await;
    let grants: Vec<_> = futures(&a, 6).await;
    let mut grants = grants.into_iter();
    for g in grants.by_ref().take(5) {
        a.observe(Some(g), &secondary()).await.expect("observe");
        tokio::time::sleep(MS(20)).await;
    }
    let left = blocked_ms(&a).await;
    assert!(
        (250..=300).contains(&left),
        "5 answers of one limit: {left} ms left, want 300 less 20"
    );
    // One in-flight call answered well inside the block, then the block ends: the next
    // limit is the second in a row (a good answer inside the block resets nothing).
    let late = grants.next().expect("6");
    a.observe(Some(late), &reading(800)).await.expect("observe");
    tokio::time::sleep(MS(u64::try_from(left).expect("ms") + 30)).await;
    let g = go(a.try_acquire(1, Priority::P1).await.expect("ask"));
    a.observe(Some(g), &secondary()).await.expect("observe");
    let second = blocked_ms(&a).await;
    assert!(
        (560..=600).contains(&second),
        "the second limit in a row: {second} ms, want 600"
    );
}

async fn futures(q: &SharedQuota, n: usize) -> Vec<QuotaGrant> {
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(go(q.try_acquire(1, Priority::P1).await.expect("acquire")));
    }
    out
}

/// A caller that loops on `try_acquire` itself is told when to come back (`retry_in`): the
/// block's end plus a draw in its priority's G6 window, so such callers are spread and in
/// priority order too. Before, they had only `delay`, the same for every waiter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g6_try_acquire_tells_each_waiter_when_to_come_back_in_its_window() {
    let Some(srv) = server() else { return };
    let p = prefix("retryin");
    let wait = WaitPolicy {
        windows: [(MS(0), MS(100)), (MS(100), MS(400)), (MS(400), MS(1_000))],
        ..WaitPolicy::default()
    };
    let (_r, a) = plain(&srv, &p, "a", 1_000, MS(3_600_000), wait).await;
    let limited = Observation::from_headers(429, [("retry-after", "5")]);
    a.observe(None, &limited).await.expect("observe");
    let mut by_priority = [Vec::new(), Vec::new(), Vec::new()];
    for i in 0..60 {
        let pr = [Priority::P0, Priority::P1, Priority::P2][i % 3];
        let QuotaDecision::Wait(w) = a.try_acquire(1, pr).await.expect("ask") else {
            panic!("granted during a block");
        };
        assert_eq!(w.reason, QuotaWaitReason::Blocked);
        // Past the block's end, within the priority's window after it.
        let past = w.retry_in.checked_sub(w.delay).expect("retry_in >= delay");
        by_priority[pr as usize].push(past.as_millis());
    }
    eprintln!("retry_in past the block's end, ms, P0/P1/P2: {by_priority:?}");
    for (past, (lo, hi)) in by_priority.iter().zip([(0, 100), (100, 400), (400, 1_000)]) {
        assert!(past.iter().all(|t| (lo..hi).contains(t)), "{past:?}");
        let spread = past.iter().max().unwrap() - past.iter().min().unwrap();
        assert!(
            spread >= (hi - lo) / 4,
            "20 draws within {spread} ms: {past:?}"
        );
    }
}

// ---- 2. No herd at a reset ---------------------------------------------------------------

/// A quota spent by grants (no 429 seen): the waiters paused until the reset come back in
/// their priority's G6 release window past it (scaled: P0 [0, 100 ms), P1 [100, 400 ms),
/// P2 [400, 1 000 ms)), spread, in priority order — not all within one poll of the reset.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g6_waiters_paused_until_a_reset_come_back_spread_over_their_windows() {
    let Some(srv) = server() else { return };
    let p = prefix("herd");
    let wait = WaitPolicy {
        windows: [(MS(0), MS(100)), (MS(100), MS(400)), (MS(400), MS(1_000))],
        poll: MS(200),
        ..WaitPolicy::default()
    };
    let (_ra, a) = plain(&srv, &p, "a", 30, MS(1_200), wait.clone()).await;
    let (_rb, b) = plain(&srv, &p, "b", 30, MS(1_200), wait).await;
    let spent = futures(&a, 30).await;
    let reset = spent[0].reset_at_ms();
    let QuotaDecision::Wait(w) = b.try_acquire(1, Priority::P2).await.expect("ask") else {
        panic!("a 31st grant");
    };
    assert_eq!(w.reason, QuotaWaitReason::Exhausted);
    // Their calls came back before the reset (else they would count in the next window).
    for g in spent {
        a.observe(Some(g), &Observation::new(200))
            .await
            .expect("observe");
    }
    let mut tasks = Vec::new();
    for i in 0..12 {
        let q = if i % 2 == 0 { a.clone() } else { b.clone() };
        let pr = [Priority::P0, Priority::P1, Priority::P2][i % 3];
        tasks.push(tokio::spawn(async move {
            let g = q.acquire(1, pr).await.expect("granted");
            (pr, unix_ms(), g)
        }));
    }
    let mut got = Vec::new();
    for t in tasks {
        let (pr, at, g) = tokio::time::timeout(Duration::from_secs(5), t)
            .await
            .expect("granted within 5 s")
            .expect("task");
        assert!(g.reset_at_ms() > reset, "granted in the new window");
        got.push((pr, at.saturating_sub(reset)));
    }
    got.sort_by_key(|&(_, t)| t);
    eprintln!("grants after the reset (priority, ms): {got:?}");
    let of = |p: Priority| got.iter().filter(move |g| g.0 == p).map(|g| g.1);
    // 20 ms slack: the host clock read here against the server's reset.
    assert!(
        of(Priority::P1).all(|t| t + 20 >= 100),
        "P1 before its window: {got:?}"
    );
    assert!(
        of(Priority::P2).all(|t| t + 20 >= 400),
        "P2 before its window: {got:?}"
    );
    let p0_last = of(Priority::P0).max().expect("P0s");
    let p2_first = of(Priority::P2).min().expect("P2s");
    assert!(p0_last < p2_first, "P0 not ahead of P2: {got:?}");
    let spread = got.last().expect("12").1 - got[0].1;
    assert!(
        spread >= 300,
        "12 waiters came back within {spread} ms: {got:?}"
    );
    // Spread within a priority too (4 uniform draws over 600 ms all within 20 ms: ~1e-4).
    let p2_last = of(Priority::P2).max().expect("P2s");
    assert!(
        p2_last - p2_first >= 20,
        "the P2 waiters came back together: {got:?}"
    );
}

// ---- 3. Late settles from an expired lease -------------------------------------------------

/// Expires `node`'s lease on the server at once (as if it had been silent past its TTL); the
/// next call of any process, 50 ms on, reaps it.
async fn expire_lease(srv: &RedisServer, p: &str, node: &str) {
    let answer = srv
        .cmd(&format!("ZADD {{{p}:core}}:e 1 {node}"))
        .expect("zadd");
    assert!(!answer.starts_with('-'), "{answer}");
    tokio::time::sleep(MS(60)).await;
}

/// The lease of g1 was reaped (g1 presumed spent); the process comes back under a new lease
/// and takes g2; g1 is released late. The release must not credit anything (g1 was
/// presumed spent), and g1's unit must not stay counted in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g5_a_late_release_from_an_expired_lease_does_not_settle_a_newer_grant() {
    let Some(srv) = server() else { return };
    let p = prefix("lateRel");
    let (_r, a) = plain(&srv, &p, "a", 10, MS(3_600_000), WaitPolicy::default()).await;
    let g1 = go(a.try_acquire(1, Priority::P0).await.expect("g1"));
    expire_lease(&srv, &p, "a").await;
    let g2 = go(a.try_acquire(1, Priority::P0).await.expect("g2"));
    assert_ne!(g1.epoch(), g2.epoch(), "a new lease");
    assert_eq!(pool(&a).await, 8);
    assert_eq!(a.release(g1).await.expect("release"), Settled::Fenced);
    assert_eq!(pool(&a).await, 8, "g1 presumed spent, g2 granted");
    a.observe(Some(g2), &Observation::new(200))
        .await
        .expect("observe");
    // Nothing is in flight now: a grantless reading of 8 leaves exactly 8 (7 if g1's unit
    // were stuck in flight, 9 had its release been credited).
    a.observe(None, &reading(8)).await.expect("observe");
    assert_eq!(pool(&a).await, 8);
}

/// The same with a late observe of g1 (cost 1) while g2 (cost 5) is in flight: g1's
/// response is fenced and settles only g1's unit; g2 stays in flight until answered, then
/// nothing is left in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g5_a_late_observe_from_an_expired_lease_leaves_no_cost_stuck_in_flight() {
    let Some(srv) = server() else { return };
    let p = prefix("lateObs");
    let (_r, a) = plain(&srv, &p, "a", 10, MS(3_600_000), WaitPolicy::default()).await;
    let g1 = go(a.try_acquire(1, Priority::P0).await.expect("g1"));
    expire_lease(&srv, &p, "a").await;
    let g2 = go(a.try_acquire(5, Priority::P0).await.expect("g2"));
    assert_ne!(g1.epoch(), g2.epoch(), "a new lease");
    assert_eq!(pool(&a).await, 4);
    assert_eq!(
        a.observe(Some(g1), &reading(9)).await.expect("observe"),
        Settled::Fenced
    );
    assert_eq!(pool(&a).await, 4, "a fenced reading changes nothing");
    // g2 (5) alone in flight: a grantless reading of 6 leaves 1 (2 had g1's answer settled
    // a unit of g2, 0 had g1's unit stuck).
    a.observe(None, &reading(6)).await.expect("observe");
    assert_eq!(pool(&a).await, 1);
    // The server counted both (4 left); g1 was still in flight when g2 was granted.
    a.observe(Some(g2), &reading(4)).await.expect("observe");
    assert_eq!(pool(&a).await, 3);
    // Nothing in flight: a grantless reading of 3 leaves 3.
    a.observe(None, &reading(3)).await.expect("observe");
    assert_eq!(pool(&a).await, 3, "cost still counted in flight");
}

// ---- 4. Old-window readings after a roll ---------------------------------------------------

/// Calls in flight when the window rolls, answered after it with the old window's readings
/// (with or without the old reset header), were counted in the old window: they must not
/// lower the new window's pool, nor raise it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g1_old_window_answers_after_a_roll_neither_lower_nor_raise_the_new_window() {
    let Some(srv) = server() else { return };
    let p = prefix("roll");
    let (_r, a) = plain(&srv, &p, "a", 10, MS(700), WaitPolicy::default()).await;
    let old: Vec<_> = futures(&a, 5).await;
    let (reset_ms, old_window) = (old[0].reset_at_ms(), old[0].window());
    let old_reset_s = reset_ms.div_ceil(1000);
    // Past the server's reset and past the old reset header's second.
    let past = (old_reset_s * 1000).max(reset_ms) + 50;
    tokio::time::sleep(MS(past.saturating_sub(unix_ms()))).await;
    let mut old = old.into_iter();
    let with_reset = |rem: u64| {
        Observation::from_headers(
            200,
            [
                ("x-ratelimit-limit", "10".to_string()),
                ("x-ratelimit-remaining", rem.to_string()),
                ("x-ratelimit-reset", old_reset_s.to_string()),
            ],
        )
    };
    let o1 = old.next().expect("1");
    a.observe(Some(o1), &with_reset(9)).await.expect("observe");
    let o2 = old.next().expect("2");
    a.observe(Some(o2), &reading(8)).await.expect("observe");
    let s = a.snapshot().await.expect("snapshot");
    // The roll counted the five old calls still on their way (they could yet be counted in
    // the new window upstream); the two answers after it changed nothing.
    assert_eq!(
        s.pool, 5,
        "the new window is untouched by the answers: {s:?}"
    );
    assert!(s.window > old_window, "rolled: {s:?}");
    // The server's new window has counted one call (this one); two old calls are still in
    // flight when it is granted (the Redis store counts them against the new window until
    // they are answered: they could yet be counted in it).
    let o3 = old.next().expect("3");
    a.observe(Some(o3), &with_reset(7)).await.expect("observe");
    let g = go(a.try_acquire(1, Priority::P1).await.expect("new"));
    a.observe(Some(g), &reading(9)).await.expect("observe");
    let after_new = pool(&a).await;
    // Two old calls are still in flight (they could yet be counted in the new window).
    assert_eq!(after_new, 7, "9 less 2 old calls still in flight");
    // They are answered with the old window's (higher) readings: counted there, nothing to
    // raise (or lower) here, and nothing left in flight.
    for g in old {
        a.observe(Some(g), &with_reset(6)).await.expect("observe");
    }
    assert_eq!(pool(&a).await, 7);
    let g = go(a.try_acquire(1, Priority::P1).await.expect("new"));
    a.observe(Some(g), &reading(8)).await.expect("observe");
    assert_eq!(pool(&a).await, 8, "the server's count, nothing in flight");
}

// ---- 5. A response without rate-limit headers --------------------------------------------

/// A response without rate-limit headers (a 500, a 200 without x-ratelimit-*) still counts
/// its call as spent: nothing is refunded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g1_a_call_answered_without_headers_counts_as_spent() {
    let Some(srv) = server() else { return };
    let p = prefix("nohdr");
    let (_r, a) = plain(&srv, &p, "a", 10, MS(3_600_000), WaitPolicy::default()).await;
    let g = go(a.try_acquire(1, Priority::P1).await.expect("ask"));
    a.observe(Some(g), &reading(9)).await.expect("observe");
    assert_eq!(pool(&a).await, 9);
    for status in [200, 500, 404] {
        let g = go(a.try_acquire(1, Priority::P1).await.expect("ask"));
        assert_eq!(
            a.observe(Some(g), &Observation::new(status))
                .await
                .expect("observe"),
            Settled::Applied
        );
    }
    assert_eq!(
        pool(&a).await,
        6,
        "three calls answered without headers, spent"
    );
    // The next reading is the server's count, and it holds: nothing left in flight.
    let g = go(a.try_acquire(1, Priority::P1).await.expect("ask"));
    a.observe(Some(g), &reading(5)).await.expect("observe");
    assert_eq!(pool(&a).await, 5);
}

// ---- Lockout (governor_lockout parity) -----------------------------------------------------

/// A 429 "remaining 0" with no reset header, seen before any grant (no window anchored): the
/// quota must come back, at the latest a window later, not stay spent for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g6_a_spent_quota_with_no_reset_known_comes_back() {
    let Some(srv) = server() else { return };
    let p = prefix("lockout");
    let (_r, a) = plain(&srv, &p, "a", 100, MS(500), WaitPolicy::default()).await;
    let limited = Observation::from_headers(429, [("x-ratelimit-remaining", "0")]);
    a.observe(None, &limited).await.expect("observe");
    tokio::time::sleep(MS(800)).await;
    let d = a.try_acquire(1, Priority::P0).await.expect("ask");
    assert!(
        matches!(d, QuotaDecision::Go(_)),
        "still refused 1.6 windows later: {d:?}"
    );
}
