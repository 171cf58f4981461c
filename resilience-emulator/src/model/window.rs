//! A sliding-window counter: how much was spent in the last `window`.

use std::collections::VecDeque;
use std::time::Duration;

/// Amounts spent at instants; an amount spent at `t` counts until `t + window` (exclusive).
#[derive(Debug, Clone)]
pub(crate) struct SlidingWindow {
    window: Duration,
    entries: VecDeque<(Duration, u32)>,
    total: u64,
}

impl SlidingWindow {
    pub(crate) fn new(window: Duration) -> Self {
        Self {
            window,
            entries: VecDeque::new(),
            total: 0,
        }
    }

    /// The amount spent in `(now - window, now]`.
    pub(crate) fn spent(&mut self, now: Duration) -> u64 {
        while let Some(&(t, n)) = self.entries.front() {
            if t.saturating_add(self.window) <= now {
                self.entries.pop_front();
                self.total -= u64::from(n);
            } else {
                break;
            }
        }
        self.total
    }

    /// Whether spending `amount` now would exceed `limit`.
    pub(crate) fn would_exceed(&mut self, now: Duration, amount: u32, limit: u32) -> bool {
        self.spent(now) + u64::from(amount) > u64::from(limit)
    }

    pub(crate) fn spend(&mut self, now: Duration, amount: u32) {
        self.entries.push_back((now, amount));
        self.total += u64::from(amount);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_expire_exactly_one_window_later() {
        let mut w = SlidingWindow::new(Duration::from_secs(60));
        w.spend(Duration::from_secs(0), 5);
        w.spend(Duration::from_secs(30), 3);
        assert_eq!(w.spent(Duration::from_millis(59_999)), 8);
        assert_eq!(w.spent(Duration::from_secs(60)), 3);
        assert!(w.would_exceed(Duration::from_secs(60), 8, 10));
        assert!(!w.would_exceed(Duration::from_secs(60), 7, 10));
        assert_eq!(w.spent(Duration::from_secs(90)), 0);
    }
}
