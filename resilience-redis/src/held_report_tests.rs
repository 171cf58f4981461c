//! G7, crate-internal: what a lease ended live holds back (a process refused for want of the
//! shared rules) against the reports of its holder. The calls are sent as the holder would
//! after a lost reply, which needs the script's own call; the server is a real, throwaway
//! `redis-server`.

use crate::script::{self, Op, View};
use crate::test_server as server;
use crate::{QuotaSpec, RedisQuota, RedisQuotaConfig, SharedQuota};
use resilience_core::governor::{Observation, Pacing, Priority, Selector, WindowRule};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

async fn node(url: &str, p: &str, name: &str, spec: QuotaSpec) -> (RedisQuota, SharedQuota) {
    node_with_ttl(url, p, name, spec, Duration::from_millis(1_500)).await
}

async fn node_with_ttl(
    url: &str,
    p: &str,
    name: &str,
    spec: QuotaSpec,
    ttl: Duration,
) -> (RedisQuota, SharedQuota) {
    let cfg = RedisQuotaConfig::new(url)
        .prefix(p)
        .node(name)
        .timeouts(Duration::from_millis(500), Duration::from_millis(300))
        .lease_ttl(ttl);
    let r = RedisQuota::connect(cfg).await.expect("connect");
    let q = r.resource("core", spec).await.expect("resource");
    (r, q)
}

/// A renewal of `q`'s lease `epoch` reporting `spent` units spent offline.
async fn renew(q: &SharedQuota, epoch: u64, spent: u64) -> i64 {
    renew_as(q, &q.state.fixed, epoch, spent).await
}

/// `renew`, with `fixed` (what the process is configured with) in place of `q`'s own.
async fn renew_as(q: &SharedQuota, fixed: &script::Fixed, epoch: u64, spent: u64) -> i64 {
    renew_reply(q, fixed, epoch, spent).await.status
}

/// `renew_as`, the whole reply.
async fn renew_reply(
    q: &SharedQuota,
    fixed: &script::Fixed,
    epoch: u64,
    spent: u64,
) -> script::Reply {
    let (mut conn, _) = q.inner.link.current().expect("connected");
    let view = View {
        epoch,
        offline_spent: spent,
        state: q.state.local.lock().state,
        ..View::default()
    };
    script::call(&mut conn, fixed, &view, &Op::Renew)
        .await
        .expect("call")
        .expect("reply")
}

/// A rule over every request, 100 a minute (or a `span`): a resource with it counts grants in the shared
/// rules, so a process without them is refused.
fn rules() -> Pacing {
    rules_over(Duration::from_secs(60))
}

fn rules_over(span: Duration) -> Pacing {
    Pacing {
        windows: vec![WindowRule::new(
            "all",
            Selector::All,
            resilience_core::governor::Measure::Requests,
            100,
            span,
        )],
        ..Pacing::default()
    }
}

/// Degraded mode: refused, the holder's lease ends live and its whole reservation is held.
/// If that reply is lost, the holder spends its reservation offline and reports it before
/// the lease would have expired: that report is settled at once. Dropped (as it was), the
/// held share went back to the pool at the lease's expiry, and the quota was spent twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_a_report_before_an_ended_lease_expires_is_settled() {
    let Some(srv) = server::server() else { return };
    let p = server::prefix("held-report");
    let plain = QuotaSpec::new(1_000, Duration::from_secs(3_600));
    let (_ru, u) = node(&srv.url, &p, "u", plain.clone()).await;
    let epoch = u.snapshot().await.expect("u").epoch;
    let reserved = u.snapshot().await.expect("u").reserved;
    assert!(reserved > 0, "u holds a reservation");
    let (_rp, paced) = node(&srv.url, &p, "p", plain.shared_pacing(rules())).await;
    let _ = paced
        .acquire(1, Priority::P1)
        .await
        .expect("a counted grant");
    assert_eq!(renew(&u, epoch, 0).await, script::PACED_ELSEWHERE);
    let refused = paced.snapshot().await.expect("p");
    assert!(refused.held >= reserved, "{refused:?}");
    // The lost reply: u spent all of it offline, and says so before the lease's expiry.
    assert_eq!(renew(&u, epoch, reserved).await, script::PACED_ELSEWHERE);
    let reported = paced.snapshot().await.expect("p");
    assert_eq!(reported.held, refused.held - reserved, "{reported:?}");
    // Past the expiry, nothing of it comes back to the pool.
    tokio::time::sleep(Duration::from_millis(1_600)).await;
    assert_eq!(renew(&u, epoch, 0).await, script::PACED_ELSEWHERE);
    let after = paced.snapshot().await.expect("p");
    assert_eq!(after.held, 0, "{after:?}");
    assert!(
        after.pool <= reported.pool,
        "spent twice: {after:?} {reported:?}"
    );
}

