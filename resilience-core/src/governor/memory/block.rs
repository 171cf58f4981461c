//! G6 priority retry windows: one shared block-until time per resource, release times in
//! each priority's jitter window after it, and paced grants while the blocked wave drains.

use super::super::config::RetryWindows;
use super::super::priority::Priority;
use super::time::{ns, Nanos};

#[derive(Debug, Clone)]
pub(crate) struct Block {
    /// Nothing is granted before this time.
    pub until: Nanos,
    /// Bumped whenever `until` moves, so waiters re-draw their release time.
    pub epoch: u32,
    /// Grants before this time are paced by `release_spacing`.
    pub recovery_until: Nanos,
    /// Release times handed to callers that retry on their own (`retry_slot`).
    slots: Vec<Nanos>,
    /// The latest slot handed out once `slots` was full.
    tail: Nanos,
    rng: fastrand::Rng,
}

/// Most release slots remembered (finding a free one is quadratic in them, under the
/// resource's lock); beyond it a new slot goes after the last one handed out.
const MAX_SLOTS: usize = 256;

impl Block {
    pub fn new(seed: u64) -> Self {
        Self {
            until: 0,
            epoch: 0,
            recovery_until: 0,
            slots: Vec::new(),
            tail: 0,
            rng: fastrand::Rng::with_seed(seed),
        }
    }

    #[inline]
    pub fn blocked(&self, now: Nanos) -> bool {
        now < self.until
    }

    /// Extends the block to `until` (never shortens it); returns whether it moved.
    pub fn extend(&mut self, until: Nanos, cfg: &RetryWindows) -> bool {
        if until <= self.until {
            return false;
        }
        self.until = until;
        self.epoch = self.epoch.wrapping_add(1);
        // Pace releases through every priority window, and for the recovery period.
        let last = cfg.windows.iter().map(|w| ns(w.1)).max().unwrap_or(0);
        let pace = last.max(ns(cfg.recovery));
        self.recovery_until = self.recovery_until.max(until.saturating_add(pace));
        true
    }

    /// Paces grants from `now` for the recovery period, as after a block: a spent quota's
    /// window has just reset and everyone paused until then is coming back.
    pub fn pace_from(&mut self, now: Nanos, cfg: &RetryWindows) {
        let last = cfg.windows.iter().map(|w| ns(w.1)).max().unwrap_or(0);
        let pace = last.max(ns(cfg.recovery));
        self.recovery_until = self.recovery_until.max(now.saturating_add(pace));
    }

    /// A uniform draw from `priority`'s release window, to spread the return of callers
    /// told to come back at one instant (a reset).
    pub fn spread(&mut self, priority: Priority, cfg: &RetryWindows) -> Nanos {
        let (start, end) = cfg.windows[priority.index()];
        let (start, end) = (ns(start), ns(end));
        start.saturating_add(if end > start {
            self.rng.u64(0..end - start)
        } else {
            0
        })
    }

    /// The earliest time at or after `at` that is at least `spacing` from every slot handed
    /// out and still pending, taken as a slot. Callers that drew earlier times (a higher
    /// priority's window) keep them; only a collision moves one, later.
    pub fn slot(&mut self, at: Nanos, spacing: Nanos, now: Nanos) -> Nanos {
        self.slots.retain(|&t| t.saturating_add(spacing) > now);
        let mut t = at;
        if self.slots.len() >= MAX_SLOTS {
            // Full: queue after every slot handed out, recorded or not.
            let last = self.slots.iter().copied().max().unwrap_or(0).max(self.tail);
            t = t.max(last.saturating_add(spacing));
            self.tail = t;
            return t;
        }
        let tail = self.tail;
        while let Some(s) = self
            .slots
            .iter()
            .copied()
            .chain(std::iter::once(tail).filter(|&x| x > 0))
            .find(|&s| s.saturating_add(spacing) > t && t.saturating_add(spacing) > s)
        {
            t = s.saturating_add(spacing);
        }
        self.slots.push(t);
        t
    }

    /// A release time for a waiter of `priority`: the block's end plus a uniform draw from
    /// the priority's window.
    pub fn release_at(&mut self, priority: Priority, cfg: &RetryWindows) -> Nanos {
        self.until.saturating_add(self.spread(priority, cfg))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const MS: Nanos = 1_000_000;

    #[test]
    fn g6_release_times_fall_in_each_priority_window() {
        let cfg = RetryWindows::default();
        let mut b = Block::new(7);
        assert!(b.extend(60_000 * MS, &cfg));
        assert!(!b.extend(30_000 * MS, &cfg), "a block is never shortened");
        for _ in 0..1000 {
            let p0 = b.release_at(Priority::P0, &cfg) - 60_000 * MS;
            let p1 = b.release_at(Priority::P1, &cfg) - 60_000 * MS;
            let p2 = b.release_at(Priority::P2, &cfg) - 60_000 * MS;
            assert!(p0 < 500 * MS, "{p0}");
            assert!((500 * MS..3_500 * MS).contains(&p1), "{p1}");
            assert!((3_500 * MS..9_500 * MS).contains(&p2), "{p2}");
        }
        assert_eq!(b.recovery_until, 120_000 * MS);
    }

    #[test]
    fn g6_slots_keep_their_spacing_and_an_earlier_draw_keeps_its_place() {
        let mut b = Block::new(7);
        let sp = 50 * MS;
        assert_eq!(b.slot(1_000 * MS, sp, 0), 1_000 * MS);
        assert_eq!(
            b.slot(1_020 * MS, sp, 0),
            1_050 * MS,
            "moved clear of the first"
        );
        assert_eq!(b.slot(1_010 * MS, sp, 0), 1_100 * MS);
        // A P0 draw well before the others is not pushed behind them.
        assert_eq!(b.slot(200 * MS, sp, 0), 200 * MS);
        // Once a slot is past, it no longer holds anyone back.
        assert_eq!(b.slot(1_000 * MS, sp, 2_000 * MS), 1_000 * MS);
    }
}
