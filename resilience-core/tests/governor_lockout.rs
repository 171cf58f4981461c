//! Quota lockouts and overflows found by review (each test failed before its fix): a spent
//! quota must always come back, and a huge limit must not overflow the pool's sums.

mod governor_support;

use governor_support::*;
use resilience_core::governor::{Observation, Priority, Request, ResourceConfig};

/// A late 403 "remaining 0" from a window that is already over used to exhaust the new
/// window; with the window rolled (no reset known) nothing was ever granted again.
#[test]
fn g1_g6_a_late_403_from_an_old_window_does_not_lock_the_new_one() {
    let rig = Rig::new(small(100, secs(60)));
    let p0 = rig.agent("picard", Priority::P0);
    let g = go(rig.decide(p0, &Request::read())); // anchors reset at t = 60 s
    rig.advance_to(secs(61)); // the window is over; the response arrives late
    let late = Observation::from_headers(
        403,
        [
            ("x-ratelimit-limit", "100".to_string()),
            ("x-ratelimit-remaining", "0".to_string()),
            (
                "x-ratelimit-reset",
                rig.reset_epoch(0).saturating_sub(1).to_string(),
            ),
        ],
    );
    let _ = rig.gov.observe(g, &late);
    rig.advance_to(secs(10_000)); // long after any block and any window
    let d = rig.decide(p0, &Request::read());
    assert!(d.is_go(), "P0 still locked out hours later: {d:?}");
}

/// The same lockout from a 429 "remaining 0" with no reset header, seen before any grant:
/// the quota now comes back when the block ends.
#[test]
fn g6_a_spent_quota_with_no_reset_known_comes_back_after_the_block() {
    let rig = Rig::new(small(100, secs(60)));
    let p0 = rig.agent("picard", Priority::P0);
    let obs = Observation::new(429).with_remaining(0);
    let _ = rig.gov.observe_without_grant(p0, rig.core, &obs);
    rig.advance_to(secs(100_000));
    let d = rig.decide(p0, &Request::read());
    assert!(d.is_go(), "still refused after >1 day: {d:?}");
}

/// Skew at the window boundary: the local clock passes the header's reset a moment before
/// the server does, so the first call of the "new" window meets a 403 "remaining 0" whose
/// reset now looks past. It used to block everyone for the assumed 1 h window; now for the
/// reset margin.
#[test]
fn g6_a_403_of_a_window_just_reset_blocks_for_the_margin_not_an_hour() {
    let rig = Rig::new(light_only());
    let p0 = rig.agent("picard", Priority::P0);
    rig.call(p0, &rig.ok(3, 5000, 10)); // window resets in 10 s
    let reset = rig.reset_epoch(10);
    rig.advance(secs(10) + ms(200)); // local clock just past the reset
    let g = go(rig.decide(p0, &Request::read()));
    let still_old = Observation::from_headers(
        403,
        [
            ("x-ratelimit-limit", "5000".to_string()),
            ("x-ratelimit-remaining", "0".to_string()),
            ("x-ratelimit-reset", reset.to_string()),
        ],
    );
    let _ = rig.gov.observe(g, &still_old);
    let snap = rig.gov.snapshot(rig.core).unwrap();
    let blocked = snap.blocked_for.unwrap_or_default();
    assert!(
        blocked < secs(120),
        "blocked for {blocked:?}, remaining {}",
        snap.remaining
    );
}

/// `quota.limit = u64::MAX` ("unlimited") is valid; the pool's sums of reservations used to
/// overflow at the 11th P0 agent (a panic in debug builds, a wrapped total in release).
#[test]
fn g2_an_unlimited_quota_does_not_overflow_the_pool() {
    let mut cfg = ResourceConfig::default();
    cfg.quota.limit = u64::MAX;
    let rig = Rig::new(cfg);
    for i in 0..12 {
        rig.agent(&format!("p0-{i}"), Priority::P0);
    }
    let snap = rig.gov.snapshot(rig.core).unwrap();
    assert!(snap.pool_free <= snap.remaining);
}

/// An HTTP-date Retry-After is capped like the delay form, at a week (year 9999 used to
/// block for about 236 years).
#[test]
fn g6_a_far_future_http_date_retry_after_is_capped_at_a_week() {
    let rig = Rig::new(light_only());
    let a = rig.agent("data", Priority::P1);
    let obs = Observation::new(429).with_header("retry-after", "Fri, 31 Dec 9999 23:59:59 GMT");
    let _ = rig.gov.observe_without_grant(a, rig.core, &obs);
    let blocked = rig.gov.snapshot(rig.core).unwrap().blocked_for.unwrap();
    assert!(blocked <= secs(7 * 86_400), "blocked for {blocked:?}");
}

/// A reset in epoch milliseconds (13 digits) reads as centuries away: it is ignored as
/// implausible (more than two windows), so the limit blocks for the default, not for ~528
/// years.
#[test]
fn g6_a_reset_sent_in_epoch_milliseconds_is_ignored() {
    let rig = Rig::new(light_only());
    let a = rig.agent("data", Priority::P1);
    let ms_epoch = (rig.reset_epoch(60) * 1000).to_string();
    let obs = Observation::from_headers(
        429,
        [
            ("x-ratelimit-remaining", "0".to_string()),
            ("x-ratelimit-reset", ms_epoch),
        ],
    );
    let _ = rig.gov.observe_without_grant(a, rig.core, &obs);
    let blocked = rig.gov.snapshot(rig.core).unwrap().blocked_for.unwrap();
    assert!(blocked <= secs(3_600), "blocked for {blocked:?}");
    // And the quota comes back after it, not in ~528 years.
    rig.advance(blocked + secs(61));
    let d = rig.decide(a, &Request::read());
    assert!(d.is_go(), "{d:?}");
}
