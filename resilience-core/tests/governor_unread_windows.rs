//! G1: calls settled unread across windows: timeouts with different call bounds, a window
//! whose roll keeps out calls that may still arrive, and readings that do not count calls
//! answered without headers after their grant.

mod governor_support;

use governor_support::*;
use resilience_core::governor::{Decision, Observation, Priority, Request};

/// 40 timeouts at 1 s (bound 31 s: all arrived long before), one timeout at 50 s (may
/// arrive until 80 s; with `late` false, a call answered without headers instead: the
/// control), then 32 headerless calls (once, a summed fold of the oldest unread calls took
/// the late one's bound for all of them). A reading at 52 s of a grant made then: upstream
/// 100 - 1 - 40 - 1 - 32 - 1 = 25 (the late timeout counted or not: >= 24 genuinely left).
fn timeouts_then_a_reading(late: bool) -> (u64, usize, u64, usize) {
    let rig = Rig::new(small(100, secs(60)));
    let a = rig.agent("data", Priority::P0);
    rig.call(a, &rig.ok(99, 100, 60)); // the window ends at 60 s
    rig.advance(secs(1));
    for _ in 0..40 {
        timeout(&rig, a);
    }
    rig.advance(secs(49)); // 50 s
    if late {
        timeout(&rig, a);
    } else {
        rig.call(a, &Observation::new(200));
    }
    for _ in 0..32 {
        rig.call(a, &Observation::new(200));
    }
    rig.advance(secs(2)); // 52 s
    let g = go(rig.decide(a, &Request::read()));
    // upstream: 1 + 40 + 1 + 32 + 1 = 75 counted
    let _ = rig.gov.observe(g, &rig.ok(25, 100, 8));
    let est = rig.gov.snapshot(rig.core).unwrap().remaining;
    let left = if est > 0 { 1 } else { 0 }; // not granted out: grants left unobserved stay in flight
    rig.advance(secs(9)); // 61 s: a new window; only the 50 s timeout may still arrive
    let g2 = go(rig.decide(a, &Request::read()));
    let est2 = rig.gov.snapshot(rig.core).unwrap().remaining; // with g2 in flight
                                                              // upstream's first reading of the new window: the 50 s timeout arrived, and g2
    let _ = rig
        .gov
        .observe(g2, &rig.ok(if late { 98 } else { 99 }, 100, 60));
    let est3 = rig.gov.snapshot(rig.core).unwrap().remaining;
    rig.advance(secs(20)); // 81 s: the 50 s timeout may no longer arrive
    let g3 = go(rig.decide(a, &Request::read()));
    let _ = rig
        .gov
        .observe(g3, &rig.ok(if late { 97 } else { 98 }, 100, 40));
    let est4 = rig.gov.snapshot(rig.core).unwrap().remaining;
    eprintln!("new window: est {est2} (g2 in flight), after first reading {est3}, after reading at 81 s {est4}");
    (est, left, est2, est4 as usize)
}

#[test]
fn g1_old_timeouts_past_their_bound_count_once() {
    let (est, left, est2, left2) = timeouts_then_a_reading(false);
    eprintln!("control: reading 25 -> estimate {est}, {left} grants; new window {left2} grants (est after {est2})");
    assert!(est >= 24 && left >= 1);
    assert!(est2 >= 98 && left2 >= 97);
}

#[test]
fn g1_a_late_timeout_does_not_make_older_timeouts_count_again() {
    let (est, left, est2, left2) = timeouts_then_a_reading(true);
    eprintln!("late timeout: reading 25 -> estimate {est}, {left} grants; new window {left2} grants (est after {est2})");
    assert!(
        est >= 24 && left >= 1,
        "reading 25 (at most the 50 s timeout still to come): estimate {est}, {left} grants left"
    );
    assert!(
        est2 >= 97 && left2 >= 96,
        "new window: only the 50 s timeout may still arrive: estimate at the roll {est2}, after a reading of 97 at 81 s {left2}"
    );
}

