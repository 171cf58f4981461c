//! A retry policy that can be replaced while calls run, read without a lock on the success path.

use super::policy::RetryPolicy;
use parking_lot::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// Holds a service's [`RetryPolicy`]. The two fields every call reads (attempt count and the
/// idempotent-only switch) are packed in one atomic; the rest is read under a lock, and only
/// after a failure.
#[derive(Debug)]
pub(crate) struct PolicyCell {
    gate: AtomicU64,
    full: RwLock<RetryPolicy>,
}

fn pack(p: &RetryPolicy) -> u64 {
    (u64::from(p.max_attempts()) << 1) | u64::from(p.retry_on_idempotent_only())
}

impl PolicyCell {
    pub(crate) fn new(policy: RetryPolicy) -> Self {
        Self {
            gate: AtomicU64::new(pack(&policy)),
            full: RwLock::new(policy),
        }
    }

    /// `(max_attempts, retry_on_idempotent_only)`, lock-free.
    #[inline]
    pub(crate) fn gate(&self) -> (u32, bool) {
        let g = self.gate.load(Ordering::Acquire);
        (u32::try_from(g >> 1).unwrap_or(u32::MAX), g & 1 == 1)
    }

    pub(crate) fn get(&self) -> RetryPolicy {
        *self.full.read()
    }

    pub(crate) fn set(&self, policy: RetryPolicy) {
        let mut full = self.full.write();
        *full = policy;
        self.gate.store(pack(&policy), Ordering::Release);
    }
}
