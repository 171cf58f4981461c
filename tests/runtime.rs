//! The facade runtime: config feeds the registry; reloads are all-or-nothing.

mod config_support;

use config_support::config;
use resilience::Runtime;

#[test]
fn c3_c11_registry_gets_the_built_in_table_and_database_defaults_for_unknown_services() {
    let rt = Runtime::new(config(&[]));
    assert_eq!(
        rt.service("vector_store_service").policy().max_attempts(),
        5
    );
    assert_eq!(rt.service("plan_service").policy().max_attempts(), 3);
    let unknown = rt.service("brand_new_service").policy();
    let database = rt.service("trace_service").policy();
    assert_eq!(unknown, database);
}

#[test]
fn c2_c5_json_override_reaches_the_registry() {
    let rt = Runtime::new(config(&[(
        "CLEVERAGENTS_RETRY_SERVICE_OVERRIDES",
        r#"{"plan_service": {"retry": {"max_attempts": 5}, "circuit_breaker": {"enabled": false}}}"#,
    )]));
    let plan = rt.service("plan_service");
    assert_eq!(plan.policy().max_attempts(), 5);
    assert!(plan.breaker().is_none());
}

#[test]
fn reload_applies_a_valid_config_in_place() {
    let rt = Runtime::new(config(&[]));
    let guard = rt.service("context_service");
    assert_eq!(guard.policy().max_attempts(), 3);
    let changed = rt
        .reload(config(&[("CLEVERAGENTS_RETRY_MAX_ATTEMPTS", "6")]))
        .expect("valid config");
    assert!(changed.is_empty());
    assert_eq!(guard.policy().max_attempts(), 6);
}

#[test]
fn reload_with_an_invalid_value_keeps_the_last_good_policy_and_says_why() {
    let rt = Runtime::new(config(&[("CLEVERAGENTS_RETRY_MAX_ATTEMPTS", "6")]));
    let guard = rt.service("context_service");
    let refused = rt
        .reload(config(&[("CLEVERAGENTS_RETRY_MAX_ATTEMPTS", "3.5")]))
        .expect_err("3.5 is not an attempt count");
    assert_eq!(guard.policy().max_attempts(), 6, "last good policy kept");
    let text = refused.to_string();
    assert!(text.contains("CLEVERAGENTS_RETRY_MAX_ATTEMPTS"), "{text}");
    assert_eq!(
        rt.config().globals().max_attempts.value,
        6,
        "config in force unchanged"
    );
}
