//! C1 numeric bounds, by property: whatever the text, loading never panics, and a value is
//! applied exactly when it is in range.

mod support;

use proptest::prelude::*;
use resilience_config::{CodeDeclared, Source};
use support::config;

const ATTEMPTS: &str = "CLEVERAGENTS_RETRY_MAX_ATTEMPTS";
const BASE: &str = "CLEVERAGENTS_RETRY_BASE_DELAY";

proptest! {
    #[test]
    fn c1_any_text_loads_without_panicking(text in ".{0,40}") {
        let c = config(&[(ATTEMPTS, &text), (BASE, &text), ("CLEVERAGENTS_RETRY_JITTER", &text)]);
        let s = c.resolve("plan_service", &CodeDeclared::EMPTY);
        prop_assert!(s.retry_policy().is_ok());
        prop_assert!(s.breaker_config().is_ok());
    }

    #[test]
    fn c1_attempt_counts_apply_iff_at_least_one(n in -5i64..1_000) {
        let c = config(&[(ATTEMPTS, &n.to_string())]);
        let s = c.resolve("plan_service", &CodeDeclared::EMPTY);
        if n >= 1 {
            prop_assert_eq!(s.max_attempts.value as i64, n);
            prop_assert!(c.diagnostics().is_empty());
        } else {
            prop_assert_eq!(s.max_attempts.source, Source::BuiltIn);
            prop_assert_eq!(c.diagnostics().len(), 1);
        }
    }

    #[test]
    fn c1_fractional_attempt_counts_are_rejected(n in 1u32..100, frac in 1u32..10) {
        let c = config(&[(ATTEMPTS, &format!("{n}.{frac}"))]);
        prop_assert_eq!(c.diagnostics().len(), 1);
    }

    #[test]
    fn c1_delays_apply_iff_finite_and_non_negative(x in prop::num::f64::ANY) {
        let c = config(&[(BASE, &x.to_string())]);
        let s = c.resolve("plan_service", &CodeDeclared::EMPTY);
        let fits = x.is_finite() && x >= 0.0 && std::time::Duration::try_from_secs_f64(x).is_ok();
        if fits {
            prop_assert_eq!(s.base_delay.value, x);
            prop_assert!(s.retry_policy().is_ok());
        } else {
            prop_assert_eq!(s.base_delay.source, Source::BuiltIn);
        }
        prop_assert_eq!(c.diagnostics().is_empty(), fits);
    }

    #[test]
    fn c2_json_thresholds_apply_iff_at_least_one(n in -3i64..50) {
        let c = config(&[(
            "CLEVERAGENTS_RETRY_SERVICE_OVERRIDES",
            &format!(r#"{{"s": {{"circuit_breaker": {{"failure_threshold": {n}}}}}}}"#),
        )]);
        let s = c.resolve("s", &CodeDeclared::EMPTY);
        prop_assert_eq!(s.failure_threshold.source == Source::Json, n >= 1);
    }
}
