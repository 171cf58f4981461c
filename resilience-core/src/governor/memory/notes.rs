//! The store's log lines, kept while a resource is locked and emitted once it is unlocked, as
//! the breaker does (B8). A `tracing` subscriber may do slow I/O, which would stall every
//! agent of the resource, or ship its lines through a governed call, which would re-enter
//! the resource's lock and hang its thread.
//!
//! Notes wait in a per-thread buffer: the state under the lock only records that it noted
//! something, so the unlock costs one flag test when nothing was noted (the fast path).
//! During the thread's own teardown, once that buffer is destroyed (a governor call from
//! another thread-local's destructor), notes wait in the locked state instead, and are
//! emitted after the unlock all the same.
//!
//! A subscriber that panics on a line loses none of the lines after it: they go back to the
//! buffer, for the thread's next unlock that noted something to emit first.

use super::super::decision::{AgentId, RefusalReason};
use super::super::observation::LimitKind;
use super::super::store::Zone;
use super::super::EVENT_TARGET as TARGET;
use super::state::ResourceState;
use parking_lot::MutexGuard;
use std::cell::RefCell;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::time::Duration;

/// One log line of the store, its fields kept until the lock is released.
#[derive(Debug, Clone, Copy)]
pub(super) enum Note {
    /// G6, through [`GovernorStore::block`](super::super::GovernorStore::block).
    RetryAfterNoted { block: Duration },
    /// G6: a rate-limited response.
    RateLimited {
        agent: AgentId,
        kind: LimitKind,
        block: Duration,
    },
    /// G1.
    ZoneChanged { zone: Zone, remaining: u64 },
    /// G3.
    BreakerClosedByNewWindow,
    /// G3.
    BreakerClosedByQuiet,
    /// G3.
    BreakerProjected { remaining: u64 },
    /// G3.
    BreakerClosed,
    /// G3.
    BreakerOpenedOnLimit,
    /// G4.
    SequentialOffByNewWindow,
    /// G4.
    SequentialOffLimitCleared,
    /// G4.
    CascadeDetected,
    /// G4.
    DownstreamWarned {
        upstream: AgentId,
        downstream: AgentId,
    },
    /// G5.
    LeaseExpired { agent: AgentId },
    /// G5.
    AgentActiveAgain { agent: AgentId },
    /// Grants neither observed nor released within the call bound.
    Unsettled { calls: u32 },
    /// The quota window rolled.
    WindowReset,
    /// A request was refused.
    Refused {
        agent: AgentId,
        reason: RefusalReason,
    },
}

impl Note {
    /// Emits the line; call with no resource locked.
    fn emit(self, resource: &str) {
        match self {
            Self::RetryAfterNoted { block } => tracing::warn!(
                target: TARGET,
                resource,
                block_s = block.as_secs_f64(),
                "governor: retry-after noted; every agent waits, then is released by priority (G6)"
            ),
            Self::RateLimited { agent, kind, block } => tracing::warn!(
                target: TARGET,
                resource,
                agent = agent.0,
                ?kind,
                block_s = block.as_secs_f64(),
                "governor: rate limited; every agent waits, then is released by priority (G6)"
            ),
            Self::ZoneChanged { zone, remaining } => tracing::info!(
                target: TARGET,
                resource,
                ?zone,
                remaining,
                "governor: traffic light changed (G1)"
            ),
            Self::BreakerClosedByNewWindow => tracing::info!(
                target: TARGET,
                resource,
                "governor: new quota window, predictive breaker closed (G3)"
            ),
            Self::BreakerClosedByQuiet => tracing::info!(
                target: TARGET,
                resource,
                "governor: nothing observed for the horizon, predictive breaker closed (G3)"
            ),
            Self::BreakerProjected { remaining } => tracing::warn!(
                target: TARGET,
                resource,
                remaining,
                "governor: quota projected to run out before reset, throttling (G3)"
            ),
            Self::BreakerClosed => {
                tracing::info!(target: TARGET, resource, "governor: predictive breaker closed (G3)")
            }
            Self::BreakerOpenedOnLimit => {
                tracing::warn!(target: TARGET, resource, "governor: breaker opened on a rate limit (G3)")
            }
            Self::SequentialOffByNewWindow => tracing::info!(
                target: TARGET,
                resource,
                "governor: new quota window, sequential mode off (G4)"
            ),
            Self::SequentialOffLimitCleared => tracing::info!(
                target: TARGET,
                resource,
                "governor: limit cleared, sequential mode off (G4)"
            ),
            Self::CascadeDetected => tracing::warn!(
                target: TARGET,
                resource,
                "governor: cascade detected, sequential mode on (G4)"
            ),
            Self::DownstreamWarned {
                upstream,
                downstream,
            } => tracing::warn!(
                target: TARGET,
                resource,
                upstream = upstream.0,
                downstream = downstream.0,
                "governor: upstream agent rate limited; downstream warned (G4)"
            ),
            Self::LeaseExpired { agent } => tracing::info!(
                target: TARGET,
                resource,
                agent = agent.0,
                "governor: lease expired, unused reservation returned to the pool (G5)"
            ),
            Self::AgentActiveAgain { agent } => tracing::debug!(
                target: TARGET,
                resource,
                agent = agent.0,
                "governor: agent active again, reservation held"
            ),
            Self::Unsettled { calls } => tracing::warn!(
                target: TARGET,
                resource,
                calls,
                "governor: grants neither observed nor released within the call bound, counted as spent (observe or release every grant; a Permit releases on drop)"
            ),
            Self::WindowReset => {
                tracing::debug!(target: TARGET, resource, "governor: quota window reset")
            }
            Self::Refused { agent, reason } => {
                tracing::debug!(target: TARGET, resource, agent = agent.0, %reason, "governor: refused")
            }
        }
    }
}

