//! G8 sliding windows: an exact log of grants per window, plus optional GCRA smoothing.
//!
//! The log makes "at most N units in any window" exact, which is what a server's sliding
//! window enforces; the GCRA (one theoretical arrival time) spreads grants at the window's
//! average rate so a high-priority request rarely finds the window full.

use super::time::{Nanos, NEVER};
use std::collections::VecDeque;

/// One window's state (shared, or one endpoint's).
#[derive(Debug, Clone, Default)]
pub(crate) struct Window {
    /// `(time, units, by P0)` of every grant still in the window.
    log: VecDeque<(Nanos, u32, bool)>,
    sum: u64,
    /// Units granted to P0 still in the window (spent from its headroom first).
    p0_sum: u64,
    tat: Nanos,
}

/// The fixed parameters of a window rule, in nanoseconds and units.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shape {
    /// Window plus margin: how long a grant counts.
    pub span: Nanos,
    /// Units allowed in a span, for P0.
    pub limit: u64,
    /// Units allowed in a span for P1/P2 (`limit` less the P0 headroom).
    pub shared_limit: u64,
    /// GCRA emission interval per unit (for P1/P2), if smoothed.
    pub interval: Option<Nanos>,
    /// GCRA tolerance.
    pub tolerance: Nanos,
}

impl Window {
    fn expire(&mut self, now: Nanos, span: Nanos) {
        while let Some(&(t, u, p0)) = self.log.front() {
            if t.saturating_add(span) > now {
                break;
            }
            self.log.pop_front();
            self.sum -= u64::from(u);
            if p0 {
                self.p0_sum -= u64::from(u);
            }
        }
    }

    /// Earliest time at or after `now` a grant of `units` fits. `exempt` (P0) ignores the
    /// headroom and the smoothing.
    pub(crate) fn earliest(
        &mut self,
        now: Nanos,
        units: u32,
        shape: &Shape,
        exempt: bool,
    ) -> Nanos {
        self.expire(now, shape.span);
        let cap = if exempt {
            shape.limit
        } else {
            shape.shared_limit
        };
        let units64 = u64::from(units);
        let mut at = now;
        let need = (self.sum + units64).saturating_sub(cap).min(self.sum);
        if need > 0 || (cap == 0 && units > 0) {
            // Free `need` units: the entry that completes them expires at its time + span.
            let mut freed = 0;
            at = NEVER;
            for &(t, u, _) in &self.log {
                freed += u64::from(u);
                if freed >= need {
                    at = t.saturating_add(shape.span).max(now);
                    break;
                }
            }
        }
        if let (Some(interval), false) = (shape.interval, exempt) {
            let cost = interval.saturating_mul(units64);
            let tau = shape.tolerance.max(cost);
            let smooth = self.tat.saturating_add(cost).saturating_sub(tau);
            at = at.max(smooth);
        }
        at
    }

    /// Records a grant of `units` at `now`. A P0 grant is spent from the headroom first and
    /// pushes the smoothed schedule of the others back only by what exceeds it.
    pub(crate) fn commit(&mut self, now: Nanos, units: u32, shape: &Shape, p0: bool) {
        if units == 0 {
            return;
        }
        let units64 = u64::from(units);
        self.expire(now, shape.span);
        self.log.push_back((now, units, p0));
        self.sum += units64;
        let charged = if p0 {
            let headroom = shape.limit - shape.shared_limit;
            let over_before = self.p0_sum.saturating_sub(headroom);
            self.p0_sum += units64;
            self.p0_sum.saturating_sub(headroom) - over_before
        } else {
            units64
        };
        if let (Some(interval), true) = (shape.interval, charged > 0) {
            self.tat = self
                .tat
                .max(now)
                .saturating_add(interval.saturating_mul(charged));
        }
    }

    /// Takes back a grant of `units` recorded at `at` (released unused), if it is still in the
    /// window. Entries with the same time, size and class are interchangeable, so any match
    /// will do. The smoothed schedule keeps its place: a release never lets the others run
    /// ahead of the average rate.
    pub(crate) fn refund(&mut self, at: Nanos, units: u32, p0: bool) {
        if units == 0 {
            return;
        }
        let Some(i) = self.log.iter().rposition(|&e| e == (at, units, p0)) else {
            return;
        };
        self.log.remove(i);
        self.sum -= u64::from(units);
        if p0 {
            self.p0_sum -= u64::from(units);
        }
    }

    /// Whether nothing in the window counts any more (it can be dropped).
    pub(crate) fn is_idle(&mut self, now: Nanos, span: Nanos) -> bool {
        self.expire(now, span);
        self.log.is_empty() && self.tat <= now
    }