/// Every window, 40 timeouts 45 s in (their bound, 30 s, ends 15 s into the next window).
/// Each roll keeps what may still arrive (40), and no more: once a summed fold of old
/// unread calls, never forgotten while some of it might arrive, grew by every window's.
#[test]
fn g1_a_timeout_burst_every_window_strands_nothing() {
    let rig = Rig::new(small(100, secs(60)));
    let a = rig.agent("data", Priority::P0);
    rig.call(a, &rig.ok(99, 100, 60)); // the window ends at 60 s
    let mut seen = vec![];
    for w in 0..5u64 {
        let start = w * 61;
        rig.advance_to(secs(start + 45));
        let mut refused = 0;
        for _ in 0..40 {
            match rig.decide(a, &Request::read()) {
                Decision::Go(g) => {
                    let _ = rig.gov.observe(g, &Observation::no_response());
                }
                _ => refused += 1,
            }
        }
        eprintln!("window {}: {refused} of 40 refused at +45 s", w + 1);
        rig.advance_to(secs(start + 61)); // the next window (the reset at start + 60 s)
        let d = rig.decide(a, &Request::read());
        let Decision::Go(g) = d else {
            panic!("window {}: refused at its start: {d:?}", w + 2)
        };
        // upstream: the 40 timeouts arrived in the last window; this call only
        let _ = rig.gov.observe(g, &rig.ok(99, 100, 60));
        let first = rig.gov.snapshot(rig.core).unwrap().remaining;
        rig.advance_to(secs(start + 61 + 20)); // every timeout's bound has passed
        let d = rig.decide(a, &Request::read());
        let Decision::Go(g) = d else {
            panic!("window {}: refused at +20 s: {d:?} (seen {seen:?})", w + 2)
        };
        let _ = rig.gov.observe(g, &rig.ok(98, 100, 40));
        let later = rig.gov.snapshot(rig.core).unwrap().remaining;
        seen.push((first, later));
    }
    eprintln!("(after the first reading, after a reading of 98 at +20 s) per window: {seen:?}");
    // The first window's numbers (59: the 40 that may still arrive kept out) are what each
    // window should show, as each has the same 40 that may still arrive.
    for (w, &(first, later)) in seen.iter().enumerate() {
        assert!(
            first >= 55 && later >= 55,
            "window {}: estimate {first} after the first reading, {later} with 98 left upstream and nothing on its way",
            w + 1
        );
    }
}

/// 40 timeouts at 45 s (bound 75 s); the roll at 61 s keeps them out (floor 60). The first
/// reading of the new window is of a grant made at 80 s, after every bound: upstream 99
/// (they all reached it in the last window). It counts every call that reached upstream
/// since the reset, so it is the truth; the floor set at the roll is no reading.
#[test]
fn g1_the_first_reading_after_the_roll_replaces_what_was_kept_out() {
    let rig = Rig::new(small(100, secs(60)));
    let a = rig.agent("data", Priority::P0);
    rig.call(a, &rig.ok(99, 100, 60)); // the window ends at 60 s
    rig.advance_to(secs(45));
    for _ in 0..40 {
        timeout(&rig, a);
    }
    rig.advance_to(secs(61));
    let g = go(rig.decide(a, &Request::read()));
    let at_roll = rig.gov.snapshot(rig.core).unwrap().remaining;
    rig.made(g); // no reading (a response without headers would settle it unread too)
    rig.advance_to(secs(80));
    let g = go(rig.decide(a, &Request::read()));
    let _ = rig.gov.observe(g, &rig.ok(98, 100, 40));
    let est = rig.gov.snapshot(rig.core).unwrap().remaining;
    eprintln!(
        "at the roll {at_roll}; after a reading of 98 of a grant made after every bound: {est}"
    );
    assert!(
        est >= 97,
        "estimate {est} with 98 left upstream and nothing that may still arrive"
    );
}