/// A lease ended live may be spent from offline until it would have expired, so past a reset
/// that came earlier than its holder was told (a reset header moved it), as a live lease's
/// reservation may: its held share is kept into the new window, where its holder's
/// report settles it. Dropped at the roll (as it was), the new window's pool was whole and
/// the holder's offline spending came on top of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_a_share_held_for_a_lease_ended_live_is_kept_past_an_earlier_reset() {
    let Some(srv) = server::server() else { return };
    let p = server::prefix("held-carry");
    let plain = QuotaSpec::new(1_000, Duration::from_secs(3_600));
    let ttl = Duration::from_secs(8);
    let (_ru, u) = node_with_ttl(&srv.url, &p, "u", plain.clone(), ttl).await;
    let (_rp, paced) = node_with_ttl(&srv.url, &p, "p", plain.shared_pacing(rules()), ttl).await;
    let mine = u.snapshot().await.expect("u");
    assert!(mine.reserved > 0, "u holds a reservation");
    let grant = paced.acquire(1, Priority::P1).await.expect("anchor");
    assert_eq!(renew(&u, mine.epoch, 0).await, script::PACED_ELSEWHERE);
    let rolled = roll_early(&paced, grant).await;
    assert!(rolled.held >= mine.reserved, "{rolled:?}");
    assert!(rolled.pool + rolled.held <= rolled.limit, "{rolled:?}");
    // u spent it all after the reset, offline, and says so before its lease would have
    // expired: settled from the kept share, not given back.
    assert_eq!(
        renew(&u, mine.epoch, mine.reserved).await,
        script::PACED_ELSEWHERE
    );
    let reported = paced.snapshot().await.expect("p");
    assert_eq!(reported.held, rolled.held - mine.reserved, "{reported:?}");
    assert!(reported.pool <= rolled.pool, "{reported:?} {rolled:?}");
}

/// A refused process that rejoins (the rules' counts no longer live) before its ended lease
/// would have expired starts a new lease: its later reports come under the new epoch. What
/// is still held for the ended lease is kept for the node, and returned once its calls name
/// the new lease (here by its heartbeat). Kept under the old epoch (as it was earlier), it
/// stayed held until the window ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_a_share_held_for_an_ended_lease_comes_back_after_its_holder_rejoins() {
    let Some(srv) = server::server() else { return };
    let p = server::prefix("held-rejoin");
    let plain = QuotaSpec::new(1_000, Duration::from_secs(3_600));
    let ttl = Duration::from_secs(4);
    let (_ru, u) = node_with_ttl(&srv.url, &p, "u", plain.clone(), ttl).await;
    let brief = plain.shared_pacing(rules_over(Duration::from_millis(500)));
    let (_rp, paced) = node_with_ttl(&srv.url, &p, "p", brief, ttl).await;
    let mine = u.snapshot().await.expect("u");
    assert!(mine.reserved > 0, "u holds a reservation");
    let _ = paced
        .acquire(1, Priority::P1)
        .await
        .expect("a counted grant");
    assert_eq!(renew(&u, mine.epoch, 0).await, script::PACED_ELSEWHERE);
    let ended_at = std::time::Instant::now();
    // Once the counts are no longer live (their shortest life is a second), u rejoins.
    tokio::time::sleep(Duration::from_millis(1_300)).await;
    assert_ne!(renew(&u, mine.epoch, 0).await, script::PACED_ELSEWHERE);
    let rejoined = paced.snapshot().await.expect("p");
    assert!(rejoined.held >= mine.reserved, "{rejoined:?}");
    while ended_at.elapsed() < ttl + Duration::from_millis(300) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let after = paced.snapshot().await.expect("p");
    assert_eq!(after.held, 0, "{after:?}");
}

