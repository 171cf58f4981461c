//! The primary quota estimate (G1's ratio, G8's even spend): the last header reading less
//! what was granted since, and the window's reset.

use super::super::config::{AssumedQuota, TrafficLight};
use super::super::store::Zone;
use super::time::{ns, share_ceil, Nanos};

/// Skew tolerated between two readings of the same `x-ratelimit-reset` (whole seconds).
const SAME_RESET: Nanos = 2_000_000_000;

#[derive(Debug, Clone)]
pub(crate) struct Quota {
    pub limit: u64,
    pub remaining: u64,
    /// Clock time of the reset; `None` until the first grant anchors an assumed window.
    pub reset_at: Option<Nanos>,
    /// Whether `reset_at` came from a header (else it is assumed).
    reset_known: bool,
    window: Nanos,
    /// Total cost granted so far; grants carry it to correct readings for calls in flight.
    pub ledger: u64,
    /// Ledger of the newest grant whose reading was applied.
    applied: u64,
    /// `remaining >= green_floor` is green; `remaining < red_floor` is red.
    green_floor: u64,
    red_floor: u64,
}

/// What a reading changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Applied {
    pub new_window: bool,
    pub limit_changed: bool,
}

impl Quota {
    pub fn new(assumed: &AssumedQuota, light: &TrafficLight) -> Self {
        let mut q = Self {
            limit: assumed.limit,
            remaining: assumed.limit,
            reset_at: None,
            reset_known: false,
            window: ns(assumed.window),
            ledger: 0,
            applied: 0,
            green_floor: 0,
            red_floor: 0,
        };
        q.floors(light);
        q
    }

    fn floors(&mut self, light: &TrafficLight) {
        self.green_floor = share_ceil(self.limit, light.green);
        self.red_floor = share_ceil(self.limit, light.red);
    }

    #[inline]
    pub fn zone(&self) -> Zone {
        if self.remaining >= self.green_floor {
            Zone::Green
        } else if self.remaining < self.red_floor {
            Zone::Red
        } else {
            Zone::Amber
        }
    }

    #[inline]
    pub fn is_green(&self) -> bool {
        self.remaining >= self.green_floor
    }

    pub fn ratio(&self) -> f64 {
        self.remaining as f64 / self.limit.max(1) as f64
    }

    /// Time until reset (an assumed full window if not anchored yet).
    #[inline]
    pub fn time_to_reset(&self, now: Nanos) -> Nanos {
        self.reset_at.map_or(self.window, |r| r.saturating_sub(now))
    }

    /// Whether the window has reset by `now`.
    #[inline]
    pub fn expired(&self, now: Nanos) -> bool {
        self.reset_at.is_some_and(|r| now >= r)
    }

    /// Starts a new window (its reset is anchored at the next grant unless a header says).
    pub fn roll(&mut self) {
        self.remaining = self.limit;
        self.reset_at = None;
        self.reset_known = false;
    }

    /// Charges a grant; returns the ledger value the grant carries.
    #[inline]
    pub fn charge(&mut self, cost: u64, now: Nanos) -> u64 {
        if self.reset_at.is_none() {
            self.reset_at = Some(now.saturating_add(self.window));
        }
        self.remaining = self.remaining.saturating_sub(cost);
        self.ledger = self.ledger.saturating_add(cost);
        self.ledger
    }

    /// Applies a header reading taken by the response to a grant with `grant_ledger`
    /// (`None`: a call made without a grant, read as current).
    pub fn apply(
        &mut self,
        limit: Option<u64>,
        remaining: Option<u64>,
        reset_at: Option<Nanos>,
        grant_ledger: Option<u64>,
        now: Nanos,
        light: &TrafficLight,
    ) -> Applied {
        let mut out = Applied::default();
        if reset_at.is_some_and(|r| r <= now) {
            // A late response from a window that is already over says nothing about this one.
            return out;
        }
        if let Some(l) = limit.filter(|&l| l > 0 && l != self.limit) {
            self.limit = l;
            self.floors(light);
            out.limit_changed = true;
        }
        if let Some(r) = reset_at {
            let later = self
                .reset_at
                .is_some_and(|old| r > old.saturating_add(SAME_RESET));
            out.new_window = self.reset_known && later;
            let differs = self.reset_at.is_none_or(|old| r.abs_diff(old) > SAME_RESET);
            if differs || !self.reset_known {
                self.reset_at = Some(r);
                self.reset_known = true;
            }
        }
        if let Some(rem) = remaining {
            let ledger = grant_ledger.unwrap_or(self.ledger);
            // Calls granted after this one may not be counted in the reading yet.
            let corrected = rem.saturating_sub(self.ledger.saturating_sub(ledger));
            if out.new_window || ledger >= self.applied {
                self.remaining = corrected.min(self.limit);
                self.applied = ledger;
            } else {
                self.remaining = self.remaining.min(corrected);
            }
        }
        out
    }

    /// The quota is spent (a primary limit was hit), until the window resets; with no reset
    /// known (no header, no grant yet this window), until `until`, so a spent quota always
    /// comes back (it used to stay at 0 for good).
    pub fn exhaust(&mut self, until: Nanos) {
        self.remaining = 0;
        if self.reset_at.is_none() {
            self.reset_at = Some(until);
        }
    }
}
