//! G7, crate-internal: shares held past a reset that came earlier than some holder was told
//! (a reset header another process read moved it), against the reports of their holders.
//! The calls are sent as the holder would after a lost reply, which needs the script's own
//! call; the server is a real, throwaway `redis-server`.

use crate::held_report_tests::{
    assert_held_counted, assert_paid, bare, ghost, ghost_joined, ghost_refused, node_with_ttl,
    refused, renew, renew_as, renew_reply, renew_viewed, rules, rules_over, wait_past,
};
use crate::script;
use crate::test_server as server;
use crate::{QuotaSpec, SharedQuota};
use resilience_core::governor::{Observation, Priority};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

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
    let ended_at = Instant::now();
    let rolled = roll_early(&paced, grant).await;
    assert_eq!(rolled.held, held, "{rolled:?}");
    wait_past(ended_at, ttl + Duration::from_millis(300)).await;
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
    let joined_at = Instant::now();
    assert!(joined.reserved > 0, "{joined:?}");
    let grant = paced.acquire(1, Priority::P1).await.expect("anchor");
    let rolled = roll_early(&paced, grant).await;
    assert_eq!(rolled.held, joined.reserved, "{rolled:?}");
    // The ghost is cut off until its lease has expired (and been reaped).
    wait_past(joined_at, ttl + Duration::from_millis(300)).await;
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
    let (_rp, paced, g, joined, joined_at) = ghost_joined(&srv.url, &p, 10, 4_000).await;
    assert!(joined.reserved >= 10, "{joined:?}");
    let rolled = roll_early_after_rules(&paced).await;
    assert_eq!(rolled.held, 10, "{rolled:?}");
    assert_held_counted(&paced).await;
    // Back before its lease expired: it spent 3 of its hold after the real reset.
    let bare = bare(&g);
    let back = renew_reply(&paced, &bare, joined.epoch, 3).await;
    assert_ne!(back.status, script::PACED_ELSEWHERE);
    let reported = paced.snapshot().await.expect("p");
    assert_eq!(
        reported.held, 7,
        "kept until the lease would have expired: {reported:?}"
    );
    assert_held_counted(&paced).await;
    // Its next call, sent after that reply (judged after the roll) reached it.
    wait_past(joined_at, Duration::from_millis(4_300)).await;
    renew_seen(&paced, &bare, joined.epoch, 0, back.ops, false).await;
    assert_paid(&paced, 3).await;
}

/// The same, when the calls that come are ones the holder sent before it was cut off (with
/// the view it had before the roll), one judged before its lease would have expired as it
/// last heard (it renews the lease; its reply is lost) and one after. Cut off, the holder
/// spends all of its old reservation until then, and reports it when it is back. Returned
/// at the late call, past that expiry (as it was: only the express allowance of the report
/// was charged), the quota was spent twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_a_live_leases_hold_past_an_earlier_reset_outlives_calls_sent_before_it() {
    let Some(srv) = server::server() else { return };
    let p = server::prefix("held-live-late-call");
    let ttl = Duration::from_millis(6_000);
    let (_rp, paced, g, joined, joined_at) = ghost_joined(&srv.url, &p, 1_000, 6_000).await;
    let rolled = roll_early_after_rules(&paced).await;
    assert_eq!(rolled.held, joined.reserved, "{rolled:?}");
    let bare = bare(&g);
    let before =
        |spent, last_word| renew_seen(&paced, &bare, joined.epoch, spent, joined.ops, last_word);
    let renewed = before(0, false).await;
    assert!(
        joined_at.elapsed() < ttl,
        "judged before the lease would have expired"
    );
    assert!(renewed.lease_left_ms > 3_000, "{renewed:?}");
    wait_past(joined_at, ttl + Duration::from_millis(300)).await;
    before(0, false).await;
    let late = paced.snapshot().await.expect("p");
    assert_eq!(
        late.held, joined.reserved,
        "kept for the holder's report: {late:?}"
    );
    assert_held_counted(&paced).await;
    // Back: its deadline has passed, and it reports all of its old reservation.
    before(joined.reserved, true).await;
    assert_paid(&paced, joined.reserved).await;
}

/// A renewal of the ghost's lease `epoch` reporting `spent`, from a holder whose newest reply
/// carried the state's counter `seen`; `last_word`: its own deadline for the lease had passed.
async fn renew_seen(
    paced: &SharedQuota,
    g: &script::Fixed,
    epoch: u64,
    spent: u64,
    seen: u64,
    last_word: bool,
) -> script::Reply {
    let view = script::View {
        epoch,
        offline_spent: spent,
        ops: seen,
        report_final: last_word,
        ..script::View::default()
    };
    renew_viewed(paced, g, view).await
}

