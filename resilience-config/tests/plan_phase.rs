//! R11: only string `plan_phase` values can be read-only.

use resilience_config::{is_read_only_plan_operation as ro, READ_ONLY_PLAN_PHASES};
use serde_json::json;

#[test]
fn r11_read_only_phase_names_are_read_only() {
    for phase in READ_ONLY_PLAN_PHASES {
        assert!(ro(&json!(phase)), "{phase}");
    }
    for spelling in ["Planning", " REVIEW ", "read-only", "Read Only", "dry-run"] {
        assert!(ro(&json!(spelling)), "{spelling}");
    }
}

#[test]
fn r11_other_strings_are_not_read_only() {
    for phase in [
        "execution",
        "apply",
        "write",
        "",
        "read_only_then_write",
        "true",
    ] {
        assert!(!ro(&json!(phase)), "{phase}");
    }
}

#[test]
fn r11_non_string_truthy_values_are_not_read_only() {
    for v in [
        json!(true),
        json!(1),
        json!(1.5),
        json!(["planning"]),
        json!({"phase": "planning"}),
        json!(null),
    ] {
        assert!(!ro(&v), "{v}");
    }
}
