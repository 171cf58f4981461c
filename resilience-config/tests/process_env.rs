//! C1 against the real process environment. Every test here takes `ENV_LOCK`, so they never
//! see each other's variables (tests in one binary run on parallel threads).

use resilience_config::{CodeDeclared, Config, DiagnosticKind, ProcessEnv, Source};
use std::sync::{Mutex, MutexGuard};

static ENV_LOCK: Mutex<()> = Mutex::new(());

/// Sets variables for the guard's lifetime, restoring the previous values on drop.
struct Vars {
    saved: Vec<(String, Option<std::ffi::OsString>)>,
    _lock: MutexGuard<'static, ()>,
}

impl Vars {
    fn set(pairs: &[(&str, &str)]) -> Self {
        let lock = ENV_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        let saved = pairs
            .iter()
            .map(|(k, v)| {
                let old = std::env::var_os(k);
                std::env::set_var(k, v);
                ((*k).to_owned(), old)
            })
            .collect();
        Self { saved, _lock: lock }
    }
}

impl Drop for Vars {
    fn drop(&mut self) {
        for (k, old) in &self.saved {
            match old {
                Some(v) => std::env::set_var(k, v),
                None => std::env::remove_var(k),
            }
        }
    }
}

#[test]
fn c1_from_env_reads_the_process_environment() {
    let _vars = Vars::set(&[
        ("CLEVERAGENTS_RETRY_MAX_ATTEMPTS", "4"),
        (
            "CLEVERAGENTS_RETRY_SERVICE_OVERRIDES",
            r#"{"plan_service": {"circuit_breaker": {"failure_threshold": 2}}}"#,
        ),
    ]);
    let c = Config::from_env();
    let s = c.resolve("plan_service", &CodeDeclared::EMPTY);
    assert_eq!(
        (s.max_attempts.value, s.max_attempts.source),
        (4, Source::Env("CLEVERAGENTS_RETRY_MAX_ATTEMPTS"))
    );
    assert_eq!(
        (s.failure_threshold.value, s.failure_threshold.source),
        (2, Source::Json)
    );
}

#[test]
fn c1_from_env_reports_bad_values_and_misspelt_variables() {
    let _vars = Vars::set(&[
        ("CLEVERAGENTS_RETRY_JITTER", "sometimes"),
        ("CLEVERAGENTS_CB_FAILURE_TRESHOLD", "3"),
    ]);
    let c = Config::from_env();
    let kinds: Vec<_> = c
        .diagnostics()
        .iter()
        .map(|d| (d.env_var().to_owned(), d.kind()))
        .collect();
    assert!(kinds.contains(&(
        "CLEVERAGENTS_RETRY_JITTER".into(),
        DiagnosticKind::InvalidValue
    )));
    assert!(kinds.contains(&(
        "CLEVERAGENTS_CB_FAILURE_TRESHOLD".into(),
        DiagnosticKind::UnknownKey
    )));
    assert_eq!(c.globals().jitter.source, Source::BuiltIn);
}

#[test]
fn c1_custom_prefix_reads_the_process_environment() {
    let _vars = Vars::set(&[("RESILIENCE_TEST_PFX_CB_COOLDOWN", "4.5")]);
    let c = Config::with_prefix("RESILIENCE_TEST_PFX", &ProcessEnv);
    assert_eq!(
        c.globals().cooldown,
        resilience_config::Sourced::new(4.5, Source::Env("RESILIENCE_TEST_PFX_CB_COOLDOWN"))
    );
}
