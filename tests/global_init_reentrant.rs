//! The process-wide runtime's first load (C8: a bad env value is logged) must not hang when a
//! `tracing` subscriber ships warnings through a guarded call, as an alerting client built
//! with the attribute would. The warnings used to be emitted inside the runtime's one-time
//! initialiser, which the shipping call re-entered: every guarded call of the process then
//! blocked.
//!
//! Its own test binary: it sets an env var and the global subscriber, and the first guarded
//! call of the process must be the one under test. A hang is caught by a timeout on a
//! channel, far above the microseconds the call takes.

use resilience::{retry_service_operation, ResilienceError};
use std::cell::Cell;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::time::Duration;
use tracing::{span, Event, Metadata, Subscriber};

#[derive(Debug)]
struct AlertError;

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

static ALERTS: AtomicU32 = AtomicU32::new(0);

#[retry_service_operation(service = "alerts", idempotent)]
fn send_alert() -> Result<(), AlertError> {
    ALERTS.fetch_add(1, Ordering::SeqCst);
    Ok(())
}

#[retry_service_operation(service = "plan_service", idempotent)]
fn get_plan() -> Result<u32, AlertError> {
    Ok(1)
}

thread_local! {
    /// Set while an event is being shipped, so the shipping call's own events are not.
    static SHIPPING: Cell<bool> = const { Cell::new(false) };
}

/// Ships every config warning through a guarded call.
struct Shipper;

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
        if event.metadata().target() == "resilience_config" && !SHIPPING.with(|s| s.replace(true)) {
            let _ = send_alert();
            SHIPPING.with(|s| s.set(false));
        }
    }
    fn enter(&self, _: &span::Id) {}
    fn exit(&self, _: &span::Id) {}
}

#[test]
fn c8_the_first_guarded_call_does_not_hang_when_a_subscriber_ships_config_warnings_through_a_guarded_call(
) {
    std::env::set_var("CLEVERAGENTS_RETRY_MAX_ATTEMPTS", "three");
    tracing::subscriber::set_global_default(Shipper).expect("the only subscriber");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(get_plan().ok());
    });
    let out = rx
        .recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| {
            panic!("the first guarded call hung: the runtime's initialiser was re-entered")
        });
    assert_eq!(out, Some(1));
    assert_eq!(
        ALERTS.load(Ordering::SeqCst),
        1,
        "the one bad value was logged once, and shipped"
    );
}