/// A refused process rejoins before its ended lease would have expired, but the reply that
/// brings its new lease is lost: cut off, it spends on from the old lease, and reports under
/// the old epoch only once both leases have expired. What is held for the old lease is kept
/// for the node until then. Carried with no holder named and returned when the old lease
/// would have expired (as it was), the report found nothing to pay it from.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_a_rejoin_whose_reply_was_lost_still_pays_the_old_leases_spending() {
    let Some(srv) = server::server() else { return };
    let p = server::prefix("held-rejoin-lost");
    let brief = QuotaSpec::new(1_000, Duration::from_secs(3_600))
        .shared_pacing(rules_over(Duration::from_millis(500)));
    let (_rp, paced) = node_with_ttl(&srv.url, &p, "p", brief, Duration::from_secs(60)).await;
    let mut g = ghost(&paced, 100, 1_000);
    g.ttl_ms = 3_000;
    let joined = renew_reply(&paced, &g, 0, 0).await;
    let joined_at = std::time::Instant::now();
    assert!(joined.reserved > 0, "{joined:?}");
    let _ = paced
        .acquire(1, Priority::P1)
        .await
        .expect("a counted grant");
    assert_eq!(
        renew_as(&paced, &g, joined.epoch, 0).await,
        script::PACED_ELSEWHERE
    );
    // Once the counts are no longer live, the ghost rejoins; that reply never reaches it.
    tokio::time::sleep(Duration::from_millis(1_300)).await;
    let rejoined = renew_reply(&paced, &g, joined.epoch, 0).await;
    assert_ne!(rejoined.epoch, joined.epoch, "{rejoined:?}");
    // Both leases expire (the new one is reaped); then the ghost is back and reports, under
    // the old epoch, that it spent all of the old reservation.
    while joined_at.elapsed() < Duration::from_millis(1_300 + 3_500) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let before = paced.snapshot().await.expect("p");
    renew_as(&paced, &g, joined.epoch, joined.reserved).await;
    let after = paced.snapshot().await.expect("p");
    assert_eq!(
        after.pool + after.reserved_total + after.held,
        before.pool + before.reserved_total + before.held - joined.reserved,
        "what it spent counts: {before:?} {after:?}"
    );
}

/// After a holder's report of `spent`: nothing is held any more, and what it spent counts in
/// this window.
async fn assert_paid(paced: &SharedQuota, spent: u64) {
    let after = paced.snapshot().await.expect("p");
    assert_eq!(after.held, 0, "{after:?}");
    assert_eq!(
        after.pool + after.reserved_total,
        after.limit - spent,
        "what it spent counts in this window: {after:?}"
    );
}

fn unix(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).expect("clock").as_secs()
}

/// Moves the hour's window of `paced` (anchored by `grant`) to end in 1-2 s, as a reset
/// header another process read would; the new reset, unix seconds.
async fn move_reset_early(paced: &SharedQuota, grant: crate::QuotaGrant) -> u64 {
    let reset = unix(SystemTime::now()) + 2;
    let reading = Observation::from_headers(
        200,
        [
            ("x-ratelimit-remaining", "900".to_owned()),
            ("x-ratelimit-reset", reset.to_string()),
        ],
    );
    paced.observe(Some(grant), &reading).await.expect("observe");
    reset
}

