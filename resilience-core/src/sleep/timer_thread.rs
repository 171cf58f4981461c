//! The deadline timers of the no-`tokio` fallback ([`BlockingAsyncSleeper`]): one thread
//! wakes every armed timer at its instant, so arming a deadline never blocks the polling
//! thread.
//!
//! [`BlockingAsyncSleeper`]: super::BlockingAsyncSleeper

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// The timers waiting, by instant (and an id, to keep equal instants apart), and the
/// condition the thread waits on when the earliest one changes.
#[derive(Default)]
struct Timers {
    due: Mutex<Due>,
    changed: Condvar,
}

#[derive(Default)]
struct Due {
    next_id: u64,
    wakers: BTreeMap<(Instant, u64), Waker>,
}

/// A poisoned lock only means a waker panicked while being replaced; the map is whole.
fn lock(timers: &Timers) -> MutexGuard<'_, Due> {
    timers.due.lock().unwrap_or_else(|p| p.into_inner())
}

/// The shared timers and their thread, started on first use; `None` if the thread could not
/// be started (a deadline then never fires: the attempt is not cancelled, nothing blocks).
fn timers() -> Option<&'static Arc<Timers>> {
    static TIMERS: OnceLock<Option<Arc<Timers>>> = OnceLock::new();
    TIMERS
        .get_or_init(|| {
            let timers = Arc::new(Timers::default());
            let worker = Arc::clone(&timers);
            std::thread::Builder::new()
                .name("resilience-deadlines".into())
                .spawn(move || run(&worker))
                .ok()
                .map(|_| timers)
        })
        .as_ref()
}

/// The thread: wakes what is due, then waits for the next instant or a new earliest timer.
fn run(timers: &Timers) {
    let mut due = lock(timers);
    loop {
        let now = Instant::now();
        let later = due.wakers.split_off(&(now, u64::MAX));
        let ready = std::mem::replace(&mut due.wakers, later);
        if !ready.is_empty() {
            // Woken outside the lock: a waker may poll at once and re-arm.
            drop(due);
            ready.into_values().for_each(Waker::wake);
            due = lock(timers);
            continue;
        }
        due = match due.wakers.keys().next() {
            None => timers.changed.wait(due).unwrap_or_else(|p| p.into_inner()),
            Some(&(at, _)) => {
                let wait = at.saturating_duration_since(now);
                timers
                    .changed
                    .wait_timeout(due, wait)
                    .unwrap_or_else(|p| p.into_inner())
                    .0
            }
        };
    }
}

/// A future ready at an instant, woken by the timer thread.
pub(super) struct Deadline {
    /// `None`: a delay past what `Instant` can hold, which never comes.
    at: Option<Instant>,
    /// The id of this timer's entry while it has one.
    id: Option<u64>,
}

impl Deadline {
    pub(super) fn after(delay: Duration) -> Self {
        Self {
            at: Instant::now().checked_add(delay),
            id: None,
        }
    }
}

impl Future for Deadline {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let Some(at) = self.at else {
            return Poll::Pending;
        };
        if Instant::now() >= at {
            return Poll::Ready(());
        }
        let Some(timers) = timers() else {
            return Poll::Pending;
        };
        let mut due = lock(timers);
        let id = match self.id {
            Some(id) => id,
            None => {
                let id = due.next_id;
                due.next_id = id.wrapping_add(1);
                id
            }
        };
        self.id = Some(id);
        let first = due.wakers.keys().next().is_none_or(|&(next, _)| at < next);
        due.wakers.insert((at, id), cx.waker().clone());
        drop(due);
        if first {
            timers.changed.notify_one();
        }
        Poll::Pending
    }
}

impl Drop for Deadline {
    fn drop(&mut self) {
        if let (Some(at), Some(id), Some(timers)) = (self.at, self.id, timers()) {
            lock(timers).wakers.remove(&(at, id));
        }
    }
}
