//! The primary quota estimate (G1's ratio, G8's even spend) and the window's reset.
//!
//! Within a window the server's `remaining` only falls, so the lowest reading seen is an
//! upper bound on what is left, and it already counts every call whose response has come
//! back (each of those responses read at least as high). What it may not count yet are the
//! calls still in flight, however their responses are ordered. So the estimate is the lowest
//! reading less the cost in flight: responses that overtake each other never put back quota
//! that an unanswered call is about to spend. Nor does a reading count a call answered
//! without one that reached the server after it: a reading comes off by every call settled
//! unread since its own call was granted (it may have been overtaken by them), however late
//! it is answered.

use super::super::config::{AssumedQuota, TrafficLight};
use super::super::store::Zone;
use super::time::{ns, share_ceil, Nanos, NANOS_PER_SEC};
use std::collections::VecDeque;

/// Skew tolerated between two readings of the same `x-ratelimit-reset` (whole seconds).
const SAME_RESET: Nanos = 2 * NANOS_PER_SEC;

#[derive(Debug, Clone)]
pub(crate) struct Quota {
    pub limit: u64,
    pub remaining: u64,
    /// Clock time of the reset; `None` until the first grant anchors an assumed window.
    pub reset_at: Option<Nanos>,
    /// The end of a window no grant has anchored yet, if its roll kept calls out (those
    /// that may still arrive): a grant anchors it as usual; without one it still ends.
    unanchored_end: Option<Nanos>,
    /// Whether `reset_at` came from a header (else it is assumed).
    reset_known: bool,
    /// The header's `x-ratelimit-reset` (epoch seconds) behind `reset_at`, when it was one.
    reset_epoch: Option<u64>,
    window: Nanos,
    /// Total cost granted so far; grants and waits carry it to order decisions.
    pub ledger: u64,
    /// Cost granted and neither answered nor released.
    inflight: u64,
    /// The lowest reading of this window, less the cost of calls answered without one;
    /// `None` until a header is read in this window (the assumed limit stands).
    floor: Option<u64>,
    /// The calls settled unread, each kept while a reading may still come that does not
    /// count it: of a grant made before it was settled, or before it may arrive (no
    /// response, or its agent's lease expired), within that grant's call bound. Across
    /// windows too: a late reading of a grant of the last window may not count one.
    unread: VecDeque<Unread>,
    /// [`Leases::call_bound`](crate::governor::Leases::call_bound).
    call_bound: Nanos,
    /// A reading was applied in this window.
    read: bool,
    /// At the roll, the cost of calls that may still arrive: kept out of the window until
    /// its first reading (which does not count them if they arrive after it, `unread_since`).
    roll_arriving: u64,
    /// The ledger and the time when this window began: a reading of no grant is taken as of
    /// then (it may not count a call settled unread since, or that may arrive since).
    window_ledger: u64,
    window_began: Nanos,
    /// `remaining >= green_floor` is green; `remaining < red_floor` is red.
    green_floor: u64,
    red_floor: u64,
}

/// A call settled without a reading.
#[derive(Debug, Clone, Copy)]
struct Unread {
    /// The ledger when it was settled: a grant made after had its call sent after this one
    /// was answered, if it was.
    settled: u64,
    cost: u64,
    /// The latest it may reach the server, if later than its settling (0): a call with no
    /// response, or of an agent whose lease expired, may still be on its way.
    arriving_by: Nanos,
    /// Past this, every reading still to come is of a grant made after it arrived.
    keep_until: Nanos,
}

impl Unread {
    /// Whether it may have reached the server after the call of a grant with ledger `l`
    /// made at `at`: settled after that grant, or may arrive after it was made.
    fn may_follow(&self, l: u64, at: Nanos) -> bool {
        self.settled >= l || self.arriving_by > at
    }
}

/// The grant a response answers, as a reading needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Answering {
    /// The grant's ledger.
    pub ledger: u64,
    /// When it was granted.
    pub granted_at: Nanos,
    /// Its cost if it was already settled as spent unread (its call bound passed), else 0.
    pub settled_unread: u64,
}

/// What a reading changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Applied {
    pub new_window: bool,
    pub limit_changed: bool,
}

