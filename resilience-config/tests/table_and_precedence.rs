//! C3 (built-in table), C11 (isolation), C12 (idempotent-only default), C13 (precedence).

mod support;

use resilience_config::table::BUILT_IN_SERVICES;
use resilience_config::{Category, CodeDeclared, Config, Source};
use resilience_core::backoff::BackoffStrategy;
use support::{config, OVERRIDES};

#[test]
fn c3_the_built_in_table_matches_the_seed() {
    use BackoffStrategy::{Exponential, Fixed, Jitter};
    let seed = [
        ("plan_service", "provider", 3, Jitter, true),
        ("plan_lifecycle_service", "database", 3, Fixed, false),
        ("context_service", "database", 3, Fixed, false),
        ("session_service", "database", 3, Fixed, false),
        ("checkpoint_service", "database", 3, Fixed, false),
        ("trace_service", "database", 3, Fixed, false),
        ("actor_service", "database", 3, Fixed, false),
        ("resource_registry_service", "database", 3, Fixed, false),
        ("decision_service", "database", 3, Fixed, false),
        ("vector_store_service", "network", 5, Exponential, true),
        ("error_recovery_service", "database", 3, Fixed, false),
    ];
    let c = Config::default();
    assert_eq!(c.service_names(), seed.map(|r| r.0.to_owned()));
    for (name, category, attempts, strategy, jitter) in seed {
        let s = c.resolve(name, &CodeDeclared::EMPTY);
        assert_eq!(s.category.as_str(), category, "{name}");
        assert_eq!(s.max_attempts.value, attempts, "{name}");
        assert_eq!(s.backoff_strategy.value, strategy, "{name}");
        assert_eq!(s.jitter.value, jitter, "{name}");
        assert!(
            s.entries().iter().all(|e| e.source == Source::BuiltIn),
            "{name}"
        );
        // Every built-in row builds valid core policies.
        assert!(s.retry_policy().is_ok() && s.breaker_config().unwrap().is_some());
    }
    assert_eq!(BUILT_IN_SERVICES.len(), 11);
}

#[test]
fn c3_category_delays_are_as_documented() {
    let d = Category::Database.retry_defaults();
    assert_eq!((d.base_delay, d.max_delay), (0.5, 5.0));
    let p = Category::Provider.retry_defaults();
    assert_eq!((p.base_delay, p.max_delay), (1.0, 60.0));
    let n = Category::Network.retry_defaults();
    assert_eq!((n.base_delay, n.max_delay), (1.0, 30.0));
}

#[test]
fn c11_unknown_services_get_a_fresh_copy_of_the_database_defaults() {
    let c = Config::default();
    let mut a = c.resolve("billing_service", &CodeDeclared::EMPTY);
    assert_eq!(a.category, Category::Database);
    assert!(a.entries().iter().all(|e| e.source == Source::Default));
    let db = c.resolve("trace_service", &CodeDeclared::EMPTY);
    let values = |s: &resilience_config::ServiceSettings| s.entries().map(|e| e.value);
    assert_eq!(values(&a), values(&db));
    // Mutating one copy changes no other service and no default.
    a.max_attempts.value = 99;
    a.enabled.value = false;
    assert_eq!(
        c.resolve("billing_service", &CodeDeclared::EMPTY)
            .max_attempts
            .value,
        3
    );
    assert_eq!(
        c.resolve("other_service", &CodeDeclared::EMPTY)
            .max_attempts
            .value,
        3
    );
    assert_eq!(c.resolve("trace_service", &CodeDeclared::EMPTY), db);
}

#[test]
fn c11_an_override_changes_only_its_own_service() {
    let c = config(&[(
        OVERRIDES,
        r#"{"context_service": {"retry": {"max_attempts": 8}, "circuit_breaker": {"enabled": false}},
            "new_service": {"retry": {"base_delay": 0.2}}}"#,
    )]);
    let base = Config::default();
    for name in base.service_names() {
        if name != "context_service" {
            assert_eq!(
                c.resolve(&name, &CodeDeclared::EMPTY),
                base.resolve(&name, &CodeDeclared::EMPTY),
                "{name}"
            );
        }
    }
    // A service named only in overrides starts from the database defaults.
    let n = c.resolve("new_service", &CodeDeclared::EMPTY);
    assert_eq!(
        (n.base_delay.value, n.base_delay.source),
        (0.2, Source::Json)
    );
    assert_eq!(n.max_attempts.source, Source::Default);
    assert_eq!(
        c.service_names().last().map(String::as_str),
        Some("new_service")
    );
}

