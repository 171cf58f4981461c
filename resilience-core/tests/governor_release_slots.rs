//! G6 release times at their edges: zero-width priority windows, retry slots exactly one
//! spacing apart, right after the clock's origin, and after the remembered slots overflow.

mod governor_support;

use governor_support::*;
use resilience_core::governor::{Priority, Request, ResourceConfig};
use std::time::Duration;

/// Zero-width release windows: each priority comes back at a fixed offset after a block.
fn fixed_offsets(offsets: [Duration; 3], spacing: Duration) -> ResourceConfig {
    let mut cfg = light_only();
    cfg.retry_windows.windows = offsets.map(|o| (o, o));
    cfg.retry_windows.release_spacing = spacing;
    cfg
}

/// Where `retry_slot` puts `a` on the clock (it answers relative to now).
fn slot_at(rig: &Rig, a: resilience_core::governor::AgentId) -> Duration {
    rig.now() + rig.gov.retry_slot(a, rig.core).expect("blocked")
}

/// `[start, end)` with `start == end` is a valid window: no jitter, the release is at its
/// start (a draw from an empty range would panic).
#[test]
fn g6_a_zero_width_release_window_releases_exactly_at_its_offset() {
    let rig = Rig::new(fixed_offsets([ms(0), secs(1), secs(2)], ms(50)));
    let p0 = rig.agent("picard", Priority::P0);
    let p1 = rig.agent("data", Priority::P1);
    let p2 = rig.agent("ralph", Priority::P2);
    rig.gov.note_retry_after(rig.core, secs(10));
    assert_eq!(wait(rig.decide(p0, &Request::read())).until, secs(10));
    assert_eq!(wait(rig.decide(p1, &Request::read())).until, secs(11));
    assert_eq!(wait(rig.decide(p2, &Request::read())).until, secs(12));
}

/// Two retry slots exactly `release_spacing` apart are spaced enough: the earlier draw (a
/// higher priority's) keeps its time instead of being pushed behind the later one.
#[test]
fn g6_a_retry_slot_exactly_one_spacing_before_another_keeps_its_time() {
    let rig = Rig::new(fixed_offsets([ms(0), ms(50), ms(100)], ms(50)));
    let p0 = rig.agent("picard", Priority::P0);
    let p1 = rig.agent("data", Priority::P1);
    rig.gov.note_retry_after(rig.core, secs(10));
    assert_eq!(slot_at(&rig, p1), secs(10) + ms(50));
    assert_eq!(slot_at(&rig, p0), secs(10));
}

/// Before any slot overflowed there is no tail to keep clear of, even right after the
/// clock's origin (a tail of 0 must not read as a slot handed out at 0).
#[test]
fn g6_a_retry_slot_right_after_the_clock_origin_is_not_moved() {
    let rig = Rig::new(fixed_offsets([ms(0); 3], ms(50)));
    let a = rig.agent("data", Priority::P1);
    rig.gov.note_retry_after(rig.core, ms(10));
    assert_eq!(slot_at(&rig, a), ms(10));
}

/// Past the 256 slots remembered, slots go after the last one handed out (the tail). Once
/// some remembered ones are past, a new slot is found among the rest again, and it must
/// still keep clear of the tail: two callers never get one instant.
#[test]
fn g6_retry_slots_keep_clear_of_the_overflow_tail_once_remembered_ones_pass() {
    let rig = Rig::new(fixed_offsets([ms(0); 3], ms(1)));
    let a = rig.agent("data", Priority::P1);
    rig.gov.note_retry_after(rig.core, secs(10));
    let slots: Vec<Duration> = (0..300).map(|_| slot_at(&rig, a)).collect();
    let expected: Vec<Duration> = (0..300).map(|i| secs(10) + ms(i)).collect();
    assert_eq!(slots, expected);
    // Ten remembered slots are past; a new block ends at the tail's instant.
    rig.advance_to(secs(10) + ms(10));
    rig.gov.note_retry_after(rig.core, ms(289));
    assert_eq!(
        slot_at(&rig, a),
        secs(10) + ms(300),
        "shares the tail's instant"
    );
}

/// A remembered slot stops counting once its spacing has passed: with 256 remembered and
/// the first of them exactly one spacing old, the store is not full, and a slot in a gap
/// between the others is used rather than one after all of them.
#[test]
fn g6_a_retry_slot_one_spacing_old_no_longer_fills_the_remembered_ones() {
    let rig = Rig::new(fixed_offsets([ms(0), ms(0), ms(200)], ms(1)));
    let p0 = rig.agent("picard", Priority::P0);
    let p2 = rig.agent("ralph", Priority::P2);
    rig.gov.note_retry_after(rig.core, secs(10));
    for i in 0..128 {
        assert_eq!(slot_at(&rig, p0), secs(10) + ms(i));
        assert_eq!(slot_at(&rig, p2), secs(10) + ms(200 + i));
    }
    rig.advance_to(secs(10) + ms(1));
    // A new block whose release falls in the gap between the two runs of slots.
    rig.gov.note_retry_after(rig.core, ms(149));
    assert_eq!(slot_at(&rig, p0), secs(10) + ms(150));
}
