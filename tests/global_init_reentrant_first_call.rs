//! The sequel of `global_init_reentrant.rs`, for a subscriber's shipping call that is itself
//! the first use of its call site: nothing that logs may run inside a call site's one-time
//! initialiser, since the shipped log line re-enters that same initialiser (C8: a bad env
//! value is logged at the runtime's first load; an invalid declared policy is logged when its
//! site resolves). A re-entered `OnceLock` initialiser blocks its thread forever.
//!
//! Its own test binary: the global subscriber and the env var are process-wide, and the first
//! guarded call of the process must be the shipping one. A hang is caught by a timeout on a
//! channel, far above the microseconds each call takes.

mod shipping_support;

use resilience::__private::{CallSite, CodeDeclared};
use resilience::retry_service_operation;
use shipping_support::{returns, AlertError, Shipper};
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};

static ALERTS: AtomicU32 = AtomicU32::new(0);

#[retry_service_operation(service = "alerts", idempotent)]
fn send_alert() -> Result<(), AlertError> {
    ALERTS.fetch_add(1, Ordering::SeqCst);
    Ok(())
}

/// A call site whose declared values cannot make a policy (no attempt at all), written by
/// hand since the attribute refuses them at compile time: its first use logs the error.
static BROKEN_SITE: CallSite = CallSite::new(
    "pager",
    "page",
    CodeDeclared {
        max_attempts: Some(0),
        ..CodeDeclared::EMPTY
    },
);

static PAGES: AtomicU32 = AtomicU32::new(0);

fn page() {
    let _guard = BROKEN_SITE.guard();
    PAGES.fetch_add(1, Ordering::SeqCst);
}

/// Which fn the subscriber ships through: 0 `send_alert`, 1 `page`.
static SHIP_THROUGH: AtomicU8 = AtomicU8::new(0);

fn ship() {
    match SHIP_THROUGH.load(Ordering::SeqCst) {
        0 => {
            let _ = send_alert();
        }
        _ => page(),
    }
}

#[test]
fn c8_a_shipping_call_that_is_the_first_use_of_its_site_does_not_hang() {
    std::env::set_var("CLEVERAGENTS_RETRY_MAX_ATTEMPTS", "three");
    let shipper = Shipper {
        targets: &["resilience_config", "resilience::config"],
        ship,
    };
    tracing::subscriber::set_global_default(shipper).expect("the only subscriber");

    // The runtime's first load logs the bad env value, from inside `send_alert`'s first use.
    let sent = returns("the first guarded call (itself the shipping one)", || {
        send_alert().is_ok()
    });
    assert!(sent);
    assert_eq!(
        ALERTS.load(Ordering::SeqCst),
        2,
        "the call itself, and the bad env value's warning shipped once through it"
    );

    // A site with an invalid declared policy logs it when it first resolves; here the
    // shipping call is that site's first use.
    SHIP_THROUGH.store(1, Ordering::SeqCst);
    returns(
        "the first use of a site whose declared policy is invalid",
        page,
    );
    assert_eq!(
        PAGES.load(Ordering::SeqCst),
        2,
        "the call itself, and the invalid policy's error shipped once through it"
    );
}
