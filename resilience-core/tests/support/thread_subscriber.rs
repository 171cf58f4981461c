//! Per-thread `tracing` capture without `with_default`'s flakiness.
//!
//! `tracing::subscriber::with_default` in parallel tests races with callsite-interest caching:
//! a callsite first hit on a thread with no subscriber can be cached as "never" while another
//! thread installs its scoped subscriber, and that test then sees no events. Instead, one
//! global router (interest: always) forwards every call to the subscriber set for the current
//! thread, if any. Shared by the test binaries of several crates via `#[path]`.
#![allow(dead_code)]

use std::cell::RefCell;
use std::sync::Once;
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Dispatch, Event, Metadata, Subscriber};

thread_local! {
    static ROUTE: RefCell<Option<Dispatch>> = const { RefCell::new(None) };
}

struct Router;

fn routed<R>(f: impl FnOnce(&Dispatch) -> R) -> Option<R> {
    ROUTE.with(|r| r.borrow().as_ref().map(f))
}

impl Subscriber for Router {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
        Interest::always()
    }
    fn enabled(&self, meta: &Metadata<'_>) -> bool {
        routed(|d| d.enabled(meta)).unwrap_or(false)
    }
    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        routed(|d| d.new_span(attrs)).unwrap_or_else(|| Id::from_u64(1))
    }
    fn record(&self, id: &Id, values: &Record<'_>) {
        routed(|d| d.record(id, values));
    }
    fn record_follows_from(&self, id: &Id, follows: &Id) {
        routed(|d| d.record_follows_from(id, follows));
    }
    fn event(&self, event: &Event<'_>) {
        routed(|d| d.event(event));
    }
    fn enter(&self, id: &Id) {
        routed(|d| d.enter(id));
    }
    fn exit(&self, id: &Id) {
        routed(|d| d.exit(id));
    }
}

/// Runs `f` with `subscriber` receiving every event emitted on this thread.
pub fn with_thread_subscriber<S, T>(subscriber: S, f: impl FnOnce() -> T) -> T
where
    S: Subscriber + Send + Sync + 'static,
{
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        let _ = tracing::subscriber::set_global_default(Router);
    });
    struct Reset(Option<Dispatch>);
    impl Drop for Reset {
        fn drop(&mut self) {
            let prev = self.0.take();
            ROUTE.with(|r| *r.borrow_mut() = prev);
        }
    }
    let prev = ROUTE.with(|r| r.borrow_mut().replace(Dispatch::new(subscriber)));
    let _reset = Reset(prev);
    f()
}
