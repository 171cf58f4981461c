//! The line of waiting requests on one resource, in priority order.
//!
//! Strict priority: a request is not granted while a waiter of higher priority is in line
//! for something the request competes for (the same pacing rule, or the quota as a whole),
//! nor while an earlier waiter of the same priority is due. A waiter held by a rule the
//! request does not match (a create waiting on a creation window, a read asking) holds it
//! back only while its own wait ends within `Pacing::unrelated_hold`: priority stays strict
//! for short waits, and a long one is not head-of-line blocking for everyone else.

use super::super::config::Selector;
use super::super::decision::AgentId;
use super::super::priority::Priority;
use super::super::request::RequestKind;
use super::time::Nanos;

#[derive(Debug, Clone)]
pub(crate) struct Waiter {
    pub id: u64,
    pub agent: AgentId,
    pub priority: Priority,
    pub enqueued: Nanos,
    /// Not before this time (G1 amber delay, G6 release time).
    pub not_before: Nanos,
    /// Whether `not_before` is a G6 release time.
    pub released_by_block: bool,
    /// The block epoch `not_before` was drawn for (`u32::MAX`: none).
    pub block_epoch: u32,
    /// When it was told to come back.
    pub until: Nanos,
    /// What it waits for: the requests a pacing rule counts, or `None` for the quota as a
    /// whole (a block, the light, even spend, the line itself).
    pub scope: Option<Selector>,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Queue {
    waiters: Vec<Waiter>,
    next_id: u64,
}

impl Queue {
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.waiters.is_empty()
    }

    pub fn len(&self) -> usize {
        self.waiters.len()
    }

    /// A fresh id; ids grow, so a smaller id was in line earlier.
    pub fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    pub fn get(&self, id: u64, agent: AgentId) -> Option<&Waiter> {
        self.waiters.iter().find(|w| w.id == id && w.agent == agent)
    }

    pub fn remove(&mut self, id: u64) {
        self.waiters.retain(|w| w.id != id);
    }

    pub fn upsert(&mut self, w: Waiter) {
        match self.waiters.iter_mut().find(|x| x.id == w.id) {
            Some(x) => *x = w,
            None => self.waiters.push(w),
        }
    }

    /// If a waiter ahead of (`id`, `priority`, asking for a `kind` request) holds it back
    /// at `now`, the earliest time one of them was told to come back, and what it waits
    /// for. Waiters for a rule that does not count `kind` hold it back only while they are
    /// due by `now + unrelated_hold`.
    pub fn ahead(
        &self,
        id: u64,
        priority: Priority,
        kind: RequestKind,
        now: Nanos,
        unrelated_hold: Nanos,
    ) -> Option<(Nanos, Option<Selector>)> {
        let soon = now.saturating_add(unrelated_hold);
        self.waiters
            .iter()
            .filter(|w| {
                w.id != id
                    && (w.priority < priority
                        || (w.priority == priority && w.id < id && w.until <= now))
                    && (w.scope.is_none_or(|s| s.matches(kind)) || w.until <= soon)
            })
            .min_by_key(|w| w.until)
            .map(|w| (w.until, w.scope))
    }

    /// Drops every waiter of `agent` (its lease expired).
    pub fn remove_agent(&mut self, agent: AgentId) {
        self.waiters.retain(|w| w.agent != agent);
    }

    /// Drops waiters that did not come back within `grace` of their time; returns how many.
    pub fn expire(&mut self, now: Nanos, grace: Nanos) -> usize {
        let before = self.waiters.len();
        self.waiters
            .retain(|w| w.until.saturating_add(grace) >= now);
        before - self.waiters.len()
    }
}
