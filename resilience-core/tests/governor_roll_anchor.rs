//! G1: where a window ends after a roll that kept out calls that may still arrive, and a
//! reading of no grant that opens a new window.

mod governor_support;

use governor_support::*;
use resilience_core::governor::{Decision, Observation, Priority, Request};

/// Grants to `a` (kept in flight) for `span`, waiting out paces; stops at a refusal.
fn grants_paced(
    rig: &Rig,
    a: resilience_core::governor::AgentId,
    span: std::time::Duration,
) -> usize {
    let end = rig.now() + span;
    let mut n = 0;
    while rig.now() < end && n < 200 {
        match rig.decide(a, &Request::read()) {
            Decision::Go(g) => {
                n += 1;
                drop(g);
            }
            Decision::Wait(w) => rig.advance_to(w.until.max(rig.now() + ms(1))),
            d => {
                eprintln!("stop at {:?}: {d:?}", rig.now());
                break;
            }
        }
    }
    n
}

/// A timeout just before the reset may arrive until 38 s: the roll keeps it out, and the
/// window would end a window after that (98 s) if no grant came. If it reached upstream in
/// the old window (it was sent at 8 s), upstream's next window starts at the first call
/// after the reset: the 40 calls at 50 s, so it ends at 110 s. Anchored at 98 s for good,
/// a fresh window came at 99 s with 60 left upstream; the first grant anchors it instead.
#[test]
fn g1_a_grant_after_the_roll_anchors_the_window_when_upstream_starts_it() {
    let rig = Rig::new(small(100, secs(60)));
    let a = rig.agent("data", Priority::P0);
    rig.call(a, &rig.ok(100, 100, 10)); // the window ends at 10 s
    rig.advance_to(secs(8));
    timeout(&rig, a); // may arrive until 38 s (or at 8 s, in the old window)
    rig.advance_to(secs(11));
    let _ = rig.gov.snapshot(rig.core); // the roll
    rig.advance_to(secs(50));
    for _ in 0..40 {
        rig.call(a, &Observation::new(200)); // answered without headers
    }
    rig.advance_to(secs(99));
    let snap = rig.gov.snapshot(rig.core).unwrap();
    let n = grants_paced(&rig, a, secs(10));
    eprintln!("at 99 s: estimate {}, reset_in {:?}; {n} granted by 109 s (upstream's window from 50 s to 110 s: 60 left)", snap.remaining, snap.reset_in);
    assert!(
        snap.remaining <= 60 && n <= 60,
        "estimate {} and {n} granted at 99-109 s; upstream has 60 left until 110 s",
        snap.remaining
    );
}

/// The same timeout, but a call at 12 s starts upstream's window (ends 72 s), and anchors
/// this one. The 40 calls at 80 s fall in upstream's next window (80 s to 140 s); a roll
/// at the fallback end (98 s) forgot them.
#[test]
fn g1_a_grant_after_the_roll_anchors_the_window_before_its_fallback_end() {
    let rig = Rig::new(small(100, secs(60)));
    let a = rig.agent("data", Priority::P0);
    rig.call(a, &rig.ok(100, 100, 10)); // the window ends at 10 s
    rig.advance_to(secs(8));
    timeout(&rig, a);
    rig.advance_to(secs(12));
    rig.call(a, &Observation::new(200)); // upstream: its window from 12 s, ends 72 s
    rig.advance_to(secs(80));
    for _ in 0..40 {
        rig.call(a, &Observation::new(200)); // upstream: a window from 80 s
    }
    rig.advance_to(secs(99));
    let snap = rig.gov.snapshot(rig.core).unwrap();
    let n = grants_paced(&rig, a, secs(10));
    eprintln!("at 99 s: estimate {}, reset_in {:?}; {n} granted by 109 s (upstream's window 80-140 s: 60 left)", snap.remaining, snap.reset_in);
    assert!(
        snap.remaining <= 60 && n <= 60,
        "estimate {} and {n} granted at 99-109 s; upstream has 60 left until 140 s",
        snap.remaining
    );
}

///: a reading of no grant that opens a new window (header reset a window later) is
/// taken as of "now" (the window's start is set to now before `unread_since` runs), so it
/// is cut by none of the calls answered without headers since upstream's reset.
/// Upstream rolled at ~59.0 s (header rounded up); a `/rate_limit` probe (free) sent at
/// 59.1 s, then 40 calls answered by 502s without headers, then the probe's reading of 100.
fn grantless_new_window(with_grant: bool) -> (u64, usize) {
    let rig = Rig::new(small(100, secs(60)));
    let a = rig.agent("data", Priority::P0);
    rig.call(a, &rig.ok(99, 100, 60)); // the window ends at 60 s
    rig.advance_to(ms(59_100));
    let g = if with_grant {
        Some(go(rig.decide(a, &Request::read())))
    } else {
        None
    };
    rig.advance_to(ms(59_200));
    for _ in 0..40 {
        rig.call(a, &Observation::new(502));
    }
    rig.advance_to(ms(59_800));
    match g {
        // upstream: its window from ~59 s: g (1), then the 40: 59 left
        Some(g) => {
            let _ = rig.gov.observe(g, &rig.ok(99, 100, 61));
        }
        // upstream: the probe is free; then the 40: 60 left
        None => {
            let _ = rig
                .gov
                .observe_without_grant(a, rig.core, &rig.ok(100, 100, 61));
        }
    }
    let est = rig.gov.snapshot(rig.core).unwrap().remaining;
    (est, grants_left(&rig, a))
}

#[test]
fn g1_a_new_windows_reading_of_a_grant_is_cut_by_calls_answered_unread_since() {
    let (est, n) = grantless_new_window(true);
    eprintln!("granted: estimate {est}, {n} granted; upstream 59");
    assert!(est <= 59 && n <= 59);
}

#[test]
fn g1_a_new_windows_reading_of_no_grant_is_cut_by_them_too() {
    let (est, n) = grantless_new_window(false);
    eprintln!("grantless: estimate {est}, {n} granted; upstream 60");
    assert!(
        est <= 60 && n <= 60,
        "estimate {est}, {n} granted with 60 left upstream"
    );
}
