//! Unit tests of [`Local`](super::Local): how replies, leases and offline spending move
//! one process's view of its share.

use super::*;
use crate::script::GO;
use resilience_core::clock::{Clock, ManualClock};

const TTL: Duration = Duration::from_secs(10);
const MARGIN: Duration = Duration::from_millis(250);
/// The one state these tests' replies come from (`local_state_tests.rs`: several).
const STATE: u64 = 77;

fn reply(ops: u64, epoch: u64, reserved: u64) -> Reply {
    Reply {
        status: GO,
        epoch,
        window: 7,
        reserved,
        ops,
        limit: 100,
        window_ms: 60_000,
        reset_at_ms: 1_000_000 + 30_000,
        now_ms: 1_000_000,
        lease_left_ms: 10_000,
        ledger: 40,
        state: STATE,
        ..Reply::default()
    }
}

fn at(clock: &ManualClock, conn: u64) -> Timing {
    Timing {
        sent_at: clock.now(),
        recv_at: clock.now(),
        conn,
        epoch: 5,
        state: STATE,
        seq: 0,
    }
}

/// A reply sent before the one that ended the lease (fenced, or refused for want of the
/// shared rules), applied after it, does not reopen the express lane.
#[test]
fn g7_a_reply_older_than_the_end_of_the_lease_does_not_reopen_the_lane() {
    for ended in [crate::script::FENCED, crate::script::PACED_ELSEWHERE] {
        let clock = ManualClock::new();
        let mut l = Local::default();
        l.apply(&reply(3, 5, 20), at(&clock, 1), 0, MARGIN);
        assert!(l.express_acquire(1, clock.now(), 8).is_some());
        let end = Reply {
            status: ended,
            ..reply(5, 0, 0)
        };
        l.apply(&end, at(&clock, 1), 0, MARGIN);
        l.apply(&reply(4, 5, 20), at(&clock, 1), 0, MARGIN);
        assert!(
            l.express_acquire(1, clock.now(), 8).is_none(),
            "status {ended}"
        );
    }
}

/// A reply sent under the old epoch and judged after the renewal that made the new
/// lease (a snapshot: no lease named) does not hide that renewal's reply, in either
/// order (review helper-33 #2).
#[test]
fn g7_a_reply_naming_no_lease_does_not_hide_the_new_one() {
    let stale = Reply {
        status: GO,
        ..reply(13, 0, 0)
    };
    for stale_first in [true, false] {
        let clock = ManualClock::new();
        let mut l = Local::default();
        l.apply(&reply(10, 5, 20), at(&clock, 1), 0, MARGIN);
        if stale_first {
            l.apply(&stale, at(&clock, 1), 0, MARGIN);
            l.apply(&reply(12, 6, 20), at(&clock, 1), 0, MARGIN);
        } else {
            l.apply(&reply(12, 6, 20), at(&clock, 1), 0, MARGIN);
            l.apply(&stale, at(&clock, 1), 0, MARGIN);
        }
        assert_eq!(
            (l.epoch, l.reserved()),
            (6, 20),
            "stale first: {stale_first}"
        );
    }
}

/// A refusal that ended the node's newer lease (made by a renewal racing it), applied
/// before that renewal's reply, leaves nothing to spend (review helper-33 #4), and later
/// calls name it, so the server settles what it held back for it.
#[test]
fn g7_a_refusal_ending_a_newer_lease_keeps_it_ended_and_names_it() {
    let clock = ManualClock::new();
    let mut l = Local::default();
    l.apply(&reply(10, 5, 20), at(&clock, 1), 0, MARGIN);
    let refusal = Reply {
        status: crate::script::PACED_ELSEWHERE,
        ..reply(14, 6, 0)
    };
    l.apply(&refusal, at(&clock, 1), 0, MARGIN);
    // The next calls name the ended lease (review helper-34).
    assert_eq!(l.view(0).epoch, 6);
    l.apply(&reply(12, 6, 20), at(&clock, 1), 0, MARGIN);
    assert_eq!(l.reserved(), 0);
    assert!(l.express_acquire(1, clock.now(), 8).is_none());
    assert!(l.offline_acquire(1, clock.now(), Duration::ZERO).is_err());
    assert_eq!(l.view(0).epoch, 6);
}