impl Quota {
    pub fn new(assumed: &AssumedQuota, light: &TrafficLight, call_bound: Nanos) -> Self {
        let mut q = Self {
            limit: assumed.limit,
            remaining: assumed.limit,
            reset_at: None,
            unanchored_end: None,
            reset_known: false,
            reset_epoch: None,
            window: ns(assumed.window),
            ledger: 0,
            inflight: 0,
            floor: None,
            unread: VecDeque::new(),
            call_bound,
            read: false,
            roll_arriving: 0,
            window_ledger: 0,
            window_began: 0,
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
        self.ends_at()
            .map_or(self.window, |r| r.saturating_sub(now))
    }

    /// When the window ends, if known (anchored, or its roll's fallback).
    #[inline]
    pub fn ends_at(&self) -> Option<Nanos> {
        self.reset_at.or(self.unanchored_end)
    }

    /// Whether the window has reset by `now`.
    #[inline]
    pub fn expired(&self, now: Nanos) -> bool {
        self.ends_at().is_some_and(|r| now >= r)
    }

    /// Starts a new window (its reset is anchored at the next grant unless a header says).
    /// Calls still in flight may yet be counted in it, and so may calls that got no
    /// response and may still arrive: those stay out until the window's first reading. With
    /// any, the window ends a window after the last may arrive unless a grant anchors it
    /// first (no grant may come: it would never end; anchored there for good, a grant long
    /// after the reset started upstream's window later than it ended here).
    pub fn roll(&mut self, now: Nanos) {
        self.floor = None;
        self.read = false;
        self.window_ledger = self.ledger;
        self.window_began = now;
        self.prune_unread(now);
        let late = self.unread.iter().filter(|u| u.arriving_by > now);
        let (cost, last) = late.fold((0u64, 0), |(c, l), u| {
            (c.saturating_add(u.cost), l.max(u.arriving_by))
        });
        self.roll_arriving = cost;
        self.reset_at = None;
        self.unanchored_end = (cost > 0).then(|| last.saturating_add(self.window));
        self.reset_known = false;
        self.reset_epoch = None;
        self.recompute();
    }

    /// The estimate from the floor (or the assumed limit) and the cost in flight.
    #[inline]
    fn recompute(&mut self) {
        let arriving = if self.read { 0 } else { self.roll_arriving };
        let top = self
            .floor
            .unwrap_or(self.limit)
            .min(self.limit)
            .saturating_sub(arriving);
        self.remaining = top.saturating_sub(self.inflight);
    }

    /// Charges a grant; returns the ledger value the grant carries.
    #[inline]
    pub fn charge(&mut self, cost: u64, now: Nanos) -> u64 {
        if self.reset_at.is_none() {
            self.reset_at = Some(now.saturating_add(self.window));
            self.unanchored_end = None;
        }
        self.remaining = self.remaining.saturating_sub(cost);
        self.inflight = self.inflight.saturating_add(cost);
        self.ledger = self.ledger.saturating_add(cost);
        self.ledger
    }

    /// A grant of `cost` was released unused: the call was not made, its cost comes back.
    #[inline]
    pub fn refund(&mut self, cost: u64) {
        self.inflight = self.inflight.saturating_sub(cost);
        self.recompute();
    }

    /// Calls of `cost` were made but will bring no reading (answered without headers, or
    /// past their call bound): counted as spent.
    pub fn spent_unread(&mut self, cost: u64, now: Nanos) {
        self.spent_unread_arriving_by(cost, 0, now);
    }

    /// As [`spent_unread`](Self::spent_unread), for calls that may still reach the server
    /// until `arriving_by` (no response, or their agent's lease expired within their call
    /// bound): a later grant's reading may not count them either.
    pub fn spent_unread_arriving_by(&mut self, cost: u64, arriving_by: Nanos, now: Nanos) {
        self.inflight = self.inflight.saturating_sub(cost);
        if cost > 0 {
            self.prune_unread(now);
            self.unread.push_back(Unread {
                settled: self.ledger,
                cost,
                arriving_by,
                keep_until: now.max(arriving_by).saturating_add(self.call_bound),
            });
        }
        let floor = self.floor.unwrap_or(self.limit);
        self.floor = Some(floor.saturating_sub(cost));
        self.recompute();
    }

    /// Forgets the calls settled unread that no reading still to come can miss.
    fn prune_unread(&mut self, now: Nanos) {
        self.unread.retain(|u| u.keep_until > now);
    }

    /// The cost of the calls settled unread since the grant `granted` was made (since the
    /// window began, for a reading of no grant): they may have reached the server after that
    /// grant's call, and its reading would not count them. One settled before the grant was
    /// made had reached the server before, unless it may arrive later. A grant settled
    /// unread itself (by its call bound) is among them, but its reading counts it.
    fn unread_since(&self, granted: Option<Answering>) -> u64 {
        let of_window = (self.window_ledger, self.window_began);
        let (l, at) = granted.map_or(of_window, |g| (g.ledger, g.granted_at));
        let own = granted.map_or(0, |g| g.settled_unread);
        let all: u64 = self
            .unread
            .iter()
            .filter(|u| u.may_follow(l, at))
            .map(|u| u.cost)
            .sum();
        all.saturating_sub(own)
    }

    /// Applies a response: its header reading (any of `limit`, `remaining`, `reset_at`, and
    /// `epoch`, the reset as the header gave it if in epoch seconds), the grant it answers
    /// (`granted`), and, if that grant is still counted in flight, its `answered` cost.
    #[allow(clippy::too_many_arguments)]
    pub fn apply(
        &mut self,
        limit: Option<u64>,
        remaining: Option<u64>,
        reset_at: Option<Nanos>,
        epoch: Option<u64>,
        granted: Option<Answering>,
        answered: Option<u64>,
        now: Nanos,
        light: &TrafficLight,
    ) -> Applied {
        let mut out = Applied::default();
        self.prune_unread(now);
        let stale = reset_at.is_some_and(|r| r <= now);
        let answered = answered.unwrap_or(0);
        if stale {
            // A late response from a window that is already over: a reading there shows the
            // call was counted there; without one it may count here. Nothing else follows.
            if remaining.is_some() {
                self.inflight = self.inflight.saturating_sub(answered);
                self.recompute();
            } else {
                self.spent_unread(answered, now);
            }
            return out;
        }
        if remaining.is_none() {
            // No reading: the call counts as spent.
            self.spent_unread(answered, now);
        } else {
            self.inflight = self.inflight.saturating_sub(answered);
        }
        if let Some(l) = limit.filter(|&l| l > 0 && l != self.limit) {
            self.limit = l;
            self.floors(light);
            out.limit_changed = true;
        }
        if let Some(r) = reset_at {
            let later = match (epoch, self.reset_epoch) {
                // Two epoch headers are compared as the server sent them: a step of this
                // host's wall clock moves where they fall on the monotonic clock, which
                // must not read as a new window (it would restart the floor).
                (Some(e), Some(old)) => e > old.saturating_add(SAME_RESET / NANOS_PER_SEC),
                _ => self
                    .reset_at
                    .is_some_and(|old| r > old.saturating_add(SAME_RESET)),
            };
            out.new_window = self.reset_known && later;
            let differs = self.reset_at.is_none_or(|old| r.abs_diff(old) > SAME_RESET);
            if differs || !self.reset_known || out.new_window {
                self.reset_at = Some(r);
                self.reset_known = true;
                self.reset_epoch = epoch;
            }
        }
        // What the reading may not count, as of the window it was taken in (a reading of no
        // grant that opens a new window: as of the old one's start).
        let cut = self.unread_since(granted);
        if out.new_window {
            self.window_ledger = self.ledger;
            self.window_began = now;
        }
        if let Some(rem) = remaining {
            // A new window, or the first reading that replaces an assumed or changed limit,
            // starts the floor afresh; otherwise the server's count only falls.
            let rem = rem.saturating_sub(cut);
            self.read = true;
            self.floor = match self.floor {
                Some(f) if !out.new_window && !out.limit_changed => Some(f.min(rem)),
                _ => Some(rem),
            };
        }
        self.recompute();
        out
    }

    /// The quota is spent (a primary limit was hit), until the window resets; with no reset
    /// known (no header, no grant yet this window), until `until`, so a spent quota always
    /// comes back (it used to stay at 0 for good).
    pub fn exhaust(&mut self, until: Nanos) {
        self.floor = Some(0);
        self.remaining = 0;
        if self.reset_at.is_none() {
            self.reset_at = Some(until);
        }
    }
}
