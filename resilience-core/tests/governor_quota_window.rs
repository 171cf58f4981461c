//! The quota estimate across windows (G1's ratio, G8's even spend): which readings start a
//! new window, tolerating a couple of seconds of skew in the reset, and which limit
//! headers count.

mod governor_support;

use governor_support::*;
use resilience_core::governor::{Observation, Priority, Request};

fn remaining(rig: &Rig) -> u64 {
    rig.gov.snapshot(rig.core).unwrap().remaining
}

/// IETF headers: `remaining` of 5000, resetting `reset_in` seconds after the response.
fn ietf(remaining: u64, reset_in: u64) -> Observation {
    Observation::from_headers(
        200,
        [
            ("RateLimit-Policy", r#""hour";q=5000;w=3600"#.to_string()),
            ("RateLimit", format!(r#""hour";r={remaining};t={reset_in}"#)),
        ],
    )
}

/// A GitHub reset (epoch seconds) more than the 2 s skew after the known one is a new
/// window, even before the local clock reaches the old reset: the estimate starts afresh
/// instead of keeping the old window's low reading.
#[test]
fn g1_a_later_reset_epoch_starts_a_new_window_before_the_old_reset() {
    let rig = Rig::new(light_only());
    let a = rig.agent("data", Priority::P1);
    rig.gov
        .observe_without_grant(a, rig.core, &rig.ok(100, 5000, 10));
    assert_eq!(remaining(&rig), 100);
    rig.advance(secs(5));
    rig.gov
        .observe_without_grant(a, rig.core, &rig.ok(4999, 5000, 3600));
    assert_eq!(remaining(&rig), 4999, "still the old window's reading");
}

/// The same with a reset given as seconds from the response (IETF): 2 s later is the same
/// window read with skew (the server's count only falls, the reset stays where it was),
/// more than that is a new one.
#[test]
fn g1_a_reset_more_than_2s_later_starts_a_new_window_and_2s_is_skew() {
    let rig = Rig::new(light_only());
    let a = rig.agent("data", Priority::P1);
    rig.gov.observe_without_grant(a, rig.core, &ietf(100, 10));
    rig.gov.observe_without_grant(a, rig.core, &ietf(4999, 12));
    let s = rig.gov.snapshot(rig.core).unwrap();
    assert_eq!(s.remaining, 100, "2 s of skew read as a new window");
    assert_eq!(s.reset_in, Some(secs(10)), "2 s of skew moved the reset");
    rig.advance(secs(5));
    rig.gov
        .observe_without_grant(a, rig.core, &ietf(4999, 3600));
    assert_eq!(remaining(&rig), 4999, "still the old window's reading");
}

/// `x-ratelimit-limit: 0` is not a limit this quota can have: it is ignored (taking it
/// would read every remaining as 0 and pause everyone).
#[test]
fn g1_a_limit_header_of_zero_is_ignored() {
    let rig = Rig::new(light_only());
    let a = rig.agent("data", Priority::P1);
    rig.gov
        .observe_without_grant(a, rig.core, &rig.ok(900, 1000, 3600));
    rig.gov
        .observe_without_grant(a, rig.core, &rig.ok(800, 0, 3600));
    let s = rig.gov.snapshot(rig.core).unwrap();
    assert_eq!((s.limit, s.remaining), (1000, 800));
    assert!(rig.decide(a, &Request::read()).is_go());
}

/// The first grant anchors an assumed window (reset an hour on); a first header reset
/// within the skew of it is taken as the known reset, so a later reset after it is read as
/// a new window.
#[test]
fn g1_a_first_header_reset_near_the_assumed_one_becomes_the_known_reset() {
    let rig = Rig::new(light_only());
    let a = rig.agent("data", Priority::P1);
    let g = go(rig.decide(a, &Request::read())); // assumed reset at 3600 s
    let _ = rig.gov.observe(g, &ietf(100, 3601));
    assert_eq!(remaining(&rig), 100);
    rig.advance(secs(5));
    rig.gov
        .observe_without_grant(a, rig.core, &ietf(4999, 3600));
    assert_eq!(
        remaining(&rig),
        4999,
        "the later reset not read as a new window"
    );
}

/// The first grant of a window anchors its assumed reset; made on the fast path, it must
/// bring maintenance forward to that reset even when the window is shorter than the 1 s
/// sweep: a grant after the reset is counted in a new window, not the one that ended.
#[test]
fn g1_a_window_anchored_on_the_fast_path_resets_on_time_even_under_a_second() {
    let mut cfg = light_only();
    cfg.quota.limit = 10;
    cfg.quota.window = ms(100);
    let rig = Rig::new(cfg);
    let a = rig.agent("data", Priority::P1);
    let _ = rig.gov.snapshot(rig.core); // maintenance now: the next sweep is 1 s away
    let _first = go(rig.decide(a, &Request::read())); // fast path: reset at 100 ms
    rig.advance(ms(150));
    let _second = go(rig.decide(a, &Request::read()));
    assert_eq!(
        rig.gov.snapshot(rig.core).unwrap().reset_in,
        Some(ms(100)),
        "granted in the window that had ended"
    );
}
