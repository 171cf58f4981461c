//! Internal time: `u64` nanoseconds on the governor's clock, cheap to compare and add.

use std::time::Duration;

/// Nanoseconds since the clock's origin.
pub(crate) type Nanos = u64;

/// Nanoseconds in a second.
pub(crate) const NANOS_PER_SEC: Nanos = 1_000_000_000;

/// Far enough in the future to mean "never" without overflowing additions of a few hours.
pub(crate) const NEVER: Nanos = u64::MAX / 2;

#[inline]
pub(crate) fn ns(d: Duration) -> Nanos {
    // u64 arithmetic (no u128): this runs on every decision.
    d.as_secs()
        .saturating_mul(NANOS_PER_SEC)
        .saturating_add(u64::from(d.subsec_nanos()))
        .min(NEVER)
}

#[inline]
pub(crate) fn dur(n: Nanos) -> Duration {
    Duration::from_nanos(n)
}

/// `n` scaled by a share in `[0, 1]` (rounding up, so thresholds are never undercut).
#[inline]
pub(crate) fn share_ceil(n: u64, share: f64) -> u64 {
    let v = (n as f64 * share).ceil();
    if v.is_finite() && v >= 0.0 {
        v as u64
    } else {
        0
    }
}
