//! Unit tests of [`Local`](super::super::Local) at a window's end: offline spending stops a
//! call bound before the end it was told, or an earlier one it heard while cut off.

use super::*;

/// A reply of lease epoch 5 with 20 reserved and two minutes of lease left.
fn long_lease(ops: u64) -> Reply {
    Reply {
        lease_left_ms: 120_000,
        ..reply(ops, 5, 20)
    }
}

/// A process told (at time 0) that the window ends in 30 s.
fn told_30_s() -> (ManualClock, Local) {
    let clock = ManualClock::new();
    let mut l = Local::default();
    l.apply(&long_lease(10), at(&clock, 1), 0, MARGIN);
    (clock, l)
}

#[track_caller]
fn assert_refused(l: &mut Local, clock: &ManualClock, bound: Duration) {
    assert_eq!(
        l.offline_acquire(1, clock.now(), bound),
        Err(OfflineRefusal::NoShare)
    );
}

/// A call sent offline in the window's last call bound may reach upstream after the reset,
/// and count in the next window, which the server, not hearing of it, gives out whole (29 of
/// 20 with it allowed): offline spending stops a call bound before the window ends.
#[test]
fn g7_offline_share_stops_a_call_bound_before_the_window_ends() {
    let (clock, mut l) = told_30_s();
    let bound = Duration::from_secs(5);
    clock.advance(Duration::from_secs(24));
    assert!(l.offline_acquire(1, clock.now(), bound).is_ok());
    clock.advance(Duration::from_secs(1));
    assert_refused(&mut l, &clock, bound);
}

#[test]
fn g7_offline_share_stops_a_call_bound_before_a_reset_read_offline() {
    let (clock, mut l) = told_30_s();
    let bound = Duration::from_secs(5);
    // A response read offline says it ends in 12 s (a header moved it earlier).
    l.hear_reset(
        clock.now() + Duration::from_secs(12),
        HeardEnd::At(clock.now() + Duration::from_secs(13)),
    );
    clock.advance(Duration::from_secs(6));
    assert!(l.offline_acquire(1, clock.now(), bound).is_ok());
    clock.advance(Duration::from_secs(1));
    assert_refused(&mut l, &clock, bound);
    // A later one (the next window's) does not move it back.
    l.hear_reset(
        clock.now() + Duration::from_secs(60),
        HeardEnd::At(clock.now() + Duration::from_secs(61)),
    );
    assert_refused(&mut l, &clock, bound);
}

/// A reply to a call sent before a reset was heard offline (late, after the link was given
/// up) tells the old end: it does not put it back.
#[test]
fn g7_a_late_reply_does_not_undo_a_reset_heard_offline() {
    let (clock, mut l) = told_30_s();
    let sent_before = at(&clock, 1);
    clock.advance(Duration::from_secs(1));
    l.hear_reset(
        clock.now() + Duration::from_secs(12),
        HeardEnd::At(clock.now() + Duration::from_secs(13)),
    ); // ends at 13 s
    let slow = long_lease(11);
    l.apply(&slow, sent_before, 0, MARGIN);
    clock.advance(Duration::from_secs(8)); // 9 s: within a call bound (5 s) of 13 s
    assert_refused(&mut l, &clock, Duration::from_secs(5));
}

/// A reset heard offline is in the view a rebuild after a data loss takes, and no reply
/// sets a later end until it passes (the server may never have heard it).
#[test]
fn g7_a_reset_heard_offline_stands_in_the_view_and_past_a_rejoin() {
    let (clock, mut l) = told_30_s(); // told: ends at server 1_030_000
                                      // Read as ending in 13 s (taken a second early locally): on the server's clock, as
                                      // read (a rebuild's window must not end before upstream's).
    l.hear_reset(
        clock.now() + Duration::from_secs(12),
        HeardEnd::At(clock.now() + Duration::from_secs(13)),
    );
    assert_eq!(l.view(0).reset_at_ms, 1_013_000);
    clock.advance(Duration::from_secs(1));
    let rejoin = long_lease(12);
    l.apply(&rejoin, at(&clock, 1), 0, MARGIN);
    clock.advance(Duration::from_secs(8)); // cut off again at 9 s
    assert_refused(&mut l, &clock, Duration::from_secs(5));
    // Once it has passed, replies set the end again.
    clock.advance(Duration::from_secs(10));
    let later = long_lease(13);
    l.apply(&later, at(&clock, 1), 0, MARGIN);
    assert_eq!(l.view(0).reset_at_ms, later.reset_at_ms);
}