/// [`move_reset_early`], and returns once the window has rolled.
async fn roll_early(paced: &SharedQuota, grant: crate::QuotaGrant) -> crate::QuotaSnapshot {
    let reset = move_reset_early(paced, grant).await;
    while unix(SystemTime::now()) < reset {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let rolled = paced.snapshot().await.expect("p");
    assert!(
        rolled
            .reset_in
            .is_none_or(|r| r > Duration::from_secs(3_000)),
        "{rolled:?}"
    );
    rolled
}

/// A process without the shared rules and without background tasks ("ghost"), whose calls
/// go out on `carrier`'s connection: its lease changes only when the test calls. `share`
/// and `hold` as configured (per mille of the pool, and what it may spend unreported).
fn ghost(carrier: &SharedQuota, share: u32, hold: u64) -> script::Fixed {
    let mut f = carrier.state.fixed.clone();
    f.node = "ghost".into();
    f.pacing = None;
    f.share_permille = share;
    f.hold = hold;
    f
}

/// A ghost with a reservation joins, `paced` anchors the window with a counted grant, and
/// the ghost is refused (its lease ended live). Returns the ghost's ended epoch, the anchor
/// grant, and what is held for the ghost.
async fn ghost_refused(paced: &SharedQuota) -> (u64, crate::QuotaGrant, u64) {
    let g = ghost(paced, 100, 1_000);
    let epoch = renew_reply(paced, &g, 0, 0).await.epoch;
    let grant = paced.acquire(1, Priority::P1).await.expect("anchor");
    assert_eq!(renew_as(paced, &g, epoch, 0).await, script::PACED_ELSEWHERE);
    let held = paced.snapshot().await.expect("p").held;
    assert!(held > 0, "the ghost's share is held");
    (epoch, grant, held)
}

/// What is held for a lease ended live stays held past an earlier reset, and after that
/// lease would have expired, until its holder reports: cut off until then, the holder
/// stopped spending, but reports only after. Returned at the lease's expiry (as it was,
/// review helper-39), the pool was whole again and the report found nothing to pay it from.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_a_share_held_past_an_earlier_reset_waits_for_its_holders_report() {
    let Some(srv) = server::server() else { return };
    let p = server::prefix("held-carry-late");
    let spec = QuotaSpec::new(1_000, Duration::from_secs(3_600)).shared_pacing(rules());
    let ttl = Duration::from_secs(4);
    let (_rp, paced) = node_with_ttl(&srv.url, &p, "p", spec, ttl).await;
    let (epoch, grant, held) = ghost_refused(&paced).await;
    let ended_at = std::time::Instant::now();
    let rolled = roll_early(&paced, grant).await;
    assert_eq!(rolled.held, held, "{rolled:?}");
    while ended_at.elapsed() < ttl + Duration::from_millis(300) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let waiting = paced.snapshot().await.expect("p");
    assert_eq!(waiting.held, held, "no report yet: {waiting:?}");
    // The ghost is back: it spent all of it offline, after the real reset.
    let g = ghost(&paced, 100, 1_000);
    assert_eq!(
        renew_as(&paced, &g, epoch, held).await,
        script::PACED_ELSEWHERE
    );
    assert_paid(&paced, held).await;
}

/// The same for a live lease's hold (degraded mode: all of its reservation) at a reset
/// earlier than its holder was told: cut off, the holder spends it after the real reset, its
/// lease expires, and it reports only after. Returned at the lease's expiry (as it was,
/// carried with no holder named), the report found nothing to pay it from.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_a_live_leases_hold_past_an_earlier_reset_waits_for_its_holders_report() {
    let Some(srv) = server::server() else { return };
    let p = server::prefix("held-live-late");
    let spec = QuotaSpec::new(1_000, Duration::from_secs(3_600)).shared_pacing(rules());
    let ttl = Duration::from_secs(6);
    let (_rp, paced) = node_with_ttl(&srv.url, &p, "p", spec, ttl).await;
    let g = ghost(&paced, 100, 1_000);
    let joined = renew_reply(&paced, &g, 0, 0).await;
    let joined_at = std::time::Instant::now();
    assert!(joined.reserved > 0, "{joined:?}");
    let grant = paced.acquire(1, Priority::P1).await.expect("anchor");
    let rolled = roll_early(&paced, grant).await;
    assert_eq!(rolled.held, joined.reserved, "{rolled:?}");
    // The ghost is cut off until its lease has expired (and been reaped).
    while joined_at.elapsed() < ttl + Duration::from_millis(300) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let waiting = paced.snapshot().await.expect("p");
    assert_eq!(waiting.held, joined.reserved, "no report yet: {waiting:?}");
    assert_eq!(
        renew_as(&paced, &g, joined.epoch, joined.reserved).await,
        script::PACED_ELSEWHERE
    );
    assert_paid(&paced, joined.reserved).await;
}