/// Only a current lease settles a report: a fenced call's goes out again (review
/// helper-33 #6).
#[test]
fn g7_a_fenced_calls_report_is_reported_again() {
    let clock = ManualClock::new();
    let mut l = Local::default();
    l.apply(&reply(10, 5, 20), at(&clock, 1), 0, MARGIN);
    l.offline_acquire(4, clock.now(), Duration::ZERO)
        .expect("offline");
    let report = l.take_report();
    assert_eq!(report, 4);
    let fenced = Reply {
        status: crate::script::FENCED,
        ..reply(11, 0, 0)
    };
    l.apply(&fenced, at(&clock, 1), report, MARGIN);
    assert_eq!(l.take_report(), 4);
}

/// A lost acquire sent under the old epoch may be judged after the renewal that made the
/// new lease, and paid from it: a reply on the same connection naming the new lease
/// does not clear it (review helper-33 #5).
#[test]
fn g7_a_lost_acquire_stays_counted_across_a_new_lease_on_the_same_connection() {
    let clock = ManualClock::new();
    let mut l = Local::default();
    l.apply(&reply(10, 5, 20), at(&clock, 1), 0, MARGIN);
    l.lost_acquire(4, 1);
    l.apply(&reply(11, 6, 20), at(&clock, 1), 0, MARGIN);
    assert_eq!(l.reserved(), 16);
    l.apply(&reply(12, 6, 20), at(&clock, 2), 0, MARGIN);
    assert_eq!(l.reserved(), 20);
}

/// A renewal racing a call of the ended lease: the server judged the renewal first (a
/// new lease, epoch 6) and the call after it (fenced). Whichever reply is applied first,
/// the process ends up on the new lease.
#[test]
fn g7_a_new_lease_survives_the_fenced_reply_of_the_old_one_in_either_order() {
    let fenced = Reply {
        status: crate::script::FENCED,
        ..reply(13, 0, 0)
    };
    let old = |clock: &ManualClock| Timing {
        epoch: 5,
        ..at(clock, 1)
    };
    for fenced_first in [true, false] {
        let clock = ManualClock::new();
        let mut l = Local::default();
        l.apply(&reply(10, 5, 20), old(&clock), 0, MARGIN);
        if fenced_first {
            l.apply(&fenced, old(&clock), 0, MARGIN);
            l.apply(&reply(12, 6, 20), old(&clock), 0, MARGIN);
        } else {
            l.apply(&reply(12, 6, 20), old(&clock), 0, MARGIN);
            l.apply(&fenced, old(&clock), 0, MARGIN);
        }
        assert_eq!(l.epoch, 6, "fenced first: {fenced_first}");
        assert_eq!(l.reserved(), 20, "fenced first: {fenced_first}");
        assert!(
            l.express_acquire(1, clock.now(), 8).is_some(),
            "fenced first: {fenced_first}"
        );
    }
}

#[test]
fn g7_express_lane_spends_within_its_allowance_and_reopens_once_the_report_is_settled() {
    let clock = ManualClock::new();
    let mut l = Local::default();
    l.apply(&reply(10, 5, 20), at(&clock, 1), 0, MARGIN);
    for _ in 0..4 {
        assert!(l.express_acquire(2, clock.now(), 8).is_some());
    }
    // 8 unsettled: the next one must ask Redis (and carry the report).
    assert_eq!(l.express_acquire(1, clock.now(), 8), None);
    assert_eq!(l.reserved(), 12);
    let report = l.take_report();
    assert_eq!(report, 8);
    assert_eq!(
        l.express_acquire(1, clock.now(), 8),
        None,
        "a report in flight is still unsettled"
    );
    // The server settled it: 20 - 8 left.
    l.apply(&reply(11, 5, 12), at(&clock, 1), report, MARGIN);
    assert!(l.express_acquire(1, clock.now(), 8).is_some());
    assert_eq!(l.reserved(), 11);
}