#[test]
fn c12_retry_on_idempotent_only_defaults_to_true() {
    let c = Config::default();
    for name in ["plan_service", "vector_store_service", "unknown"] {
        let s = c.resolve(name, &CodeDeclared::EMPTY);
        assert!(s.retry_on_idempotent_only.value);
        assert!(s.retry_policy().unwrap().retry_on_idempotent_only());
    }
    let off = config(&[(
        OVERRIDES,
        r#"{"x": {"retry": {"retry_on_idempotent_only": false}}}"#,
    )]);
    assert!(!off
        .resolve("x", &CodeDeclared::EMPTY)
        .retry_policy()
        .unwrap()
        .retry_on_idempotent_only());
}

const CODE: CodeDeclared = CodeDeclared {
    max_attempts: Some(6),
    backoff: Some(BackoffStrategy::Linear),
    base_delay: Some(3.0),
    max_delay: Some(10.0),
    jitter: Some(false),
    total_timeout: Some(20.0),
};

#[test]
fn c13_code_declared_beats_the_built_in_table() {
    let s = Config::default().resolve("plan_service", &CODE);
    assert_eq!(
        (s.max_attempts.value, s.max_attempts.source),
        (6, Source::CodeDeclared)
    );
    assert_eq!(s.backoff_strategy.value, BackoffStrategy::Linear);
    assert_eq!(
        (s.total_timeout.value, s.total_timeout.source),
        (20.0, Source::CodeDeclared)
    );
    assert_eq!(s.failure_threshold.source, Source::BuiltIn);
    let p = s.retry_policy().unwrap();
    assert_eq!(p.total_timeout().as_secs(), 20);
    // An empty declaration changes nothing.
    assert_eq!(
        Config::default().resolve("plan_service", &CodeDeclared::EMPTY),
        Config::default().resolve("plan_service", &CodeDeclared::default())
    );
}

#[test]
fn c13_set_env_vars_beat_code_declared_and_unset_ones_do_not() {
    let c = config(&[
        ("CLEVERAGENTS_RETRY_MAX_ATTEMPTS", "2"),
        ("CLEVERAGENTS_RETRY_JITTER", "true"),
    ]);
    let s = c.resolve("plan_service", &CODE);
    assert_eq!(
        (s.max_attempts.value, s.max_attempts.source),
        (2, Source::Env("CLEVERAGENTS_RETRY_MAX_ATTEMPTS"))
    );
    assert_eq!(s.jitter.source, Source::Env("CLEVERAGENTS_RETRY_JITTER"));
    // Not set: the code-declared value stands.
    assert_eq!(
        (s.base_delay.value, s.base_delay.source),
        (3.0, Source::CodeDeclared)
    );
}

#[test]
fn c13_json_beats_env_beats_code_beats_built_in() {
    let c = config(&[
        ("CLEVERAGENTS_RETRY_MAX_ATTEMPTS", "2"),
        ("CLEVERAGENTS_RETRY_BASE_DELAY", "4"),
        ("CLEVERAGENTS_CB_FAILURE_THRESHOLD", "8"),
        (
            OVERRIDES,
            r#"{"plan_service": {"retry": {"max_attempts": 5}, "circuit_breaker": {"failure_threshold": 3}}}"#,
        ),
    ]);
    let s = c.resolve("plan_service", &CODE);
    assert_eq!(
        (s.max_attempts.value, s.max_attempts.source),
        (5, Source::Json)
    );
    assert_eq!(
        (s.failure_threshold.value, s.failure_threshold.source),
        (3, Source::Json)
    );
    assert_eq!(
        (s.base_delay.value, s.base_delay.source),
        (4.0, Source::Env("CLEVERAGENTS_RETRY_BASE_DELAY"))
    );
    assert_eq!(
        (s.max_delay.value, s.max_delay.source),
        (10.0, Source::CodeDeclared)
    );
    assert_eq!(
        (s.recovery_timeout.value, s.recovery_timeout.source),
        (60.0, Source::BuiltIn)
    );
    // Other services see the env layer but not plan_service's JSON.
    let t = c.resolve("trace_service", &CodeDeclared::EMPTY);
    assert_eq!(t.max_attempts.value, 2);
    assert_eq!(t.failure_threshold.value, 8);
}

