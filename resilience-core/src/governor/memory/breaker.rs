//! G3 predictive breaker: opens when the observed consumption rate would exhaust the quota
//! within the horizon and before reset; closes after `close_after` good observations.

use super::super::config::Predictive;
use super::time::{ns, Nanos};
use std::collections::VecDeque;

#[derive(Debug, Clone, Default)]
pub(crate) struct Breaker {
    pub open: bool,
    good: u32,
    /// `(time, remaining)` readings of the current window.
    samples: VecDeque<(Nanos, u64)>,
    /// The last reading or limit it took.
    last_seen: Nanos,
}

/// What an observation did to the breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    None,
    Opened,
    Closed,
}

impl Breaker {
    /// A new window: the samples are forgotten and the breaker closes, since a projection
    /// of the old window's spending says nothing about a full quota (and with only
    /// background agents asking, nothing else would ever close it). Returns whether it was
    /// open.
    pub fn new_window(&mut self) -> bool {
        self.samples.clear();
        self.good = 0;
        std::mem::replace(&mut self.open, false)
    }

    /// Opens at once (a rate limit was observed and `open_on_limit` is set).
    pub fn trip(&mut self, now: Nanos) -> Change {
        self.good = 0;
        self.last_seen = self.last_seen.max(now);
        if self.open {
            Change::None
        } else {
            self.open = true;
            Change::Opened
        }
    }

    /// Closes a breaker that has seen nothing since `quiet_since`: its projection is stale,
    /// and while it is open the background agents it sheds cannot bring the readings that
    /// would close it (with only those asking, nothing else would). Returns whether it was
    /// open.
    pub fn expire(&mut self, quiet_since: Nanos) -> bool {
        if !self.open || self.last_seen > quiet_since {
            return false;
        }
        self.new_window()
    }

    /// Time to exhaustion at the observed rate, if a rate can be trusted.
    fn time_to_exhaustion(&self, cfg: &Predictive) -> Option<Nanos> {
        if self.samples.len() < cfg.min_samples as usize {
            return None;
        }
        let (&(t0, r0), &(t1, r1)) = (self.samples.front()?, self.samples.back()?);
        if t1 <= t0 || r1 >= r0 {
            return None;
        }
        // remaining / rate = r1 * (t1 - t0) / (r0 - r1), in nanoseconds.
        let tte = u128::from(r1) * u128::from(t1 - t0) / u128::from(r0 - r1);
        Some(u64::try_from(tte).unwrap_or(u64::MAX))
    }

    /// Takes a successful reading of `remaining` at `now`, `ttr` before reset.
    pub fn observe(&mut self, now: Nanos, remaining: u64, ttr: Nanos, cfg: &Predictive) -> Change {
        let keep = ns(cfg.rate_window);
        while self
            .samples
            .front()
            .is_some_and(|&(t, _)| now.saturating_sub(t) > keep)
        {
            self.samples.pop_front();
        }
        if self.samples.len() >= 64 {
            self.samples.pop_front();
        }
        self.samples.push_back((now, remaining));
        self.last_seen = self.last_seen.max(now);
        let doomed = self
            .time_to_exhaustion(cfg)
            .is_some_and(|tte| tte < ns(cfg.horizon) && tte < ttr);
        match (self.open, doomed) {
            (false, true) => {
                self.open = true;
                self.good = 0;
                Change::Opened
            }
            (true, true) => {
                self.good = 0;
                Change::None
            }
            (true, false) => {
                self.good += 1;
                if self.good >= cfg.close_after {
                    self.open = false;
                    self.good = 0;
                    Change::Closed
                } else {
                    Change::None
                }
            }
            (false, false) => Change::None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const S: Nanos = 1_000_000_000;

    #[test]
    fn g3_opens_on_projected_exhaustion_within_horizon_and_closes_after_three_good() {
        let cfg = Predictive::default();
        let mut b = Breaker::default();
        // 10 per second from 500: exhaustion in ~48 s (outside 30 s): stays closed.
        assert_eq!(b.observe(0, 500, 3600 * S, &cfg), Change::None);
        assert_eq!(b.observe(S, 490, 3600 * S, &cfg), Change::None);
        assert_eq!(b.observe(2 * S, 480, 3600 * S, &cfg), Change::None);
        assert!(!b.open);
        // 100 per second: 280 left is 2.8 s of quota: opens.
        assert_eq!(b.observe(4 * S, 280, 3600 * S, &cfg), Change::Opened);
        // Throttled: the rate over the kept samples falls below the horizon's.
        let mut t = 15 * S;
        let mut changes = Vec::new();
        for r in [279, 278, 277] {
            changes.push(b.observe(t, r, 3600 * S, &cfg));
            t += 5 * S;
        }
        assert_eq!(changes, [Change::None, Change::None, Change::Closed]);
    }

    #[test]
    fn g3_exhaustion_after_reset_does_not_open() {
        let cfg = Predictive::default();
        let mut b = Breaker::default();
        for (i, r) in [300, 200, 100].into_iter().enumerate() {
            // 100/s, 1 s of quota left, but the window resets in 0.5 s.
            b.observe(i as u64 * S, r, S / 2, &cfg);
        }
        assert!(!b.open);
    }
}