/// A live lease's hold past an earlier reset pays its holder's first report after the roll
/// (the holder is back, and spends from its new reservation). The rest returns once the
/// lease would have expired as the holder last heard: the reply may be lost, and the holder
/// spend on from its old reservation until then. Returned at once (as it was, review
/// helper-41), a lost reply let that spending come on top of a whole pool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_a_live_leases_hold_past_an_earlier_reset_pays_its_next_report_then_returns() {
    let Some(srv) = server::server() else { return };
    let p = server::prefix("held-live-back");
    let (_rp, paced, mut g) = carrier_and_ghost(&srv.url, &p, 10).await;
    g.ttl_ms = 4_000;
    let joined = renew_reply(&paced, &g, 0, 0).await;
    let joined_at = std::time::Instant::now();
    assert!(joined.reserved >= 10, "{joined:?}");
    let rolled = roll_early_after_rules(&paced).await;
    assert_eq!(rolled.held, 10, "{rolled:?}");
    assert_held_counted(&paced).await;
    // Back before its lease expired: it spent 3 of its hold after the real reset.
    let bare = bare(&g);
    assert_ne!(
        renew_as(&paced, &bare, joined.epoch, 3).await,
        script::PACED_ELSEWHERE
    );
    let reported = paced.snapshot().await.expect("p");
    assert_eq!(
        reported.held, 7,
        "kept until the lease would have expired: {reported:?}"
    );
    assert_held_counted(&paced).await;
    while joined_at.elapsed() < Duration::from_millis(4_300) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    renew_as(&paced, &bare, joined.epoch, 0).await;
    assert_paid(&paced, 3).await;
}

/// The same, when the reply to the holder's first call after the roll is lost: cut off, it
/// spends all of its old reservation (degraded mode), and reports it. Paid from the share
/// kept for it, that report counts whole. Returned at the first call naming the lease (as it
/// was), only the express allowance of it was charged: quota spent twice (review helper-41).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_a_live_leases_hold_past_an_earlier_reset_outlives_a_lost_reply() {
    let Some(srv) = server::server() else { return };
    let p = server::prefix("held-live-lost");
    let (_rp, paced, mut g) = carrier_and_ghost(&srv.url, &p, 1_000).await;
    g.ttl_ms = 8_000;
    let joined = renew_reply(&paced, &g, 0, 0).await;
    assert!(joined.reserved > 0, "{joined:?}");
    let rolled = roll_early_after_rules(&paced).await;
    assert_eq!(rolled.held, joined.reserved, "{rolled:?}");
    let bare = bare(&g);
    // Its renewal's reply never reaches it.
    assert_ne!(
        renew_as(&paced, &bare, joined.epoch, 0).await,
        script::PACED_ELSEWHERE
    );
    assert_held_counted(&paced).await;
    renew_as(&paced, &bare, joined.epoch, joined.reserved).await;
    assert_paid(&paced, joined.reserved).await;
    assert_held_counted(&paced).await;
}

/// A lease that expired after a reset earlier than its holder was told, but before the
/// first call after that reset (which rolls the window), may have been spent from past the
/// reset: its hold is kept too. Judged by the time of the roll (as it was), it was dropped,
/// and its holder's report, coming later, found nothing to pay it from.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_a_hold_of_a_lease_expired_between_an_earlier_reset_and_the_roll_is_kept() {
    let Some(srv) = server::server() else { return };
    let p = server::prefix("held-expired-roll");
    let (_rp, paced, mut g) = carrier_and_ghost(&srv.url, &p, 1_000).await;
    g.ttl_ms = 4_000;
    let joined = renew_reply(&paced, &g, 0, 0).await;
    let joined_at = std::time::Instant::now();
    assert!(joined.reserved > 0, "{joined:?}");
    let grant = paced.acquire(1, Priority::P1).await.expect("anchor");
    move_reset_early(&paced, grant).await;
    // The reset passes, then the ghost's lease expires; only then does a call come.
    while joined_at.elapsed() < Duration::from_millis(4_300) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let rolled = paced.snapshot().await.expect("p");
    assert!(
        rolled
            .reset_in
            .is_none_or(|r| r > Duration::from_secs(3_000)),
        "{rolled:?}"
    );
    assert_eq!(rolled.held, joined.reserved, "{rolled:?}");
    // The ghost, back, spent all of it after the real reset.
    renew_as(&paced, &g, joined.epoch, joined.reserved).await;
    assert_paid(&paced, joined.reserved).await;
}