#[test]
fn c13_an_invalid_code_declared_value_is_a_policy_error_naming_the_field() {
    let bad = CodeDeclared {
        base_delay: Some(f64::NAN),
        ..CodeDeclared::EMPTY
    };
    let err = Config::default()
        .resolve("x", &bad)
        .retry_policy()
        .unwrap_err();
    assert_eq!(err.field(), "base_delay");
    let zero = CodeDeclared {
        max_attempts: Some(0),
        ..CodeDeclared::EMPTY
    };
    let err = Config::default()
        .resolve("x", &zero)
        .retry_policy()
        .unwrap_err();
    assert_eq!(err.field(), "max_attempts");
}

#[test]
fn config_is_cheap_to_clone_debug_and_shareable() {
    fn send_sync<T: Send + Sync + Clone + std::fmt::Debug>(_: &T) {}
    let c = config(&[("CLEVERAGENTS_RETRY_MAX_ATTEMPTS", "4")]);
    send_sync(&c);
    let d = c.clone();
    assert_eq!(d.globals(), c.globals());
    assert!(format!("{c:?}").contains("Config"));
}

/// C2, C8: `has_override` is true exactly for a service whose JSON override was applied: not
/// for a skipped (invalid) one, and not for a service the JSON does not name.
#[test]
fn c2_has_override_is_true_exactly_for_an_applied_override() {
    let c = config(&[(
        OVERRIDES,
        r#"{"plan_service": {"retry": {"max_attempts": 5}},
            "my_service": {},
            "trace_service": {"retry": {"max_attempts": 0}}}"#,
    )]);
    assert!(c.has_override("plan_service"));
    assert!(c.has_override("my_service"));
    assert!(!c.has_override("trace_service"));
    assert!(!c.has_override("session_service"));
    assert!(!Config::default().has_override("plan_service"));
}

/// C13: a value's source names its environment variable exactly when it came from one.
#[test]
fn c13_a_source_names_its_env_var_only_for_env_values() {
    let c = config(&[
        ("CLEVERAGENTS_RETRY_MAX_ATTEMPTS", "4"),
        ("CLEVERAGENTS_CB_COOLDOWN", "10"),
        (
            OVERRIDES,
            r#"{"plan_service": {"circuit_breaker": {"cooldown_seconds": 2}}}"#,
        ),
    ]);
    let declared = CodeDeclared {
        base_delay: Some(0.25),
        ..CodeDeclared::EMPTY
    };
    let plan = c.resolve("plan_service", &declared);
    assert_eq!(
        plan.max_attempts.source.env_var(),
        Some("CLEVERAGENTS_RETRY_MAX_ATTEMPTS")
    );
    assert_eq!(plan.cooldown_seconds.source, Source::Json);
    let trace = c.resolve("trace_service", &declared);
    assert_eq!(
        trace.cooldown_seconds.source.env_var(),
        Some("CLEVERAGENTS_CB_COOLDOWN")
    );
    for source in [
        plan.cooldown_seconds.source,
        plan.base_delay.source,
        plan.max_delay.source,
        c.resolve("my_service", &declared).max_delay.source,
    ] {
        assert_eq!(source.env_var(), None, "{source:?}");
    }
    assert_eq!(
        [
            Source::Json,
            Source::CodeDeclared,
            Source::BuiltIn,
            Source::Default
        ]
        .map(Source::env_var),
        [None; 4]
    );
}