#[test]
fn g7_express_lane_shuts_on_a_heard_block_until_a_reply_sent_after_it() {
    let clock = ManualClock::new();
    let mut l = Local::default();
    l.apply(&reply(10, 5, 20), at(&clock, 1), 0, MARGIN);
    let before = at(&clock, 1); // a request already on its way
    clock.advance(Duration::from_millis(5));
    l.heard_block(clock.now());
    assert_eq!(l.express_acquire(1, clock.now(), 8), None);
    // Its reply may predate the block: the lane stays shut.
    l.apply(&reply(11, 5, 20), before, 0, MARGIN);
    assert_eq!(l.express_acquire(1, clock.now(), 8), None);
    // A fenced reply, however late it was sent, teaches nothing about the block.
    let mut fenced = reply(12, 5, 20);
    fenced.status = crate::script::FENCED;
    clock.advance(Duration::from_millis(1));
    l.apply(&fenced, at(&clock, 1), 0, MARGIN);
    // A join sent before the block, processed before it, answered after: a new lease and
    // no block in it. The lane must stay shut.
    l.apply(&reply(12, 6, 20), before, 0, MARGIN);
    assert_eq!(l.express_acquire(1, clock.now(), 8), None);
    clock.advance(Duration::from_millis(1));
    let mut blocked = reply(13, 6, 20);
    blocked.block_until_ms = blocked.now_ms + 3_000;
    l.apply(&blocked, at(&clock, 1), 0, MARGIN);
    // Now the block is known: still shut, until it ends.
    assert_eq!(l.express_acquire(1, clock.now(), 8), None);
    clock.advance(Duration::from_secs(3));
    assert!(l.express_acquire(1, clock.now(), 8).is_some());
}

#[test]
fn g7_express_lane_needs_an_anchored_window_and_a_lease() {
    let clock = ManualClock::new();
    let mut l = Local::default();
    assert_eq!(l.express_acquire(1, clock.now(), 8), None, "no lease yet");
    let mut unanchored = reply(10, 5, 20);
    unanchored.reset_at_ms = 0;
    l.apply(&unanchored, at(&clock, 1), 0, MARGIN);
    assert_eq!(l.express_acquire(1, clock.now(), 8), None);
    let mut no_grant_yet = reply(11, 5, 20);
    no_grant_yet.ledger = 0; // would read as "no grant" in the script's reconciliation
    l.apply(&no_grant_yet, at(&clock, 1), 0, MARGIN);
    assert_eq!(l.express_acquire(1, clock.now(), 8), None);
    l.apply(&reply(12, 5, 20), at(&clock, 1), 0, MARGIN);
    assert!(l.express_acquire(1, clock.now(), 8).is_some());
    clock.advance(TTL);
    assert_eq!(l.express_acquire(1, clock.now(), 8), None, "lease ran out");
}

#[test]
fn g7_express_lane_is_shut_from_leaving_until_a_new_lease() {
    let clock = ManualClock::new();
    let mut l = Local::default();
    l.apply(&reply(10, 5, 20), at(&clock, 1), 0, MARGIN);
    l.start_leaving();
    // The leave is in flight: the server will return the whole reservation, so nothing
    // may be spent that its report does not carry.
    assert_eq!(l.express_acquire(1, clock.now(), 8), None);
    l.apply(&reply(11, 5, 20), at(&clock, 1), 0, MARGIN);
    assert_eq!(l.express_acquire(1, clock.now(), 8), None);
    l.apply(&reply(12, 6, 20), at(&clock, 1), 0, MARGIN); // rejoined: a new lease
    assert!(l.express_acquire(1, clock.now(), 8).is_some());
}

#[test]
fn g7_a_leave_whose_reply_was_lost_leaves_nothing_to_spend_offline() {
    let clock = ManualClock::new();
    let mut l = Local::default();
    l.apply(&reply(10, 5, 20), at(&clock, 1), 0, MARGIN);
    assert!(l.offline_acquire(1, clock.now(), Duration::ZERO).is_ok());
    // The leave went out and Redis was lost before its reply: the server may already
    // have put the whole reservation back in the pool.
    l.start_leaving();
    assert_eq!(
        l.offline_acquire(1, clock.now(), Duration::ZERO),
        Err(OfflineRefusal::NoShare)
    );
    l.apply(&reply(12, 6, 20), at(&clock, 1), 0, MARGIN); // rejoined: a new lease
    assert!(l.offline_acquire(1, clock.now(), Duration::ZERO).is_ok());
}

