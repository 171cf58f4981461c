//! G7, crate-internal: a process's view across a state Redis lost. The new state may count
//! its epochs and calls from lower numbers than the lost one (its host's clock is behind):
//! replies are ordered by state first, then by their counter.

use crate::local::{Local, OfflineRefusal, Timing, LOST_LEASE};
use crate::script::{Reply, FENCED, GO};
use std::time::Duration;

const MARGIN: Duration = Duration::from_millis(250);
/// The lost state, and the one that replaced it (born on a host whose clock is behind: its
/// counters are far below the lost state's).
const A: u64 = 5_000;
const B: u64 = 4_000;

fn reply(state: u64, ops: u64, epoch: u64, reserved: u64, pool: u64) -> Reply {
    Reply {
        status: GO,
        state,
        epoch,
        window: state,
        reserved,
        ops,
        pool,
        limit: 100,
        window_ms: 60_000,
        reset_at_ms: 1_030_000,
        now_ms: 1_000_000,
        lease_left_ms: 10_000,
        ledger: 40,
        ..Reply::default()
    }
}

/// Call number `seq`, sent under lease `epoch` of `state`.
fn call(seq: u64, state: u64, epoch: u64) -> Timing {
    Timing {
        sent_at: Duration::from_secs(1),
        recv_at: Duration::from_secs(1),
        conn: 1,
        epoch,
        state,
        seq,
    }
}

/// A process holding a lease of A (epoch 9 000, 20 reserved), its newest reply call 1's.
fn holding_a_lease_of_a() -> Local {
    let mut l = Local::default();
    l.apply(&reply(A, 10_000, 9_000, 20, 50), call(1, 0, 0), 0, MARGIN);
    assert_eq!((l.state, l.epoch, l.reserved()), (A, 9_000, 20));
    l
}

#[test]
fn g7_a_new_state_counting_from_lower_numbers_is_applied() {
    let mut l = holding_a_lease_of_a();
    l.apply(&reply(B, 100, 90, 5, 30), call(2, A, 9_000), 0, MARGIN);
    assert_eq!((l.state, l.epoch, l.ops, l.pool), (B, 90, 100, 30));
    assert_eq!(
        l.reserved(),
        5,
        "the new state's reservation is the one to spend"
    );
}

#[test]
fn g7_a_late_reply_of_the_replaced_state_is_ignored() {
    let mut l = holding_a_lease_of_a();
    l.apply(&reply(B, 100, 90, 5, 30), call(3, A, 9_000), 0, MARGIN);
    // Call 2 ran on A before it was lost; its reply comes after call 3's.
    l.apply(
        &reply(A, 20_000, 9_000, 20, 99),
        call(2, A, 9_000),
        0,
        MARGIN,
    );
    assert_eq!((l.state, l.epoch, l.pool, l.reserved()), (B, 90, 30, 5));
    // B's own replies are still ordered by its counter.
    l.apply(&reply(B, 101, 90, 4, 29), call(4, B, 90), 0, MARGIN);
    l.apply(&reply(B, 99, 90, 9, 31), call(1, B, 90), 0, MARGIN);
    assert_eq!((l.pool, l.reserved()), (29, 4));
}

/// Calls are numbered before they are written, and a connection may outlive a data loss:
/// a reply of the lost state may come from a call numbered after the one that brought the
/// new state. Taken (review helper-38), it switched the process back to a lease of a state
/// that no longer exists, its reservation included.
#[test]
fn g7_a_state_seen_replaced_never_comes_back_whatever_the_calls_number() {
    let mut l = holding_a_lease_of_a();
    l.apply(&reply(B, 100, 90, 5, 30), call(2, A, 9_000), 0, MARGIN);
    l.apply(
        &reply(A, 20_000, 9_000, 50, 99),
        call(3, A, 9_000),
        0,
        MARGIN,
    );
    assert_eq!((l.state, l.epoch, l.reserved()), (B, 90, 5));
}

/// A report settled by a state that was lost is not reported again to the new one: it was
/// spent from the lost lease's reservation, outside every pool the rejoin rebuilds from.
/// Reported again (as it was for a while), the new state charged it to the new lease's
/// reservation, and that quota was lost (review helper-40).
#[test]
fn g7_the_report_of_a_dropped_reply_of_a_lost_state_is_not_reported_again() {
    let mut l = holding_a_lease_of_a();
    // Call 2 reports 3 spent offline; call 3's reply brings the new state first.
    l.offline_unreported = 3;
    assert_eq!(l.take_report(), 3);
    l.apply(&reply(B, 100, 90, 5, 30), call(3, A, 9_000), 0, MARGIN);
    l.apply(
        &reply(A, 20_000, 9_000, 20, 99),
        call(2, A, 9_000),
        3,
        MARGIN,
    );
    assert_eq!(l.take_report(), 0);
    assert_eq!(l.reserved(), 5, "nothing of it is still being reported");
}

#[test]
fn g7_a_lease_of_the_lost_state_is_named_as_lost_until_a_new_one() {
    let mut l = holding_a_lease_of_a();
    // A reply of the new state that names no lease (a snapshot), made whole by a process
    // that knew nothing of A (its own reset, one member).
    let snapshot = Reply {
        reset_at_ms: 1_060_000,
        members: 1,
        ..reply(B, 100, 0, 0, 100)
    };
    let known = (l.view(0).reset_at_ms, l.view(0).pool, l.view(0).members);
    l.apply(&snapshot, call(2, A, 9_000), 0, MARGIN);
    let v = l.view(0);
    assert_eq!((v.state, v.epoch), (B, LOST_LEASE), "{v:?}");
    assert_eq!(
        (v.reset_at_ms, v.pool, v.members),
        known,
        "the rejoin rebuilds from what was known of A"
    );
    assert_eq!(
        l.reserved(),
        0,
        "nothing of the lost lease is left to spend"
    );
    assert_eq!(
        l.offline_acquire(1, Duration::from_secs(1), Duration::ZERO),
        Err(OfflineRefusal::NoShare)
    );
    l.apply(&reply(B, 101, 90, 5, 29), call(3, B, LOST_LEASE), 0, MARGIN);
    assert_eq!((l.view(0).epoch, l.reserved(), l.view(0).pool), (90, 5, 29));
}

#[test]
fn g7_a_fence_from_the_new_state_never_takes_the_lost_states_epoch() {
    let mut l = holding_a_lease_of_a();
    // A release of a grant of A, refused by B: it names A's lease, which means nothing there.
    let fenced = Reply {
        status: FENCED,
        ..reply(B, 100, 0, 0, 30)
    };
    l.apply(&fenced, call(2, A, 9_000), 0, MARGIN);
    assert_eq!((l.state, l.epoch), (B, LOST_LEASE));
    // B's lease, with an epoch far below A's, is not taken for one that ended.
    l.apply(&reply(B, 101, 90, 5, 29), call(3, B, LOST_LEASE), 0, MARGIN);
    assert_eq!((l.epoch, l.reserved()), (90, 5));
}
