//! G7 against a real redis-server: Redis comes back without its data on a host whose clock
//! is behind the lost one's. The new state then counts its lease epochs and calls from lower
//! numbers than the processes hold; it must still be seen as a data loss (a conservative
//! rebuild from every process's view), and the processes must follow the new state.
//!
//! The lost state's counters are moved ahead instead (as if its host's clock were ahead),
//! and every process learns the moved numbers before the keys are deleted. A state that
//! rolled back (a failover to a replica behind it) is a loss too.

mod common;

use common::node::{cfg, go, quota, MS};
use common::server::{prefix, server, state_key, RedisServer};
use resilience_core::governor::{Observation, Priority};
use resilience_redis::{RedisQuota, SharedQuota};

/// How far ahead the lost state's clock was: three hours, in ms.
const AHEAD_MS: u64 = 10_800_000;

/// The epoch of `node`'s lease on the server.
fn lease_epoch(srv: &RedisServer, p: &str, node: &str) -> u64 {
    let v = srv
        .cmd(&format!("HGET {} {node}", state_key(p, "l")))
        .unwrap_or_default();
    v.split(':')
        .next()
        .and_then(|e| e.trim().parse().ok())
        .unwrap_or_else(|| panic!("{node}'s lease: {v:?}"))
}

/// An acquire and its release: the process's lease is renewed, and the reply applied.
async fn touch(q: &SharedQuota) {
    let g = go(q.try_acquire(1, Priority::P1).await.expect("acquire"));
    q.release(g).await.expect("release");
}

/// Two processes holding leases of a state whose counters were moved ahead; b alone has read
/// that 100 are left upstream. Then Redis loses everything. Returns what b saw left and
/// b's lost lease.
struct Lost {
    a: (RedisQuota, SharedQuota),
    b: (RedisQuota, SharedQuota),
    seen_by_b: u64,
    b_lost: u64,
}

async fn lost_state_ahead(srv: &RedisServer, p: &str) -> Lost {
    let one_hour = MS(3_600_000);
    let c = |n| cfg(&srv.url, p, n).reserve_share_permille(0);
    let a = quota(c("a"), 1_000, one_hour).await;
    let b = quota(c("b"), 1_000, one_hour).await;
    // a anchors the window; both processes then hold leases of the moved-ahead state.
    touch(&a.1).await;
    srv.move_counters_ahead(p, AHEAD_MS);
    touch(&a.1).await;
    touch(&b.1).await;
    for (q, n) in [(&a.1, "a"), (&b.1, "b")] {
        let epoch = q.snapshot().await.expect("snapshot").epoch;
        assert_eq!(epoch, lease_epoch(srv, p, n), "{n} follows the moved state");
    }
    let g = go(b.1.try_acquire(1, Priority::P1).await.expect("b"));
    let reading = Observation::from_headers(200, [("x-ratelimit-remaining", "100")]);
    b.1.observe(Some(g), &reading).await.expect("observe");
    let seen_by_b = b.1.snapshot().await.expect("b").pool;
    assert!(seen_by_b <= 100, "{seen_by_b}");
    let b_lost = lease_epoch(srv, p, "b");
    let del = ["q", "l", "e", "h", "r"].map(|k| state_key(p, k)).join(" ");
    srv.cmd(&format!("DEL {del}")).expect("delete");
    Lost {
        a,
        b,
        seen_by_b,
        b_lost,
    }
}

