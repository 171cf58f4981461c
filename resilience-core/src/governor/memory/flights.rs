//! Grants in flight, oldest first, so that a grant never settled (dropped without observe or
//! release, or held by a task that hangs) is settled after
//! [`Leases::call_bound`](crate::governor::Leases::call_bound) instead of holding its cost
//! out of the quota estimate and its concurrency slot for good. Without this, an agent that
//! stays active keeps its lease, so its dropped grants were never settled: with a
//! concurrency cap, as many dropped grants as the cap stopped every agent for good.
//!
//! Grants are numbered in the order they are made, so a grant's entry is found by
//! subtraction; settled entries at the front are dropped, and in the usual case (grants
//! settled within moments, roughly in order) the list holds a handful.

use super::super::decision::AgentId;
use super::time::Nanos;
use std::collections::VecDeque;

/// Most grants remembered at once. Past this, the oldest still open is settled early, as
/// if its bound had passed: memory stays bounded however many grants are dropped.
pub(super) const MAX_TRACKED: usize = 4096;

/// One grant in flight.
#[derive(Debug, Clone, Copy)]
pub(super) struct Flight {
    /// When it was granted.
    pub at: Nanos,
    pub agent: AgentId,
    pub cost: u32,
    /// The agent's lease episode when granted.
    pub lease: u32,
    open: bool,
}

#[derive(Debug, Default)]
pub(super) struct Flights {
    /// The number of `list[0]`.
    front: u64,
    list: VecDeque<Flight>,
}

impl Flights {
    /// Records a grant; returns its number.
    #[inline]
    pub fn open(&mut self, at: Nanos, agent: AgentId, cost: u32, lease: u32) -> u64 {
        let number = self.front + self.list.len() as u64;
        self.list.push_back(Flight {
            at,
            agent,
            cost,
            lease,
            open: true,
        });
        number
    }

    /// Settles grant `number`; `false` if it was settled already (by its bound, or by the
    /// sweep of its agent's expired lease).
    #[inline]
    pub fn close(&mut self, number: u64) -> bool {
        let Some(i) = number.checked_sub(self.front) else {
            return false;
        };
        let Some(flight) = self.list.get_mut(i as usize) else {
            return false;
        };
        let was_open = std::mem::replace(&mut flight.open, false);
        self.trim();
        was_open
    }

    /// Settles and returns the oldest grant due: open since before `before`, or the oldest
    /// open one while more than [`MAX_TRACKED`] are remembered.
    pub fn pop_due(&mut self, before: Nanos) -> Option<Flight> {
        self.trim();
        let oldest = *self.list.front()?;
        if oldest.at >= before && self.list.len() <= MAX_TRACKED {
            return None;
        }
        self.list.pop_front();
        self.front += 1;
        self.trim();
        Some(oldest)
    }

    /// Settles every grant of `agent` (its lease expired; the sweep counted them).
    pub fn close_agent(&mut self, agent: AgentId) {
        for flight in self.list.iter_mut().filter(|f| f.agent == agent) {
            flight.open = false;
        }
        self.trim();
    }

    /// How many grants are remembered (open ones and settled ones behind an open one).
    #[inline]
    pub fn len(&self) -> usize {
        self.list.len()
    }

    #[inline]
    fn trim(&mut self) {
        while self.list.front().is_some_and(|f| !f.open) {
            self.list.pop_front();
            self.front += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(n: u32) -> AgentId {
        AgentId(n)
    }

    #[test]
    fn g5_settled_grants_leave_the_list_and_an_open_one_holds_the_ones_behind_it() {
        let mut f = Flights::default();
        let a = f.open(1, agent(0), 1, 0);
        let b = f.open(2, agent(0), 1, 0);
        let c = f.open(3, agent(1), 1, 0);
        assert!(f.close(b));
        assert!(!f.close(b), "settled once");
        assert_eq!(f.len(), 3, "b waits behind the open a");
        assert!(f.close(a));
        assert_eq!(f.len(), 1, "a and b gone; c open");
        assert!(f.close(c));
        assert_eq!(f.len(), 0);
        assert!(!f.close(a), "numbers before the front are settled");
        assert!(!f.close(99), "numbers never given are not open");
    }

    #[test]
    fn g5_only_grants_open_past_the_bound_are_due_oldest_first() {
        let mut f = Flights::default();
        let a = f.open(10, agent(0), 2, 0);
        let b = f.open(20, agent(1), 3, 0);
        let _c = f.open(30, agent(0), 1, 0);
        assert!(f.close(b));
        assert!(f.pop_due(10).is_none(), "a is not older than 10");
        let due = f.pop_due(31).expect("a is due");
        assert_eq!((due.at, due.cost), (10, 2));
        let due = f.pop_due(31).expect("c is due, b was settled");
        assert_eq!((due.at, due.cost), (30, 1));
        assert!(f.pop_due(u64::MAX).is_none());
        assert!(!f.close(a), "a was settled as due");
    }

    #[test]
    fn g5_past_the_cap_the_oldest_open_grant_is_due_at_once() {
        let mut f = Flights::default();
        for i in 0..=MAX_TRACKED as u64 {
            f.open(100 + i, agent(0), 1, 0);
        }
        let due = f.pop_due(0).expect("over the cap");
        assert_eq!(due.at, 100);
        assert!(f.pop_due(0).is_none(), "back at the cap");
    }

    #[test]
    fn g5_an_expired_lease_settles_its_agents_grants() {
        let mut f = Flights::default();
        let a = f.open(1, agent(0), 1, 0);
        let b = f.open(2, agent(1), 1, 0);
        f.close_agent(agent(0));
        assert!(!f.close(a));
        assert_eq!(f.len(), 1);
        assert!(f.close(b));
    }
}