/// Ten timeouts of a limit of 10 just before the reset: the roll sets the floor to 0 and
/// anchors no reset (the next grant would). Nothing is granted, so nothing anchors it.
#[test]
fn g1_a_roll_that_keeps_out_the_whole_limit_still_ends() {
    let rig = Rig::new(small(10, secs(60)));
    let a = rig.agent("data", Priority::P0);
    rig.call(a, &rig.ok(10, 10, 10)); // the window ends at 10 s
    rig.advance_to(secs(8));
    for _ in 0..10 {
        timeout(&rig, a); // may arrive until 38 s
    }
    rig.advance_to(secs(11)); // a new window (ends at 70 s upstream)
    let mut seen = vec![];
    for t in [11u64, 40, 71, 131, 300, 1000, 5000] {
        rig.advance_to(secs(t));
        let d = rig.decide(a, &Request::read());
        let snap = rig.gov.snapshot(rig.core).unwrap();
        let ok = matches!(d, Decision::Go(_));
        if t == 5000 {
            eprintln!("decision at 5000 s: {d:?}");
        }
        seen.push((t, ok, snap.remaining));
        if let Decision::Go(g) = d {
            rig.made(g);
        }
    }
    eprintln!("(time s, granted, remaining): {seen:?}");
    assert!(
        seen.iter().any(|&(t, ok, _)| ok && t <= 131),
        "no grant by 131 s (upstream's window from 10 s ended at 70 s): {seen:?}"
    );
}

/// Upstream's window rolls a little before this host's reading of the header says (it is
/// rounded up). A call granted at 59 s reaches upstream in its new window, overtaken by 40
/// calls granted after it, answered without headers (a burst of 502s). Its reading (99, a
/// reset a window later) is the first of the new window: 40 calls settled after its grant
/// may have reached upstream after it, and it does not count them.
#[test]
fn g1_a_new_windows_reading_is_cut_by_the_unread_calls_it_may_not_count() {
    let rig = Rig::new(small(100, secs(60)));
    let a = rig.agent("data", Priority::P0);
    rig.call(a, &rig.ok(99, 100, 60)); // the window ends at 60 s
    rig.advance_to(secs(59));
    let g = go(rig.decide(a, &Request::read()));
    rig.advance_to(ms(59_100));
    for _ in 0..40 {
        rig.call(a, &Observation::new(502));
    }
    rig.advance_to(ms(59_800));
    // upstream: rolled at ~59.2 s; g arrived (1), then the 40: 59 left.
    let _ = rig.gov.observe(g, &rig.ok(99, 100, 61));
    let est = rig.gov.snapshot(rig.core).unwrap().remaining;
    let n = grants_left(&rig, a);
    eprintln!("estimate {est}, {n} granted; upstream has 59 left");
    assert!(
        est <= 59 && n <= 59,
        "estimate {est}, {n} granted with 59 left upstream"
    );
}

/// The same through the roll: a call granted at 59.9 s reaches upstream after its reset
/// (60 s), overtaken by 40 calls granted after it and answered without headers. The
/// call's reading (the new window's) comes after the roll, which must not forget them.
#[test]
fn g1_a_late_reading_of_the_last_windows_grant_is_cut_by_them_too() {
    let rig = Rig::new(small(100, secs(60)));
    let a = rig.agent("data", Priority::P0);
    rig.call(a, &rig.ok(99, 100, 60)); // the window ends at 60 s
    rig.advance_to(ms(59_900));
    let g = go(rig.decide(a, &Request::read()));
    rig.advance_to(ms(59_950));
    for _ in 0..40 {
        rig.call(a, &Observation::new(502));
    }
    rig.advance_to(ms(60_100)); // the roll
    let _ = rig.gov.snapshot(rig.core);
    let probe = go(rig.decide(a, &Request::read())); // runs the roll
    rig.made(probe); // (reaches upstream last: 1 more)
    rig.advance_to(ms(60_500));
    // upstream: its new window from 60 s: g, then the 40, then the probe: 58 left.
    let _ = rig.gov.observe(g, &rig.ok(99, 100, 60));
    let est = rig.gov.snapshot(rig.core).unwrap().remaining;
    let n = grants_left(&rig, a);
    eprintln!("after the roll: estimate {est}, {n} granted; upstream has 58 left");
    assert!(
        est <= 58 && n <= 58,
        "estimate {est}, {n} granted with 58 left upstream"
    );
}