    /// Units counted in the window ending at `now`.
    #[cfg(test)]
    pub(crate) fn used(&mut self, now: Nanos, span: Nanos) -> u64 {
        self.expire(now, span);
        self.sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Nanos = 1_000_000_000;

    fn shape(limit: u64, headroom: u64, smooth: Option<u64>) -> Shape {
        let span = 60 * S;
        let shared = limit - headroom;
        Shape {
            span,
            limit,
            shared_limit: shared,
            interval: smooth.map(|_| span / shared),
            tolerance: smooth.map_or(0, |b| b * (span / shared)),
        }
    }

    #[test]
    fn g8_exact_window_admits_the_limit_then_waits_for_the_oldest_to_expire() {
        let sh = shape(80, 0, None);
        let mut w = Window::default();
        for i in 0..80 {
            assert_eq!(w.earliest(i * S / 10, 1, &sh, false), i * S / 10);
            w.commit(i * S / 10, 1, &sh, false);
        }
        // The 81st must wait until the first grant (t = 0) leaves the window.
        assert_eq!(w.earliest(8 * S, 1, &sh, false), 60 * S);
        assert_eq!(w.earliest(8 * S, 3, &sh, false), 60 * S + 2 * S / 10);
        assert_eq!(w.used(60 * S, sh.span), 79);
    }

    #[test]
    fn g8_p0_headroom_is_only_for_p0() {
        let sh = shape(10, 2, None);
        let mut w = Window::default();
        for _ in 0..8 {
            w.commit(0, 1, &sh, false);
        }
        assert_eq!(w.earliest(S, 1, &sh, false), 60 * S);
        assert_eq!(w.earliest(S, 2, &sh, true), S);
        assert_eq!(w.earliest(S, 3, &sh, true), 60 * S);
    }

    #[test]
    fn g8_smoothing_spreads_after_the_burst() {
        // 60 per minute, burst 5: five at once, then one per second.
        let sh = shape(60, 0, Some(5));
        let mut w = Window::default();
        for _ in 0..5 {
            assert_eq!(w.earliest(0, 1, &sh, false), 0);
            w.commit(0, 1, &sh, false);
        }
        assert_eq!(w.earliest(0, 1, &sh, false), S);
        w.commit(S, 1, &sh, false);
        assert_eq!(w.earliest(S, 1, &sh, false), 2 * S);
        // P0 is not smoothed, and without headroom its grant pushes the others back.
        assert_eq!(w.earliest(S, 1, &sh, true), S);
        w.commit(S, 1, &sh, true);
        assert_eq!(w.earliest(S, 1, &sh, false), 3 * S);
    }

    #[test]
    fn g8_p0_spends_its_headroom_without_pushing_the_others_back() {
        // 62 per minute, 2 for P0: the others are smoothed at 60/min (one per second).
        let sh = shape(62, 2, Some(1));
        let mut w = Window::default();
        w.commit(0, 1, &sh, false);
        assert_eq!(w.earliest(0, 1, &sh, false), S);
        w.commit(0, 1, &sh, true);
        w.commit(0, 1, &sh, true);
        assert_eq!(w.earliest(0, 1, &sh, false), S, "headroom use is free");
        w.commit(0, 1, &sh, true);
        assert_eq!(
            w.earliest(0, 1, &sh, false),
            2 * S,
            "beyond it, P0 pushes back"
        );
    }

    #[test]
    fn g8_a_window_is_idle_only_once_its_grants_left_and_its_schedule_passed() {
        let sh = shape(60, 0, Some(1)); // one a second, no burst
        let mut w = Window::default();
        assert!(w.is_idle(0, sh.span));
        w.commit(0, 1, &sh, false);
        assert!(!w.is_idle(30 * S, sh.span), "a grant still in the window");
        assert!(w.is_idle(60 * S, sh.span));
        // 90 units: gone from the window at 120 s, but smoothed until 150 s.
        w.commit(60 * S, 90, &sh, false);
        assert!(!w.is_idle(120 * S, sh.span), "its schedule is still ahead");
        assert!(w.is_idle(150 * S, sh.span));
    }

    #[test]
    fn oversized_requests_wait_for_an_empty_window() {
        let sh = shape(5, 0, None);
        let mut w = Window::default();
        w.commit(0, 2, &sh, false);
        assert_eq!(w.earliest(S, 9, &sh, false), 60 * S);
        let mut empty = Window::default();
        assert_eq!(empty.earliest(S, 9, &sh, false), S);
    }
}