#[test]
fn g7_a_leave_settled_without_ending_the_lease_gives_it_back() {
    let clock = ManualClock::new();
    let mut l = Local::default();
    l.apply(&reply(10, 5, 20), at(&clock, 1), 0, MARGIN);
    l.start_leaving();
    l.leave_sent(1);
    // A reply on the leave's connection may predate it: still leaving.
    l.apply(&reply(11, 5, 20), at(&clock, 1), 0, MARGIN);
    assert!(l.offline_acquire(1, clock.now(), Duration::ZERO).is_err());
    // That connection is closed; a newer one still names the lease: the leave never ran.
    l.apply(&reply(12, 5, 20), at(&clock, 2), 0, MARGIN);
    assert!(l.offline_acquire(1, clock.now(), Duration::ZERO).is_ok());
    // A leave that could not be sent at all gives nothing up either.
    l.start_leaving();
    l.leave_unsent();
    assert!(l.offline_acquire(1, clock.now(), Duration::ZERO).is_ok());
}

#[test]
fn g7_offline_share_stops_at_the_lease_deadline_measured_from_sending() {
    let clock = ManualClock::new();
    let mut l = Local::default();
    let sent = at(&clock, 1);
    clock.advance(Duration::from_secs(1)); // a slow reply: the deadline still counts from sending
    l.apply(&reply(10, 5, 3), sent, 0, MARGIN);
    assert_eq!(l.offline_until(), TTL - MARGIN);
    assert!(l.offline_acquire(2, clock.now(), Duration::ZERO).is_ok());
    assert_eq!(l.reserved(), 1);
    assert_eq!(
        l.offline_acquire(2, clock.now(), Duration::ZERO),
        Err(OfflineRefusal::NoShare)
    );
    clock.advance_to(TTL - MARGIN);
    assert_eq!(
        l.offline_acquire(1, clock.now(), Duration::ZERO),
        Err(OfflineRefusal::NoShare)
    );
}

#[test]
fn g7_offline_share_ends_with_its_window() {
    let clock = ManualClock::new();
    let mut l = Local::default();
    let mut r = reply(10, 5, 50);
    r.reset_at_ms = r.now_ms + 2_000; // the window resets in 2 s, before the lease
    l.apply(&r, at(&clock, 1), 0, MARGIN);
    clock.advance(Duration::from_millis(1_999));
    assert!(l.offline_acquire(1, clock.now(), Duration::ZERO).is_ok());
    clock.advance(Duration::from_millis(1));
    assert_eq!(
        l.offline_acquire(1, clock.now(), Duration::ZERO),
        Err(OfflineRefusal::NoShare)
    );
}

#[test]
fn g7_stale_replies_never_raise_the_reservation() {
    let clock = ManualClock::new();
    let mut l = Local::default();
    l.apply(&reply(12, 5, 4), at(&clock, 1), 0, MARGIN);
    // An older reply (lower ops) arriving late carries a larger reservation.
    l.apply(&reply(11, 5, 9), at(&clock, 1), 0, MARGIN);
    assert_eq!(l.reserved(), 4);
}

#[test]
fn g7_a_lost_acquire_counts_as_paid_from_the_reservation_until_a_newer_connection_answers() {
    let clock = ManualClock::new();
    let mut l = Local::default();
    l.apply(&reply(10, 5, 6), at(&clock, 1), 0, MARGIN);
    l.lost_acquire(4, 1);
    assert_eq!(l.reserved(), 2);
    // A reply on the same connection may predate the lost call: still uncertain.
    l.apply(&reply(11, 5, 6), at(&clock, 1), 0, MARGIN);
    assert_eq!(l.reserved(), 2);
    l.apply(&reply(12, 5, 6), at(&clock, 2), 0, MARGIN);
    assert_eq!(l.reserved(), 6);
}