/// A reading of no grant (`observe_without_grant`, e.g. a `GET /rate_limit` probe) in a
/// later window is taken as of the window's start: timed-out calls whose bound ended long
/// before do not count against it.
#[test]
fn g1_a_grantless_reading_does_not_count_timeouts_of_an_earlier_window() {
    let rig = Rig::new(small(100, secs(60)));
    let a = rig.agent("data", Priority::P0);
    rig.call(a, &rig.ok(99, 100, 60)); // the window ends at 60 s
    rig.advance_to(secs(1));
    for _ in 0..30 {
        timeout(&rig, a); // bounds end at 31 s
    }
    rig.advance_to(secs(100)); // a new window (from 60 s)
    let g = go(rig.decide(a, &Request::read()));
    let _ = rig.gov.observe(g, &rig.ok(90, 100, 20));
    let before = rig.gov.snapshot(rig.core).unwrap().remaining;
    rig.advance_to(secs(101));
    let _ = rig
        .gov
        .observe_without_grant(a, rig.core, &rig.ok(90, 100, 19));
    let est = rig.gov.snapshot(rig.core).unwrap().remaining;
    eprintln!("reading of a grant: {before}; then a grantless reading of 90: {est}");
    assert!(
        est >= 89,
        "estimate {est} after a grantless reading of 90 (the timeouts' bounds ended at 31 s)"
    );
}

/// The same seen by the traffic light: 90 timeouts at 45 s; the roll at 61 s keeps them out (red,
/// right then). A reading of 97 of a grant made at 80 s (every bound passed) turns it back:
/// it left it red, and a P2 agent refused, for the rest of the window.
#[test]
fn g1_a_reading_after_the_roll_turns_the_light_back_from_red() {
    let rig = Rig::new(small(100, secs(60)));
    let a = rig.agent("data", Priority::P0);
    let low = rig.agent("bulk", Priority::P2);
    rig.call(a, &rig.ok(99, 100, 60)); // the window ends at 60 s
    rig.advance_to(secs(45));
    for _ in 0..90 {
        timeout(&rig, a); // bounds end at 75 s
    }
    rig.advance_to(secs(61));
    let p = go(rig.decide(a, &Request::read())); // the roll: 9 left, red
    let at_roll = rig.gov.snapshot(rig.core).unwrap().remaining;
    rig.made(p);
    rig.advance_to(secs(80));
    let g = go(rig.decide(a, &Request::read()));
    let _ = rig.gov.observe(g, &rig.ok(97, 100, 40));
    let est = rig.gov.snapshot(rig.core).unwrap().remaining;
    eprintln!("at the roll {at_roll}");
    let d = rig.decide(low, &Request::read());
    eprintln!("after a reading of 97 at 80 s: estimate {est}; P2: {d:?}");
    // (A Wait for G6's Recovery pacing after a spent window is fine; the light is not.)
    let red = matches!(&d, Decision::Refuse(r) if format!("{r:?}").contains("RedLight"));
    assert!(est >= 90 && !red, "estimate {est} (upstream 97), P2 {d:?}");
}

/// With the light: after the reset only a P2 agent asks. 86 calls time out 15 s before the reset;
/// the roll leaves 14 of 100 (red): P2 is refused and no grant anchors the window, so the
/// roll anchors it (it never rolled again).
#[test]
fn g1_g8_a_red_roll_of_a_p2_only_resource_still_ends() {
    let rig = Rig::new(small(100, secs(60)));
    let a = rig.agent("data", Priority::P0); // its work ends with this window
    let low = rig.agent("bulk", Priority::P2);
    rig.call(a, &rig.ok(99, 100, 60)); // the window ends at 60 s
    rig.advance_to(secs(45));
    for _ in 0..86 {
        timeout(&rig, a); // bounds end at 75 s
    }
    let mut seen = vec![];
    for t in [61u64, 80, 121, 300, 5000] {
        rig.advance_to(secs(t));
        let d = rig.decide(low, &Request::read());
        let rem = rig.gov.snapshot(rig.core).unwrap().remaining;
        seen.push((t, matches!(d, Decision::Go(_)), rem));
        if t == 5000 {
            eprintln!("at 5000 s: {d:?}");
        }
        if let Decision::Go(g) = d {
            rig.made(g);
        }
    }
    eprintln!("(time s, granted, remaining): {seen:?}");
    assert!(seen.iter().any(|&(t, ok, _)| ok && t <= 300), "{seen:?}");
}
