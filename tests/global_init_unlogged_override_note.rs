//! The sibling of `global_init_reentrant_first_call.rs` for the one note the config load logs
//! at debug level: a `service_name` key given once in an override is ignored (C7), and that
//! is said by a debug event. It must not fire inside the process-wide runtime's one-time
//! initialiser (C8's rule: nothing that logs runs in there), or a subscriber that ships debug
//! events through a guarded call re-enters that initialiser and the process hangs at its
//! first guarded call.
//!
//! Its own test binary: the global subscriber and the env var are process-wide, and the first
//! guarded call of the process must be the shipping one.

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

fn ship() {
    let _ = send_alert();
}

#[test]
fn c7_c8_an_ignored_service_name_note_is_not_logged_inside_the_global_initialiser() {
    std::env::set_var(
        "CLEVERAGENTS_RETRY_SERVICE_OVERRIDES",
        r#"{"plan_service":{"service_name":"plan_service","retry":{"max_attempts":2}}}"#,
    );
    let shipper = Shipper {
        targets: &["resilience_config"],
        ship,
    };
    tracing::subscriber::set_global_default(shipper).expect("the only subscriber");

    let sent = returns("the first guarded call (itself the shipping one)", || {
        send_alert().is_ok()
    });
    assert!(sent);
    assert_eq!(
        ALERTS.load(Ordering::SeqCst),
        2,
        "the call itself, and the ignored `service_name` note shipped once through it"
    );
}