#[test]
fn g7_offline_spending_is_netted_until_reported_and_released_only_before() {
    let clock = ManualClock::new();
    let mut l = Local::default();
    l.apply(&reply(10, 5, 10), at(&clock, 1), 0, MARGIN);
    let g1 = l
        .offline_acquire(3, clock.now(), Duration::ZERO)
        .expect("share");
    let _g2 = l
        .offline_acquire(2, clock.now(), Duration::ZERO)
        .expect("share");
    l.offline_release(2, g1, 7);
    assert_eq!(l.offline_unreported, 3);
    let report = l.take_report();
    assert_eq!(report, 3);
    // A reply that did not carry the report (the server still counts 10) stays netted.
    l.apply(&reply(11, 5, 10), at(&clock, 1), 0, MARGIN);
    assert_eq!(l.reserved(), 7);
    // The renewal that reported 3: the server now says 7, nothing left unreported.
    l.apply(&reply(12, 5, 7), at(&clock, 1), report, MARGIN);
    assert_eq!((l.reserved(), l.offline_unreported), (7, 0));
    // Returning a grant whose spending was reported must not credit it again.
    l.offline_release(3, g1, 7);
    assert_eq!(l.reserved(), 7);
}

#[test]
fn g7_a_failed_report_is_reported_again_and_stays_netted() {
    let clock = ManualClock::new();
    let mut l = Local::default();
    l.apply(&reply(10, 5, 10), at(&clock, 1), 0, MARGIN);
    let g = l
        .offline_acquire(4, clock.now(), Duration::ZERO)
        .expect("share");
    let x = l.take_report();
    assert_eq!((x, l.reserved()), (4, 6));
    l.unreport(x);
    assert_eq!((l.offline_unreported, l.reserved()), (4, 6));
    // Reported once already: returning it locally could credit it twice.
    l.offline_release(4, g, 7);
    assert_eq!(l.reserved(), 6);
    assert_eq!(l.view(0).local_reserved, 6);
}

#[test]
fn g7_fenced_or_new_epoch_drops_the_old_reservation() {
    let clock = ManualClock::new();
    let mut l = Local::default();
    l.apply(&reply(10, 5, 10), at(&clock, 1), 0, MARGIN);
    let fenced = Reply {
        status: crate::script::FENCED,
        state: STATE,
        ..Reply::default()
    };
    l.apply(&fenced, at(&clock, 1), 0, MARGIN);
    assert_eq!(l.reserved(), 0);
    assert_eq!(
        l.offline_acquire(1, clock.now(), Duration::ZERO),
        Err(OfflineRefusal::NoShare)
    );
    l.apply(&reply(11, 6, 2), at(&clock, 1), 0, MARGIN);
    assert_eq!((l.epoch, l.reserved()), (6, 2));
    assert!(l.offline_acquire(1, clock.now(), Duration::ZERO).is_ok());
}

#[test]
fn g7_offline_block_counts_from_receipt() {
    let clock = ManualClock::new();
    let mut l = Local::default();
    let sent = at(&clock, 1);
    clock.advance(Duration::from_millis(300));
    let mut r = reply(10, 5, 10);
    r.block_until_ms = r.now_ms + 1_000;
    l.apply(
        &r,
        Timing {
            recv_at: clock.now(),
            ..sent
        },
        0,
        MARGIN,
    );
    assert_eq!(
        l.offline_acquire(1, clock.now(), Duration::ZERO),
        Err(OfflineRefusal::Blocked(Duration::from_secs(1)))
    );
    clock.advance(Duration::from_secs(1));
    assert!(l.offline_acquire(1, clock.now(), Duration::ZERO).is_ok());
}

/// An acquire in flight may yet be paid from the reservation (and its reply be used after
/// the link was given up for lost): offline spending leaves room for it until it is
/// answered. The express lane need not (the script never pays an acquire from the last
/// `keep`, all the lane spends). Counted only once answered (as it was, review helper-45),
/// the reservation was spent twice.
#[test]
fn g7_an_acquire_in_flight_is_kept_out_of_the_offline_share_until_answered() {
    let clock = ManualClock::new();
    let mut l = Local::default();
    l.apply(&reply(10, 5, 20), at(&clock, 1), 0, MARGIN);
    l.ask_sent(5);
    assert_eq!(l.reserved(), 15);
    assert_eq!(
        l.offline_acquire(16, clock.now(), Duration::ZERO),
        Err(OfflineRefusal::NoShare)
    );
    assert!(l.express_acquire(16, clock.now(), 20).is_some());
    l.ask_answered(5);
    assert_eq!(l.reserved(), 4);
}

