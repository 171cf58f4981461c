//! An agent's grants in flight by age, so that a grant never settled (dropped without
//! observe or release, or held by a task that hangs) is settled once
//! [`Leases::call_bound`](crate::governor::Leases::call_bound) has passed, instead of holding
//! its cost out of the quota estimate and its concurrency slot for good. (Only the expiry of
//! its agent's lease settled it before, and an active agent's lease never expires: with a
//! concurrency cap, as many dropped grants as the cap stopped every agent.)
//!
//! Grants are counted per *epoch*, a power-of-two slice of the clock (`now >> shift`, no
//! division on the fast path), in a ring of [`SLOTS`] per agent: a grant adds to its epoch's
//! slot and carries the epoch, its settlement takes it back out, and the sweep settles the
//! slots whose epoch is old enough. A fixed few bytes per agent, however many grants are
//! dropped.

use super::time::Nanos;

/// Epochs remembered per agent. Enough for every epoch not yet due (at most
/// [`Ages::due_after`] + 1 of them) plus the current one.
const SLOTS: usize = 8;

/// The epoch arithmetic of one call bound.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ages {
    /// An epoch is `now >> shift` nanoseconds: the largest power of two at most half the
    /// bound (at least 1 ns).
    shift: u32,
    /// A slot of epoch `e` is due once the current epoch is past `e + due_after`:
    /// `ceil(bound / width)`, 2 to 4. Its grants are then between one and two bounds old.
    due_after: u64,
}

impl Ages {
    pub fn new(call_bound: Nanos) -> Self {
        let half = (call_bound / 2).max(1);
        let shift = 63 - half.leading_zeros();
        let width = 1u64 << shift;
        Self {
            shift,
            due_after: call_bound.div_ceil(width),
        }
    }

    #[inline(always)]
    pub fn epoch(&self, now: Nanos) -> u64 {
        now >> self.shift
    }

    /// When epoch `epoch` ends.
    pub fn end_of(&self, epoch: u64) -> Nanos {
        epoch.saturating_add(1).saturating_mul(1u64 << self.shift)
    }

    /// Whether grants of `epoch` are due at epoch `current`.
    #[inline]
    fn due(&self, epoch: u64, current: u64) -> bool {
        current > epoch.saturating_add(self.due_after)
    }
}

/// Grants of one epoch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Slot {
    pub epoch: u64,
    pub count: u32,
    pub cost: u64,
}

/// One agent's grants in flight on one resource, by epoch.
#[derive(Debug, Clone, Default)]
pub(crate) struct Flights {
    slots: [Slot; SLOTS],
}

impl Flights {
    #[inline(always)]
    fn slot(&mut self, epoch: u64) -> &mut Slot {
        &mut self.slots[(epoch % SLOTS as u64) as usize]
    }

    /// Whether a grant of `epoch` can be counted now (its slot is free or already its
    /// epoch's); if not, an older epoch's slot is in the way: [`take_slot`](Self::take_slot).
    #[inline(always)]
    pub fn can_open(&self, epoch: u64) -> bool {
        let s = &self.slots[(epoch % SLOTS as u64) as usize];
        s.count == 0 || s.epoch == epoch
    }

    /// Counts a grant of `epoch` (after [`can_open`](Self::can_open)).
    #[inline(always)]
    pub fn open(&mut self, epoch: u64, cost: u64) {
        let s = self.slot(epoch);
        if s.count == 0 {
            *s = Slot {
                epoch,
                count: 0,
                cost: 0,
            };
        }
        s.count = s.count.saturating_add(1);
        s.cost = s.cost.saturating_add(cost);
    }

    /// Settles a grant of `epoch`; `false` if that epoch was settled already (by the sweep,
    /// past the bound).
    #[inline]
    pub fn close(&mut self, epoch: u64, cost: u64) -> bool {
        let s = self.slot(epoch);
        if s.count == 0 || s.epoch != epoch {
            return false;
        }
        s.count -= 1;
        s.cost = s.cost.saturating_sub(cost);
        true
    }

    /// Empties the slot in the way of `epoch` and returns what it held.
    pub fn take_slot(&mut self, epoch: u64) -> Slot {
        std::mem::take(self.slot(epoch))
    }

    /// Empties every slot due at `now` and hands each to `settle`.
    pub fn take_due(&mut self, ages: &Ages, now: Nanos, mut settle: impl FnMut(Slot)) {
        let current = ages.epoch(now);
        for s in &mut self.slots {
            if s.count > 0 && ages.due(s.epoch, current) {
                settle(std::mem::take(s));
            }
        }
    }

    /// Forgets every grant (its agent's lease expired: the sweep settled them).
    pub fn clear(&mut self) {
        self.slots = [Slot::default(); SLOTS];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Nanos = 1_000_000_000;

    #[test]
    fn g5_epochs_make_a_grant_due_between_one_and_two_bounds_after_it() {
        for bound in [4, 7, 1_000, 30 * S, 3_600 * S, 86_400 * S] {
            let ages = Ages::new(bound);
            assert!((2..=4).contains(&ages.due_after), "{bound}: {ages:?}");
            assert!(ages.due_after as usize + 2 <= SLOTS);
            for at in [0, 1, bound / 3, 5 * bound + 3] {
                let e = ages.epoch(at);
                // Not due before the bound has passed…
                assert!(!ages.due(e, ages.epoch(at + bound - 1)), "{bound} {at}");
                // …due by twice the bound.
                assert!(ages.due(e, ages.epoch(at + 2 * bound)), "{bound} {at}");
            }
        }
    }

    #[test]
    fn g5_grants_are_counted_by_epoch_and_settled_once() {
        let mut f = Flights::default();
        f.open(3, 2);
        f.open(3, 1);
        f.open(4, 5);
        assert!(f.close(3, 2));
        assert!(f.close(3, 1));
        assert!(!f.close(3, 1), "epoch 3 has nothing left");
        assert!(!f.close(12, 5), "epoch 12 shares 4's slot but is not 4");
        assert!(f.close(4, 5));
    }

    #[test]
    fn g5_due_slots_are_taken_whole() {
        let ages = Ages::new(4 * S); // width 2^31 ns, due after 2 epochs
        let mut f = Flights::default();
        let e0 = ages.epoch(0);
        f.open(e0, 1);
        f.open(e0, 2);
        let e1 = ages.epoch(5 * S);
        f.open(e1, 7);
        let mut taken = Vec::new();
        f.take_due(&ages, 8 * S, |s| taken.push(s));
        assert_eq!(
            taken,
            vec![Slot {
                epoch: e0,
                count: 2,
                cost: 3
            }]
        );
        assert!(!f.close(e0, 1), "settled by the sweep");
        assert!(f.close(e1, 7));
    }

    #[test]
    fn g5_an_old_epoch_in_the_way_is_taken_before_a_new_one_opens() {
        let mut f = Flights::default();
        f.open(1, 1);
        assert!(!f.can_open(1 + SLOTS as u64));
        assert_eq!(f.take_slot(1 + SLOTS as u64).count, 1);
        assert!(f.can_open(1 + SLOTS as u64));
        f.clear();
        assert!(!f.close(1, 1));
    }
}
