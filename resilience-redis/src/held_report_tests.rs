//! G7, crate-internal: what a lease ended live holds back (a process refused for want of the
//! shared rules) against the reports of its holder. The calls are sent as the holder would
//! after a lost reply, which needs the script's own call; the server is a real, throwaway
//! `redis-server`.

use crate::script::{self, Op, View};
use crate::test_server as server;
use crate::{QuotaSpec, RedisQuota, RedisQuotaConfig, SharedQuota};
use resilience_core::governor::{Pacing, Priority, Selector, WindowRule};
use std::time::{Duration, Instant};

async fn node(url: &str, p: &str, name: &str, spec: QuotaSpec) -> (RedisQuota, SharedQuota) {
    node_with_ttl(url, p, name, spec, Duration::from_millis(1_500)).await
}

pub(crate) async fn node_with_ttl(
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
pub(crate) async fn renew(q: &SharedQuota, epoch: u64, spent: u64) -> i64 {
    renew_as(q, &q.state.fixed, epoch, spent).await
}

/// `renew`, with `fixed` (what the process is configured with) in place of `q`'s own.
pub(crate) async fn renew_as(
    q: &SharedQuota,
    fixed: &script::Fixed,
    epoch: u64,
    spent: u64,
) -> i64 {
    renew_reply(q, fixed, epoch, spent).await.status
}

/// `renew_as`, the whole reply.
pub(crate) async fn renew_reply(
    q: &SharedQuota,
    fixed: &script::Fixed,
    epoch: u64,
    spent: u64,
) -> script::Reply {
    // Sent as a holder whose own deadline for the lease it names has passed, or that is
    // back from being cut off: its report is its last word on an ended lease.
    let view = View {
        epoch,
        offline_spent: spent,
        report_final: true,
        ..View::default()
    };
    renew_viewed(q, fixed, view).await
}

/// A renewal sent with `view` (its `state` set to `q`'s current one): the whole reply.
pub(crate) async fn renew_viewed(
    q: &SharedQuota,
    fixed: &script::Fixed,
    mut view: View,
) -> script::Reply {
    let (mut conn, _) = q.inner.link.current().expect("connected");
    view.state = q.state.local.lock().state;
    script::call(&mut conn, fixed, &view, &Op::Renew)
        .await
        .expect("call")
        .expect("reply")
}

/// A rule over every request, 100 a minute (or a `span`): a resource with it counts grants in the shared
/// rules, so a process without them is refused.
pub(crate) fn rules() -> Pacing {
    rules_over(Duration::from_secs(60))
}

pub(crate) fn rules_over(span: Duration) -> Pacing {
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
    let ended_at = Instant::now();
    // Once the counts are no longer live (their shortest life is a second), u rejoins.
    tokio::time::sleep(Duration::from_millis(1_300)).await;
    assert_ne!(renew(&u, mine.epoch, 0).await, script::PACED_ELSEWHERE);
    let rejoined = paced.snapshot().await.expect("p");
    assert!(rejoined.held >= mine.reserved, "{rejoined:?}");
    wait_past(ended_at, ttl + Duration::from_millis(300)).await;
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
    let (_rp, paced, g, joined, joined_at) = ghost_joined(&srv.url, &p, 1_000, 3_000).await;
    refused(&paced, &g, joined.epoch).await;
    // Once the counts are no longer live, the ghost rejoins; that reply never reaches it.
    tokio::time::sleep(Duration::from_millis(1_300)).await;
    let rejoined = renew_reply(&paced, &g, joined.epoch, 0).await;
    assert_ne!(rejoined.epoch, joined.epoch, "{rejoined:?}");
    // Both leases expire (the new one is reaped); then the ghost is back and reports, under
    // the old epoch, that it spent all of the old reservation.
    wait_past(joined_at, Duration::from_millis(1_300 + 3_500)).await;
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
pub(crate) async fn assert_paid(paced: &SharedQuota, spent: u64) {
    let after = paced.snapshot().await.expect("p");
    assert_eq!(after.held, 0, "{after:?}");
    assert_eq!(
        after.pool + after.reserved_total,
        after.limit - spent,
        "what it spent counts in this window: {after:?}"
    );
}

/// A process without the shared rules and without background tasks ("ghost"), whose calls
/// go out on `carrier`'s connection: its lease changes only when the test calls. `share`
/// and `hold` as configured (per mille of the pool, and what it may spend unreported).
pub(crate) fn ghost(carrier: &SharedQuota, share: u32, hold: u64) -> script::Fixed {
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
pub(crate) async fn ghost_refused(paced: &SharedQuota) -> (u64, crate::QuotaGrant, u64) {
    let g = ghost(paced, 100, 1_000);
    let epoch = renew_reply(paced, &g, 0, 0).await.epoch;
    let grant = paced.acquire(1, Priority::P1).await.expect("anchor");
    assert_eq!(renew_as(paced, &g, epoch, 0).await, script::PACED_ELSEWHERE);
    let held = paced.snapshot().await.expect("p").held;
    assert!(held > 0, "the ghost's share is held");
    (epoch, grant, held)
}

/// A carrier whose heartbeat makes no call during a test (a long TTL), with shared rules
/// that count for half a second only (so it has no express lane, and the ghost is refused
/// only within a second of a grant); and a ghost with a reservation and `hold`.
pub(crate) async fn carrier_and_ghost(
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
pub(crate) fn bare(g: &script::Fixed) -> script::Fixed {
    let mut b = g.clone();
    b.share_permille = 0;
    b
}

/// What the state counts as held (`s.held`) is what its held hash holds, entry by entry.
pub(crate) async fn assert_held_counted(q: &SharedQuota) {
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

/// A ghost refused, then rejoined once the counts are no longer live (its old share kept for
/// the node), then cut off until its new lease expired and was reaped (that lease's share
/// held too). Returns the carrier, the ghost, its last epoch, what both shares hold, and
/// the carrier's snapshot then.
async fn two_shares_held(
    url: &str,
    p: &str,
) -> (
    RedisQuota,
    SharedQuota,
    script::Fixed,
    u64,
    u64,
    crate::QuotaSnapshot,
) {
    let (r, paced, g, joined, _) = ghost_joined(url, p, 1_000, 4_000).await;
    refused(&paced, &g, joined.epoch).await;
    tokio::time::sleep(Duration::from_millis(1_300)).await;
    let rejoined = renew_reply(&paced, &g, joined.epoch, 0).await;
    let rejoined_at = Instant::now();
    assert_ne!(rejoined.status, script::PACED_ELSEWHERE, "{rejoined:?}");
    assert!(rejoined.reserved > 0, "{rejoined:?}");
    wait_past(rejoined_at, Duration::from_millis(4_300)).await;
    let before = paced.snapshot().await.expect("p");
    let both = joined.reserved + rejoined.reserved;
    assert_eq!(before.held, both, "{before:?}");
    assert_held_counted(&paced).await;
    (r, paced, g, rejoined.epoch, both, before)
}

/// A node can have a share held for its ended lease and one kept at its rejoin (for the lease
/// before): a holder that rejoined, then was cut off until its new lease expired. Its report
/// under the new lease is paid from both. Paid from the first found only (as it was, review
/// helper-41), the rest of the report went unpaid.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_a_report_is_paid_from_every_share_held_for_its_node() {
    let Some(srv) = server::server() else { return };
    let p = server::prefix("held-both");
    let (_rp, paced, g, epoch, spent, before) = two_shares_held(&srv.url, &p).await;
    // Back: it spent both, and reports under the lease it last heard of.
    renew_as(&paced, &g, epoch, spent).await;
    let after = paced.snapshot().await.expect("p");
    assert_eq!(after.held, 0, "{after:?}");
    assert_eq!(
        after.pool + after.reserved_total,
        before.pool + before.reserved_total,
        "what it spent counts: {before:?} {after:?}"
    );
    assert_held_counted(&paced).await;
}

/// The same holder spent nothing: both shares return, less its express allowance (`keep`)
/// held back once, since its lane spends at most that unreported, from whichever lease. Held
/// back per share (as it was, review helper-42), the pool stayed lower for nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_shares_returned_together_hold_back_the_express_allowance_once() {
    let Some(srv) = server::server() else { return };
    let p = server::prefix("held-both-keep");
    let (_rp, paced, mut g, epoch, both, before) = two_shares_held(&srv.url, &p).await;
    g.keep = 5;
    renew_as(&paced, &g, epoch, 0).await;
    let after = paced.snapshot().await.expect("p");
    assert_eq!(after.held, 0, "{after:?}");
    assert_eq!(
        after.pool + after.reserved_total,
        before.pool + before.reserved_total + both - 5,
        "{before:?} {after:?}"
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
    refused(&paced, &g, joined.epoch).await;
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

/// [`carrier_and_ghost`], and the ghost joins with a lease of `ttl_ms`: its reply, and when.
pub(crate) async fn ghost_joined(
    url: &str,
    p: &str,
    hold: u64,
    ttl_ms: u64,
) -> (
    RedisQuota,
    SharedQuota,
    script::Fixed,
    script::Reply,
    Instant,
) {
    let (r, paced, mut g) = carrier_and_ghost(url, p, hold).await;
    g.ttl_ms = ttl_ms;
    let joined = renew_reply(&paced, &g, 0, 0).await;
    assert!(joined.reserved > 0, "{joined:?}");
    (r, paced, g, joined, Instant::now())
}

/// Returns once `after` has passed since `since`.
pub(crate) async fn wait_past(since: Instant, after: Duration) {
    tokio::time::sleep(after.saturating_sub(since.elapsed())).await;
}

/// `paced` makes a grant counted in its shared rules, and the ghost `g`, without them, is
/// refused under its lease `epoch` (which ends live).
pub(crate) async fn refused(paced: &SharedQuota, g: &script::Fixed, epoch: u64) {
    let _ = paced
        .acquire(1, Priority::P1)
        .await
        .expect("a counted grant");
    assert_eq!(renew_as(paced, g, epoch, 0).await, script::PACED_ELSEWHERE);
}