/// Judged in this order: the renewal that made lease 6 (ops 12, 20 reserved), an acquire
/// paid 5 from it (ops 13, 15 left), a snapshot sent under 5 (ops 14, no lease); applied
/// snapshot first. The acquire's reply is the newest word on lease 6's reservation though
/// older than the snapshot's. Dropped (as it was, review helper-45), the process counted
/// 20 its own where the server held 15, and spent them offline.
#[test]
fn g7_a_later_reply_naming_the_new_lease_is_not_hidden_by_an_older_one() {
    let clock = ManualClock::new();
    let mut l = Local::default();
    l.apply(&reply(10, 5, 20), at(&clock, 1), 0, MARGIN);
    l.apply(&reply(14, 0, 0), at(&clock, 1), 0, MARGIN);
    l.apply(&reply(12, 6, 20), at(&clock, 1), 0, MARGIN);
    l.apply(&reply(13, 6, 15), at(&clock, 1), 0, MARGIN);
    assert_eq!((l.epoch, l.reserved()), (6, 15));
}

/// The same with the renewal applied first: the snapshot, sent under the old epoch, says
/// nothing of lease 6, and the acquire's reply (older than it) still sets its reservation.
#[test]
fn g7_a_reply_about_the_lease_older_than_a_snapshot_still_sets_its_reservation() {
    let clock = ManualClock::new();
    let mut l = Local::default();
    l.apply(&reply(10, 5, 20), at(&clock, 1), 0, MARGIN);
    l.apply(&reply(12, 6, 20), at(&clock, 1), 0, MARGIN);
    l.apply(&reply(14, 0, 0), at(&clock, 1), 0, MARGIN);
    l.apply(&reply(13, 6, 15), at(&clock, 1), 0, MARGIN);
    assert_eq!((l.epoch, l.reserved()), (6, 15));
}

/// A reservation is void once its window has ended (the server zeroed it at the roll). Here
/// the lease's reservation came in a reply judged before an early roll, and a reply judged
/// after it named no lease (a snapshot sent under the lease before): whichever is applied
/// first, the process has heard of the new window and holds nothing of the old one. Kept
/// (as it was, review helper-46), its calls said it had heard of the roll (their counter),
/// so the server returned the share it held for that reservation, while it could still
/// spend the reservation offline: the quota spent twice.
#[test]
fn g7_a_reservation_of_a_window_that_has_ended_is_void() {
    let post_roll = Reply {
        window: 8,
        ..reply(13, 0, 0)
    };
    for stale_first in [true, false] {
        let clock = ManualClock::new();
        let mut l = Local::default();
        l.apply(&reply(10, 5, 20), at(&clock, 1), 0, MARGIN);
        let (first, second) = if stale_first {
            (&post_roll, &reply(12, 6, 20))
        } else {
            (&reply(12, 6, 20), &post_roll)
        };
        l.apply(first, at(&clock, 1), 0, MARGIN);
        l.apply(second, at(&clock, 1), 0, MARGIN);
        assert_eq!((l.window, l.view(0).ops, l.view(0).epoch), (8, 13, 6));
        assert_eq!(l.reserved(), 0, "stale first: {stale_first}");
        assert!(l.offline_acquire(20, clock.now(), Duration::ZERO).is_err());
        // The next reply about the lease, of the new window, is spendable again.
        l.apply(
            &Reply {
                window: 8,
                ..reply(14, 6, 9)
            },
            at(&clock, 1),
            0,
            MARGIN,
        );
        assert_eq!(l.reserved(), 9, "stale first: {stale_first}");
    }
}

/// A process leaving tells a rebuild it holds nothing: its leave may have retired the lease
/// and put the reservation back in the pool (the reply lost), and adopted again, it was
/// counted twice (review helper-50).
#[test]
fn g7_a_leaving_process_reports_no_reservation_to_keep() {
    let clock = ManualClock::new();
    let mut l = Local::default();
    l.apply(&reply(10, 5, 20), at(&clock, 1), 0, MARGIN);
    assert_eq!(l.view(0).local_reserved, 20);
    l.start_leaving();
    assert_eq!(l.view(0).local_reserved, 0);
}

// The window's end while cut off: where offline spending stops.
#[path = "local_window_tests.rs"]
mod window;