/// A share kept at a rejoin (the holder's ended lease may still be spent from until it
/// would have expired) is kept past a later reset that came earlier than told. Dropped at
/// that roll (as it was earlier), the new window's pool was whole and the holder's offline
/// spending came on top of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_a_share_kept_at_a_rejoin_is_kept_past_an_earlier_reset() {
    let Some(srv) = server::server() else { return };
    let p = server::prefix("held-rejoin-roll");
    let brief = rules_over(Duration::from_millis(500));
    let spec = QuotaSpec::new(1_000, Duration::from_secs(3_600)).shared_pacing(brief);
    let ttl = Duration::from_secs(6);
    let (_rp, paced) = node_with_ttl(&srv.url, &p, "p", spec, ttl).await;
    let (epoch, grant, held) = ghost_refused(&paced).await;
    // Once the counts are no longer live, the ghost rejoins: without a reservation or a
    // hold this time, so all that is held is the ended lease's share.
    tokio::time::sleep(Duration::from_millis(1_300)).await;
    let bare = ghost(&paced, 0, 0);
    assert_ne!(
        renew_as(&paced, &bare, epoch, 0).await,
        script::PACED_ELSEWHERE
    );
    let rejoined = paced.snapshot().await.expect("p");
    assert_eq!(rejoined.held, held, "{rejoined:?}");
    let rolled = roll_early(&paced, grant).await;
    assert_eq!(rolled.held, held, "{rolled:?}");
    assert_eq!(rolled.pool + rolled.held, rolled.limit, "{rolled:?}");
}

/// A carrier whose heartbeat makes no call during a test (a long TTL), with shared rules
/// that count for half a second only (so it has no express lane, and the ghost is refused
/// only within a second of a grant); and a ghost with a reservation and `hold`.
async fn carrier_and_ghost(
    url: &str,
    p: &str,
    hold: u64,
) -> (RedisQuota, SharedQuota, script::Fixed) {
    let brief = QuotaSpec::new(1_000, Duration::from_secs(3_600))
        .shared_pacing(rules_over(Duration::from_millis(500)));
    let (r, paced) = node_with_ttl(url, p, "p", brief, Duration::from_secs(60)).await;
    let g = ghost(&paced, 100, hold);
    (r, paced, g)
}

/// The ghost `g` sending no share (its reservation is not topped up), as configured else.
fn bare(g: &script::Fixed) -> script::Fixed {
    let mut b = g.clone();
    b.share_permille = 0;
    b
}

/// Anchors the window with a counted grant, rolls it early ([`roll_early`]), and returns once
/// the rules' counts no longer live (so the ghost is not refused).
async fn roll_early_after_rules(paced: &SharedQuota) -> crate::QuotaSnapshot {
    let granted_at = std::time::Instant::now();
    let grant = paced.acquire(1, Priority::P1).await.expect("anchor");
    let rolled = roll_early(paced, grant).await;
    while granted_at.elapsed() < Duration::from_millis(1_300) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    rolled
}

/// What the state counts as held (`s.held`) is what its held hash holds, entry by entry.
async fn assert_held_counted(q: &SharedQuota) {
    let held = q.snapshot().await.expect("snapshot").held;
    let (mut conn, _) = q.inner.link.current().expect("connected");
    let entries: Vec<String> = redis::cmd("HVALS")
        .arg(&q.state.fixed.keys[3])
        .query_async(&mut conn)
        .await
        .expect("HVALS");
    let sum: u64 = entries
        .iter()
        .map(|e| {
            e.split(':')
                .next()
                .and_then(|h| h.parse::<u64>().ok())
                .expect("h:u")
        })
        .sum();
    assert_eq!(held, sum, "held {held}, the hash {entries:?}");
}

/// A live lease's share kept at an earlier reset is still there at a second one (its lease
/// would not have expired yet), beside the lease's new hold; then the lease is ended with a
/// share of its own. Each counts once in the state's `held`, and the hash holds both.
/// Written to one key (as they were, review helper-41), the second overwrote the first, and
/// `held` stayed above what any report could settle until the window ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_shares_held_twice_for_one_lease_are_both_counted() {
    let Some(srv) = server::server() else { return };
    let p = server::prefix("held-twice");
    let (_rp, paced, mut g) = carrier_and_ghost(&srv.url, &p, 10).await;
    g.ttl_ms = 12_000;
    let joined = renew_reply(&paced, &g, 0, 0).await;
    assert!(joined.reserved >= 10, "{joined:?}");
    let first = roll_early_after_rules(&paced).await;
    assert_eq!(first.held, 10, "{first:?}");
    // Back: a new reservation in the new window (the share stays: the lease is live).
    let renewed = renew_reply(&paced, &g, joined.epoch, 0).await;
    assert!(renewed.reserved >= 10, "{renewed:?}");
    let second = roll_early_after_rules(&paced).await;
    assert_eq!(second.held, 20, "{second:?}");
    assert_held_counted(&paced).await;
    // Topped up again, then refused (ended live): its hold joins the same key.
    assert!(renew_reply(&paced, &g, joined.epoch, 0).await.reserved >= 10);
    let _ = paced
        .acquire(1, Priority::P1)
        .await
        .expect("a counted grant");
    assert_eq!(
        renew_as(&paced, &g, joined.epoch, 0).await,
        script::PACED_ELSEWHERE
    );
    assert_eq!(paced.snapshot().await.expect("p").held, 30);
    assert_held_counted(&paced).await;
}

