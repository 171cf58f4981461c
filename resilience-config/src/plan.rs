//! The read-only plan guard (R11).

use serde_json::Value;

/// Plan phases that only read, after normalising (trimmed, ASCII lowercase, `-` and spaces
/// read as `_`): `planning`, `analysis`, `research`, `review`, `read_only`, `dry_run`.
pub const READ_ONLY_PLAN_PHASES: [&str; 6] = [
    "planning",
    "analysis",
    "research",
    "review",
    "read_only",
    "dry_run",
];

/// Whether `plan_phase` names a read-only phase, where tool executions must not be retried as
/// writes. Only a JSON string can be read-only (R11): `true`, `1`, objects and every other
/// non-string value, however truthy, are not, so a stray flag never disables the guard.
///
/// ```
/// use resilience_config::is_read_only_plan_operation;
/// use serde_json::json;
///
/// assert!(is_read_only_plan_operation(&json!("Read-Only")));
/// assert!(!is_read_only_plan_operation(&json!("execution")));
/// assert!(!is_read_only_plan_operation(&json!(true)));
/// ```
pub fn is_read_only_plan_operation(plan_phase: &Value) -> bool {
    let Value::String(phase) = plan_phase else {
        return false;
    };
    let normal: String = phase
        .trim()
        .chars()
        .map(|c| match c {
            '-' | ' ' => '_',
            c => c.to_ascii_lowercase(),
        })
        .collect();
    READ_ONLY_PLAN_PHASES.contains(&normal.as_str())
}
