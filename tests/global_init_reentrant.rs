//! The process-wide runtime's first load (C8: a bad env value is logged) must not hang when a
//! `tracing` subscriber ships warnings through a guarded call, as an alerting client built
//! with the attribute would. The warnings used to be emitted inside the runtime's one-time
//! initialiser, which the shipping call re-entered: every guarded call of the process then
//! blocked.
//!
//! Its own test binary: it sets an env var and the global subscriber, and the first guarded
//! call of the process must be the one under test. A hang is caught by a timeout on a
//! channel, far above the microseconds the call takes.

mod shipping_support;

use resilience::retry_service_operation;
use shipping_support::{returns, AlertError, Shipper};
use std::sync::atomic::{AtomicU32, Ordering};

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

#[test]
fn c8_the_first_guarded_call_does_not_hang_when_a_subscriber_ships_config_warnings_through_a_guarded_call(
) {
    std::env::set_var("CLEVERAGENTS_RETRY_MAX_ATTEMPTS", "three");
    let shipper = Shipper {
        targets: &["resilience_config"],
        ship: || {
            let _ = send_alert();
        },
    };
    tracing::subscriber::set_global_default(shipper).expect("the only subscriber");
    let out = returns("the first guarded call", || get_plan().ok());
    assert_eq!(out, Some(1));
    assert_eq!(
        ALERTS.load(Ordering::SeqCst),
        1,
        "the one bad value was logged once, and shipped"
    );
}