/// A node can have a share held for its ended lease and one kept at its rejoin (for the lease
/// before): a holder that rejoined, then was cut off until its new lease expired. Its report
/// under the new lease is paid from both. Paid from the first found only (as it was, review
/// helper-41), the rest of the report went unpaid.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_a_report_is_paid_from_every_share_held_for_its_node() {
    let Some(srv) = server::server() else { return };
    let p = server::prefix("held-both");
    let (_rp, paced, mut g) = carrier_and_ghost(&srv.url, &p, 1_000).await;
    g.ttl_ms = 4_000;
    let joined = renew_reply(&paced, &g, 0, 0).await;
    assert!(joined.reserved > 0, "{joined:?}");
    let _ = paced
        .acquire(1, Priority::P1)
        .await
        .expect("a counted grant");
    assert_eq!(
        renew_as(&paced, &g, joined.epoch, 0).await,
        script::PACED_ELSEWHERE
    );
    // Once the counts are no longer live, it rejoins (the old share kept for the node) ...
    tokio::time::sleep(Duration::from_millis(1_300)).await;
    let rejoined = renew_reply(&paced, &g, joined.epoch, 0).await;
    let rejoined_at = std::time::Instant::now();
    assert_ne!(rejoined.status, script::PACED_ELSEWHERE, "{rejoined:?}");
    assert!(rejoined.reserved > 0, "{rejoined:?}");
    // ... and is cut off until the new lease has expired (and been reaped: held too).
    while rejoined_at.elapsed() < Duration::from_millis(4_300) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let before = paced.snapshot().await.expect("p");
    let spent = joined.reserved + rejoined.reserved;
    assert_eq!(before.held, spent, "{before:?}");
    assert_held_counted(&paced).await;
    // Back: it spent both, and reports under the lease it last heard of.
    renew_as(&paced, &g, rejoined.epoch, spent).await;
    let after = paced.snapshot().await.expect("p");
    assert_eq!(after.held, 0, "{after:?}");
    assert_eq!(
        after.pool + after.reserved_total,
        before.pool + before.reserved_total,
        "what it spent counts: {before:?} {after:?}"
    );
    assert_held_counted(&paced).await;
}

/// Redis loses the state's key alone (evicted), and the next call carries no view of a live
/// window: the new state counts no lease and holds nothing, so the old leases and held
/// shares go with it. Left there (as they were then), a held share outlived the state that
/// counted it, and a report could be paid from it twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_new_state_keeps_nothing_of_a_lost_ones_leases_or_held_shares() {
    let Some(srv) = server::server() else { return };
    let p = server::prefix("held-new-state");
    let (_rp, paced, g) = carrier_and_ghost(&srv.url, &p, 1_000).await;
    let joined = renew_reply(&paced, &g, 0, 0).await;
    let _ = paced
        .acquire(1, Priority::P1)
        .await
        .expect("a counted grant");
    assert_eq!(
        renew_as(&paced, &g, joined.epoch, 0).await,
        script::PACED_ELSEWHERE
    );
    assert!(paced.snapshot().await.expect("p").held > 0);
    let (mut conn, _) = paced.inner.link.current().expect("connected");
    let _: () = redis::cmd("DEL")
        .arg(&paced.state.fixed.keys[0])
        .query_async(&mut conn)
        .await
        .expect("DEL");
    // The ghost's view names no window (its calls send none).
    let back = renew_reply(&paced, &g, joined.epoch, 0).await;
    assert_eq!(back.held, 0, "{back:?}");
    assert_held_counted(&paced).await;
    let leases: u64 = redis::cmd("HLEN")
        .arg(&paced.state.fixed.keys[1])
        .query_async(&mut conn)
        .await
        .expect("HLEN");
    assert_eq!(leases, 1, "the ghost's new lease only");
}