thread_local! {
    /// Notes taken on this thread under a lock not yet released.
    static PENDING: RefCell<Vec<(Arc<str>, Note)>> = const { RefCell::new(Vec::new()) };
}

/// Keeps `note` about `resource` until the lock is released; `false` during the thread's
/// own teardown, when its buffer is gone: the caller keeps it (in the locked state), never
/// emits it under the lock (B8).
pub(super) fn keep(resource: &Arc<str>, note: Note) -> bool {
    PENDING
        .try_with(|p| p.borrow_mut().push((resource.clone(), note)))
        .is_ok()
}

/// Emits the notes kept on this thread, oldest first. The buffer is taken out while they are
/// emitted: a subscriber that calls the store again notes into a fresh one.
#[cold]
fn flush() {
    let Ok(notes) = PENDING.try_with(|p| std::mem::take(&mut *p.borrow_mut())) else {
        return;
    };
    let mut left = Unemitted { notes, next: 0 };
    while let Some((resource, note)) = left.notes.get(left.next) {
        left.next += 1;
        note.emit(resource);
    }
    let mut notes = std::mem::take(&mut left.notes);
    notes.clear();
    // Keep the capacity for the next time, unless the buffer holds notes again (a section
    // still locked up this thread's stack took them; its unlock emits them).
    let _ = PENDING.try_with(|p| {
        let mut p = p.borrow_mut();
        if p.is_empty() {
            *p = notes;
        }
    });
}

/// The notes a flush has not emitted yet. If a subscriber panics while emitting one, the
/// rest go back to the front of the thread's buffer, to be emitted by its next flush, rather
/// than being lost with the unwinding (they are not emitted here: a second panic while
/// unwinding would abort).
struct Unemitted {
    notes: Vec<(Arc<str>, Note)>,
    next: usize,
}

impl Drop for Unemitted {
    fn drop(&mut self) {
        if self.next >= self.notes.len() {
            return;
        }
        let rest = self.notes.drain(self.next..);
        let _ = PENDING.try_with(|p| {
            let mut p = p.borrow_mut();
            p.splice(0..0, rest);
        });
    }
}

/// A locked resource whose notes are emitted when the lock is released.
pub(super) struct Locked<'a> {
    guard: Option<MutexGuard<'a, ResourceState>>,
}

impl<'a> Locked<'a> {
    #[inline]
    pub(super) fn new(guard: MutexGuard<'a, ResourceState>) -> Self {
        Self { guard: Some(guard) }
    }
}

impl Deref for Locked<'_> {
    type Target = ResourceState;
    #[inline]
    fn deref(&self) -> &ResourceState {
        self.guard
            .as_deref()
            .unwrap_or_else(|| unreachable!("guard taken only in drop"))
    }
}

impl DerefMut for Locked<'_> {
    #[inline]
    fn deref_mut(&mut self) -> &mut ResourceState {
        self.guard
            .as_deref_mut()
            .unwrap_or_else(|| unreachable!("guard taken only in drop"))
    }
}

impl Drop for Locked<'_> {
    #[inline]
    fn drop(&mut self) {
        if let Some(mut guard) = self.guard.take() {
            if guard.take_noted() {
                unlock_and_emit(guard);
            }
        }
    }
}

/// Unlocks, then emits what was noted. Out of line: the fast path (nothing noted) is only
/// the flag test and the unlock.
#[cold]
#[inline(never)]
fn unlock_and_emit(mut guard: MutexGuard<'_, ResourceState>) {
    let orphans = guard.take_orphans();
    drop(guard);
    flush();
    if let Some((resource, orphans)) = orphans {
        for note in orphans {
            note.emit(&resource);
        }
    }
}
