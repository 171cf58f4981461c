//! What the re-entrancy tests share: an error type for annotated fns, and a `tracing`
//! subscriber that ships each config event through a guarded call, as an alerting client
//! built with the attribute would.

use resilience::ResilienceError;
use std::cell::Cell;
use std::time::Duration;
use tracing::{span, Event, Metadata, Subscriber};

#[derive(Debug)]
pub struct AlertError;

impl From<ResilienceError> for AlertError {
    fn from(_: ResilienceError) -> Self {
        AlertError
    }
}

impl std::fmt::Display for AlertError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("alert not sent")
    }
}

thread_local! {
    /// Set while an event is being shipped, so the shipping call's own events are not.
    static SHIPPING: Cell<bool> = const { Cell::new(false) };
}

/// Calls `ship` for every event whose target is one of `targets`, except those the
/// shipping itself logs.
pub struct Shipper {
    pub targets: &'static [&'static str],
    pub ship: fn(),
}

impl Subscriber for Shipper {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &span::Attributes<'_>) -> span::Id {
        span::Id::from_u64(1)
    }
    fn record(&self, _: &span::Id, _: &span::Record<'_>) {}
    fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}
    fn event(&self, event: &Event<'_>) {
        if self.targets.contains(&event.metadata().target()) && !SHIPPING.with(|s| s.replace(true))
        {
            (self.ship)();
            SHIPPING.with(|s| s.set(false));
        }
    }
    fn enter(&self, _: &span::Id) {}
    fn exit(&self, _: &span::Id) {}
}

/// Runs `call` on its own thread; panics with `what` if it does not return within 60 s (far
/// above the microseconds it takes).
pub fn returns<T: Send + 'static>(what: &str, call: fn() -> T) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(call());
    });
    rx.recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| {
            panic!("{what} did not return within 60 s: an initialiser was re-entered")
        })
}
