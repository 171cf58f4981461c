//! Shim so that concurrency-critical code can be model-checked with loom (`RUSTFLAGS="--cfg loom"`).
#![allow(unused_imports, dead_code)]

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::{Arc, Mutex, MutexGuard};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::Arc;

/// A mutex with parking_lot's API in normal builds and loom's model in `cfg(loom)` builds.
#[cfg(not(loom))]
pub(crate) type Mutex<T> = parking_lot::Mutex<T>;
#[cfg(not(loom))]
pub(crate) type MutexGuard<'a, T> = parking_lot::MutexGuard<'a, T>;

/// Locks a mutex; loom's `lock()` returns a `Result`, parking_lot's does not.
#[cfg(not(loom))]
#[inline]
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock()
}

/// Locks a mutex; loom's `lock()` returns a `Result`, parking_lot's does not.
#[cfg(loom)]
#[inline]
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
