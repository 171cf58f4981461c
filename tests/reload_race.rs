//! A config reload racing a call site's first registration must not leave the site caching a
//! guard built from the old config (a lost update). Its own test binary: it installs the
//! process-wide runtime and a global `tracing` subscriber.
//!
//! The interleaving is forced, not hoped for: the runtime logs an error when a site's
//! declared values do not make a valid policy, and a subscriber pauses the registering thread
//! inside that event (after it read the config, before it published the site) until the
//! reloading thread is seen walking the registered sites.

mod config_support;

use config_support::config;
use resilience::__private::{CallSite, CodeDeclared};
use resilience::Runtime;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// How long anything may take before the test calls it a deadlock.
const WATCHDOG: Duration = Duration::from_secs(20);

/// Invalid under every config (a total timeout of 0 s), so every reload logs it while it
/// walks the registered sites: the signal that the reload is past its snapshot of them.
static SITE_A: CallSite = CallSite::new(
    "plan_service",
    "site_a",
    CodeDeclared {
        total_timeout: Some(0.0),
        ..CodeDeclared::EMPTY
    },
);

/// `max_attempts = 0` declared: invalid under the old config (which logs it, and falls back to
/// the service's policy, 3 attempts), valid under the new one, whose global env value (7)
/// outranks code-declared values (C13).
static SITE_B: CallSite = CallSite::new(
    "context_service",
    "site_b",
    CodeDeclared {
        max_attempts: Some(0),
        ..CodeDeclared::EMPTY
    },
);

/// The hooks the subscriber runs, set once the test is ready.
struct Hooks {
    /// site_b's registration reached its event.
    b_paused: Sender<()>,
    /// The reload logged site_a.
    a_in_reload: Sender<()>,
    /// site_b's registration waits on this.
    resume_b: Mutex<Receiver<()>>,
}

static HOOKS: OnceLock<Hooks> = OnceLock::new();

struct Operation(Option<String>);

impl tracing::field::Visit for Operation {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if field.name() == "operation" {
            self.0 = Some(value.to_owned());
        }
    }
    fn record_debug(&mut self, _: &tracing::field::Field, _: &dyn std::fmt::Debug) {}
}

struct Hook;

impl tracing::Subscriber for Hook {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let Some(hooks) = HOOKS.get() else { return };
        let mut op = Operation(None);
        event.record(&mut op);
        match op.0.as_deref() {
            Some("site_b") => {
                let _ = hooks.b_paused.send(());
                // Bounded: a runtime that makes the reload wait for this registration can
                // never send the signal; the registration then goes on after the timeout.
                let _ = hooks
                    .resume_b
                    .lock()
                    .unwrap()
                    .recv_timeout(Duration::from_secs(5));
            }
            Some("site_a") => {
                let _ = hooks.a_in_reload.send(());
            }
            _ => {}
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[test]
fn c13_a_call_site_registered_while_a_reload_runs_ends_up_with_the_new_policy() {
    tracing::subscriber::set_global_default(Hook).expect("the only subscriber");
    let runtime = Runtime::install(Runtime::new(config(&[]))).expect("first install");

    // Registered before the race: the reload will walk it (and log it).
    SITE_A.guard();
    assert_eq!(
        runtime.service("context_service").policy().max_attempts(),
        3,
        "built-in"
    );

    let (b_paused_tx, b_paused) = mpsc::channel();
    let (a_tx, a_rx) = mpsc::channel();
    assert!(HOOKS
        .set(Hooks {
            b_paused: b_paused_tx,
            a_in_reload: a_tx,
            resume_b: Mutex::new(a_rx),
        })
        .is_ok());

    // 1. site_b registers and pauses in its event, its guard built from the old config.
    let (b_done_tx, b_done) = mpsc::channel();
    std::thread::spawn(move || {
        let guard = SITE_B.guard();
        let _ = b_done_tx.send(guard.policy().max_attempts());
    });
    b_paused
        .recv_timeout(WATCHDOG)
        .expect("site_b's registration reached its event");

    // 2. A reload runs to its walk of the sites (logging site_a), which resumes site_b.
    let (reload_tx, reload_done) = mpsc::channel();
    std::thread::spawn(move || {
        let out = Runtime::global().reload(config(&[("CLEVERAGENTS_RETRY_MAX_ATTEMPTS", "7")]));
        let _ = reload_tx.send(out.is_ok());
    });
    let _cached_at_registration = b_done.recv_timeout(WATCHDOG).expect("site_b registered");
    assert!(
        reload_done.recv_timeout(WATCHDOG).expect("reload finished"),
        "the new config is valid"
    );

    // 3. The reload has completed: everyone sees the new config.
    assert_eq!(runtime.config().globals().max_attempts.value, 7);
    assert_eq!(
        runtime.service("context_service").policy().max_attempts(),
        7,
        "the service's guard was reloaded"
    );
    assert_eq!(
        SITE_B.guard().policy().max_attempts(),
        7,
        "site_b cached a guard built from the config the completed reload replaced"
    );
}
