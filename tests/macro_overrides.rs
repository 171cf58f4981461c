//! C13 through the attribute: attribute arguments are the code-declared layer, so the global
//! env vars and the per-service JSON override beat them.
//!
//! It goes through the real runtime behind `resilience::__private`, which reads the
//! environment on first use.
//!
//! One test in its own binary: it sets process-wide env vars before the first guarded call.

mod macro_support;

use macro_support::{ApiError, Attempts};
use resilience::retry_service_operation;

static ENV_WINS: Attempts = Attempts::new();
static JSON_WINS: Attempts = Attempts::new();
static CODE_ONLY: Attempts = Attempts::new();

#[retry_service_operation(service = "ovr_env", idempotent, max_attempts = 6, backoff = "none")]
fn env_wins() -> Result<u32, ApiError> {
    Err(ApiError::Flaky(ENV_WINS.next()))
}

#[retry_service_operation(service = "ovr_json", idempotent, max_attempts = 6, backoff = "none")]
fn json_wins() -> Result<u32, ApiError> {
    Err(ApiError::Flaky(JSON_WINS.next()))
}

// No env or JSON value for `backoff`: the attribute's "none" stays in force, and for
// max_attempts the global env var still wins over the attribute.
#[retry_service_operation(service = "ovr_code", idempotent, backoff = "none")]
fn code_only() -> Result<u32, ApiError> {
    Err(ApiError::Flaky(CODE_ONLY.next()))
}

#[test]
fn c13_env_vars_and_json_overrides_beat_attribute_arguments() {
    // Edition 2021: set_var is safe; this binary has no other test and no other thread yet.
    std::env::set_var("CLEVERAGENTS_RETRY_MAX_ATTEMPTS", "2");
    std::env::set_var(
        "CLEVERAGENTS_RETRY_SERVICE_OVERRIDES",
        r#"{"ovr_json": {"retry": {"max_attempts": 4}}}"#,
    );

    // code 6 < global env 2
    assert_eq!(env_wins(), Err(ApiError::Flaky(2)));
    assert_eq!(ENV_WINS.count(), 2);
    // code 6 < global env 2 < per-service JSON 4
    assert_eq!(json_wins(), Err(ApiError::Flaky(4)));
    assert_eq!(JSON_WINS.count(), 4);
    // nothing declared in code for max_attempts: global env 2 over the built-in 3
    assert_eq!(code_only(), Err(ApiError::Flaky(2)));
    assert_eq!(CODE_ONLY.count(), 2);
}