/// The same, when the reply to the holder's first call after the roll is lost: cut off, it
/// spends all of its old reservation (degraded mode), and reports it. Paid from the share
/// kept for it, that report counts whole. Returned at the first call naming the lease (as it
/// was), only the express allowance of it was charged: quota spent twice (review helper-41).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_a_live_leases_hold_past_an_earlier_reset_outlives_a_lost_reply() {
    let Some(srv) = server::server() else { return };
    let p = server::prefix("held-live-lost");
    let (_rp, paced, g, joined, _) = ghost_joined(&srv.url, &p, 1_000, 8_000).await;
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
    let (_rp, paced, g, joined, joined_at) = ghost_joined(&srv.url, &p, 1_000, 4_000).await;
    let grant = paced.acquire(1, Priority::P1).await.expect("anchor");
    move_reset_early(&paced, grant).await;
    // The reset passes, then the ghost's lease expires; only then does a call come.
    wait_past(joined_at, Duration::from_millis(4_300)).await;
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

/// Anchors the window with a counted grant, rolls it early ([`roll_early`]), and returns once
/// the rules' counts no longer live (so the ghost is not refused).
async fn roll_early_after_rules(paced: &SharedQuota) -> crate::QuotaSnapshot {
    let granted_at = Instant::now();
    let grant = paced.acquire(1, Priority::P1).await.expect("anchor");
    let rolled = roll_early(paced, grant).await;
    wait_past(granted_at, Duration::from_millis(1_300)).await;
    rolled
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
    let (_rp, paced, g, joined, _) = ghost_joined(&srv.url, &p, 10, 12_000).await;
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
    refused(&paced, &g, joined.epoch).await;
    assert_eq!(paced.snapshot().await.expect("p").held, 30);
    assert_held_counted(&paced).await;
}

/// A live lease's share kept at an earlier reset, when its holder leaves (shuts down)
/// before the lease would have expired. The leave's report holds all it spent (its lanes
/// shut before the call), and the server returns the whole reservation: the share's rest
/// returns too. Kept until a later call names the lease (none ever does: the process is
/// gone), it stayed held until the window ended (review helper-42).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_a_live_leases_hold_past_an_earlier_reset_returns_when_its_holder_leaves() {
    let Some(srv) = server::server() else { return };
    let p = server::prefix("held-live-leave");
    let (_rp, paced, g, joined, _) = ghost_joined(&srv.url, &p, 10, 12_000).await;
    assert!(joined.reserved >= 10, "{joined:?}");
    let rolled = roll_early_after_rules(&paced).await;
    assert_eq!(rolled.held, 10, "{rolled:?}");
    // It spent 3 of its hold after the real reset, and leaves.
    let (mut conn, _) = paced.inner.link.current().expect("connected");
    let view = script::View {
        epoch: joined.epoch,
        offline_spent: 3,
        state: paced.state.local.lock().state,
        ..script::View::default()
    };
    let left = script::call(
        &mut conn,
        &bare(&g),
        &view,
        &script::Op::Leave { log: Vec::new() },
    )
    .await
    .expect("call")
    .expect("reply");
    assert_ne!(left.status, script::FENCED, "{left:?}");
    assert_held_counted(&paced).await;
    assert_paid(&paced, 3).await;
}

/// Liveness: with real clients, connected and calling, the shares held for them past an
/// earlier reset come back to the pool once their leases would have expired as they last
/// heard (here within about one lease TTL of the roll), not at the window's end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_connected_holders_shares_held_past_an_earlier_reset_return_within_a_ttl() {
    let Some(srv) = server::server() else { return };
    let p = server::prefix("held-live-return");
    let plain = QuotaSpec::new(1_000, Duration::from_secs(3_600));
    let ttl = Duration::from_secs(3);
    let (_ra, a) = node_with_ttl(&srv.url, &p, "a", plain.clone(), ttl).await;
    let (_rb, b) = node_with_ttl(&srv.url, &p, "b", plain, ttl).await;
    let _ = a.acquire(1, Priority::P1).await.expect("a");
    let grant = b.acquire(1, Priority::P1).await.expect("b");
    let rolled = roll_early(&b, grant).await;
    let rolled_at = Instant::now();
    assert!(rolled.held > 0, "shares held at the roll: {rolled:?}");
    let mut last = rolled;
    while last.held > 0 && rolled_at.elapsed() < ttl * 2 {
        let _ = a.acquire(1, Priority::P1).await;
        let _ = b.acquire(1, Priority::P1).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        last = a.snapshot().await.expect("a");
    }
    assert_eq!(
        last.held,
        0,
        "still held after {:?}: {last:?}",
        rolled_at.elapsed()
    );
    assert_held_counted(&a).await;
}