/// The new state counts from below b's lost lease; b's rejoin lowers its pool to what b saw.
async fn b_rejoins(srv: &RedisServer, p: &str, lost: &Lost) {
    let seq = srv.state_field(p, "seq");
    assert!(
        seq < lost.b_lost as i64,
        "the new state counts from below b's lost lease ({seq} against {})",
        lost.b_lost
    );
    lost.b.1.renew().await.expect("b rejoins");
    let pool = srv.state_field(p, "pool");
    assert!(
        pool <= lost.seen_by_b as i64,
        "the rebuilt pool ({pool}) is above what b knew was left ({})",
        lost.seen_by_b
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_loss_to_a_host_whose_clock_is_behind_is_rebuilt_from_every_view() {
    let Some(srv) = server() else { return };
    let p = prefix("clock-behind");
    let lost = lost_state_ahead(&srv, &p).await;
    let (a, b) = (&lost.a.1, &lost.b.1);
    a.renew().await.expect("a rejoins");
    b_rejoins(&srv, &p, &lost).await;
    let back = srv
        .cmd(&format!("SCARD {}", state_key(&p, "r")))
        .unwrap_or_default();
    assert_eq!(
        back.trim(),
        ":2",
        "both processes count as back from the lost state"
    );
    assert_eq!(
        srv.state_field(&p, "recover_until"),
        0,
        "every process the rebuild knew is back: the pool is open again"
    );
    for (q, n) in [(a, "a"), (b, "b")] {
        let epoch = q.snapshot().await.expect("snapshot").epoch;
        assert_eq!(epoch, lease_epoch(&srv, &p, n), "{n} follows the new state");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_loss_to_a_host_whose_clock_is_behind_is_rebuilt_after_a_new_process_came_first() {
    let Some(srv) = server() else { return };
    let p = prefix("clock-behind-new");
    let lost = lost_state_ahead(&srv, &p).await;
    // A process that knew nothing makes the new state: nothing to rebuild from yet.
    let c = cfg(&srv.url, &p, "c").reserve_share_permille(0);
    let (_rc, c) = quota(c, 1_000, MS(3_600_000)).await;
    touch(&c).await;
    let pool = srv.state_field(&p, "pool");
    assert_eq!(pool, 1_000, "c knew no window: the new state starts whole");
    // b's first word from the new state names no lease (a snapshot): b still sends what it
    // knew of the lost one when it rejoins (review helper-38: the snapshot's whole pool
    // replaced it, and the rebuild took it for b's view).
    lost.b.1.snapshot().await.expect("b's snapshot");
    b_rejoins(&srv, &p, &lost).await;
}

/// A state that rolled back (a failover to a replica that missed the last writes; here its
/// key restored from a copy taken earlier) keeps its id, but is behind a reply a process
/// already had: it is lost as a whole, and rebuilt from that process's view. Kept (as it
/// was), its pool was the older, higher one: the 100 granted since could be granted again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_state_rolled_back_behind_a_reply_is_rebuilt_as_a_loss() {
    let Some(srv) = server() else { return };
    let p = prefix("rolled-back");
    let (_ra, a) = unreserved(&srv, &p, "a").await;
    touch(&a).await;
    let id = srv.state_field(&p, "id");
    save(&srv, &p, "q");
    let _spent = go(a.try_acquire(100, Priority::P1).await.expect("100"));
    let seen = a.snapshot().await.expect("a").pool;
    assert!(seen <= 900, "{seen}");
    restore(&srv, &p, "q");
    a.renew().await.expect("renew");
    assert_ne!(srv.state_field(&p, "id"), id, "a new state");
    assert_rebuilt_within(&srv, &p, seen);
}

/// A process without a reservation, under a limit of 1000 an hour.
async fn unreserved(srv: &RedisServer, p: &str, name: &str) -> (RedisQuota, SharedQuota) {
    quota(
        cfg(&srv.url, p, name).reserve_share_permille(0),
        1_000,
        MS(3_600_000),
    )
    .await
}

/// The state was rebuilt no higher than `seen`, the pool a process last read.
fn assert_rebuilt_within(srv: &RedisServer, p: &str, seen: u64) {
    let pool = srv.state_field(p, "pool");
    assert!(
        pool <= seen as i64,
        "the rebuilt pool ({pool}) is above what the process saw ({seen})"
    );
}

/// Copies `k` (a key of the resource) aside, to restore it later.
fn save(srv: &RedisServer, p: &str, k: &str) {
    let answer = srv
        .cmd(&format!(
            "COPY {} {}-copy",
            state_key(p, k),
            state_key(p, k)
        ))
        .unwrap_or_default();
    assert_eq!(answer.trim(), ":1", "{answer}");
}

/// Puts the copy of `k` back, as a failover to a replica behind it, or a restore, would.
fn restore(srv: &RedisServer, p: &str, k: &str) {
    let answer = srv
        .cmd(&format!(
            "COPY {}-copy {} REPLACE",
            state_key(p, k),
            state_key(p, k)
        ))
        .unwrap_or_default();
    assert_eq!(answer.trim(), ":1", "{answer}");
}

/// The same when another process, idle since before the copy was taken, made more calls
/// after the rollback than were lost: the state's own counter is past the first process's
/// newest reply again, but that process's lease record, which only its calls move, is not.
/// Told by the state's counter alone (as it was, review helper-40), the older pool was
/// spent again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_rollback_is_found_after_other_processes_moved_the_state_past_it() {
    let Some(srv) = server() else { return };
    let p = prefix("rolled-back-busy");
    let (_ra, a) = unreserved(&srv, &p, "a").await;
    let (_rb, b) = unreserved(&srv, &p, "b").await;
    touch(&a).await;
    touch(&b).await;
    let id = srv.state_field(&p, "id");
    save(&srv, &p, "q");
    save(&srv, &p, "l");
    let _spent = go(a.try_acquire(100, Priority::P1).await.expect("100"));
    let seen = a.snapshot().await.expect("a").pool;
    assert!(seen <= 900, "{seen}");
    roll_back_then_busy(&srv, &p, &b).await;
    assert_eq!(srv.state_field(&p, "id"), id, "b saw nothing lost");
    a.renew().await.expect("renew");
    assert_ne!(srv.state_field(&p, "id"), id, "a new state");
    assert_rebuilt_within(&srv, &p, seen);
}

/// A state Redis lost, then replaced with a new one, comes back (a restore of an older
/// copy): a process that saw it replaced finds it again. It is lost as a whole, and rebuilt
/// from the views. Spent on (as it was, review helper-40: the process dropped its replies,
/// and the old pool was granted again), the quota of both was spent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_replaced_state_that_comes_back_is_rebuilt_as_a_loss() {
    let Some(srv) = server() else { return };
    let p = prefix("came-back");
    let (_ra, a) = unreserved(&srv, &p, "a").await;
    touch(&a).await;
    let old = srv.state_field(&p, "id");
    save(&srv, &p, "q");
    let _spent = go(a.try_acquire(100, Priority::P1).await.expect("100"));
    let answer = srv
        .cmd(&format!("DEL {}", state_key(&p, "q")))
        .unwrap_or_default();
    assert_eq!(answer.trim(), ":1", "{answer}");
    a.renew().await.expect("renew");
    let new = srv.state_field(&p, "id");
    assert_ne!(new, old, "a new state");
    let _spent = go(a.try_acquire(100, Priority::P1).await.expect("100 more"));
    let seen = a.snapshot().await.expect("a").pool;
    assert!(seen <= 800, "{seen}");
    restore(&srv, &p, "q");
    a.renew().await.expect("renew");
    let id = srv.state_field(&p, "id");
    assert!(id != old && id != new, "rebuilt: {id} ({old} came back)");
    assert_rebuilt_within(&srv, &p, seen);
}

/// The same when the process joined after the copy was taken: the restored leases have no
/// record of it, and other processes' calls moved the state's counter past its newest reply
/// again. Its lease's epoch is still past every epoch the restored state has issued (its
/// `seq`): only a state behind it could say so (review helper-43).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_a_rollback_is_found_by_a_lease_the_restored_state_never_issued() {
    let Some(srv) = server() else { return };
    let p = prefix("rolled-back-unissued");
    let (_rb, b) = unreserved(&srv, &p, "b").await;
    touch(&b).await;
    let id = srv.state_field(&p, "id");
    save(&srv, &p, "q");
    save(&srv, &p, "l");
    let (_ra, a) = unreserved(&srv, &p, "a").await;
    let _spent = go(a.try_acquire(100, Priority::P1).await.expect("100"));
    let seen = a.snapshot().await.expect("a").pool;
    assert!(seen <= 900, "{seen}");
    roll_back_then_busy(&srv, &p, &b).await;
    assert_eq!(srv.state_field(&p, "id"), id, "b saw nothing lost");
    a.renew().await.expect("renew");
    assert_ne!(srv.state_field(&p, "id"), id, "a new state");
    assert_rebuilt_within(&srv, &p, seen);
}

/// Restores the state and leases saved, as a rollback would, then `b` (idle since before
/// they were saved) calls until the state's counter is past where it was before.
async fn roll_back_then_busy(srv: &RedisServer, p: &str, b: &SharedQuota) {
    let lost_calls = srv.state_field(p, "ops");
    restore(srv, p, "q");
    restore(srv, p, "l");
    while srv.state_field(p, "ops") <= lost_calls + 2 {
        b.snapshot().await.expect("b");
    }
}
