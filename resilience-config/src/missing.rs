//! A top-level override key that is a section or setting, not a service (C2): the service
//! level is missing. The message offers a fix that is itself valid: the user's own object
//! when it is small and valid for that section (or for the other section, where its settings
//! then belong), else a valid example for it. Except `enabled` under `retry`: it is the
//! breaker's switch, and moved there `false` would remove the breaker (C5); the fix for it
//! stops retries instead (`max_attempts: 1`) and says why.
//!
//! A service may be named like a section or setting (C11): a body holding a `retry` or
//! `circuit_breaker` section shows a service, and is read as one. The name is matched
//! ignoring ASCII case and surrounding whitespace (`"Retry"`, `" retry "`), so such a key is
//! not told to write `Retry.retry.max_attempts`.

use crate::members::Members;
use crate::overrides::{ServiceOverride, BREAKER_KEYS, RETRY_KEYS, SECTIONS};
use serde_json::Value;

/// The longest of the user's own objects echoed back in a fix, in characters.
const ECHO_MAX: usize = 60;

/// Why the top-level `key`, with the raw JSON `value`, is not a service, with the shape that
/// was meant (C2); `None` for a service.
pub(crate) fn missing_service(key: &str, value: &str) -> Option<String> {
    let name = key.trim().to_ascii_lowercase();
    let (section, setting) = if let Some(s) = SECTIONS.iter().find(|s| **s == name) {
        (*s, None)
    } else if let Some(k) = RETRY_KEYS.iter().find(|k| **k == name) {
        ("retry", Some(*k))
    } else if let Some(k) = BREAKER_KEYS.iter().find(|k| **k == name) {
        ("circuit_breaker", Some(*k))
    } else {
        return None;
    };
    if holds_a_section(value) {
        return None;
    }
    let mut moved = "";
    let (section, inner) = match setting {
        None => match own_section(value, section) {
            Some(own) => (section, own),
            // `enabled` under `retry`: the breaker's switch, which moved there would remove
            // the breaker (C5), when the user meant no retries.
            None if section == "retry" => match retry_enabled(value) {
                Some(false) => {
                    moved = ", and `enabled` is the circuit breaker's switch: moved there, \
                             `false` would turn the circuit breaker off; to stop retrying, set \
                             `max_attempts` to 1";
                    (section, r#"{"max_attempts": 1}"#.to_owned())
                }
                Some(true) => {
                    moved = ", and `enabled` is the circuit breaker's switch, not retries'";
                    (section, example_section(section))
                }
                None => other_or_example(value, section, &mut moved),
            },
            None => other_or_example(value, section, &mut moved),
        },
        Some(k) => (
            section,
            own_setting(k, value).unwrap_or_else(|| format!(r#"{{"{k}": {}}}"#, example_value(k))),
        ),
    };
    let what = match setting {
        None => "a section",
        Some(_) => "a setting",
    };
    let written = if name == key {
        format!("`{key}` is {what}")
    } else {
        // As JSON, so spaces and tabs around it show.
        let quoted = serde_json::to_string(key).unwrap_or_default();
        let quoted = resilience_core::sanitize(&quoted);
        format!("{quoted} reads as {what} (`{name}`)")
    };
    Some(format!(
        r#"{written}, not a service: the service is missing{moved}; write {{"plan_service": {{"{section}": {inner}}}}} with your service's name; ignored"#
    ))
}

/// The fix for a section object that is not valid for its own `section`: moved to the
/// other section if it is valid there (and `moved` says so), else an example.
fn other_or_example(
    value: &str,
    section: &'static str,
    moved: &mut &str,
) -> (&'static str, String) {
    match own_section(value, other_section(section)) {
        Some(own) => {
            *moved = ", and its settings belong to the other section";
            (other_section(section), own)
        }
        None => (section, example_section(section)),
    }
}

/// Whether a `retry` section object holds `enabled` (the breaker's switch, C5): `Some` of
/// whether it is on (anything but `false`).
fn retry_enabled(value: &str) -> Option<bool> {
    let members = Members::parse(value).ok()?;
    let (_, v) = members.0.iter().find(|(k, _)| k == "enabled")?;
    Some(v.get().trim() != "false")
}

/// `retry` for `circuit_breaker`, and the other way round.
fn other_section(section: &str) -> &'static str {
    if section == "retry" {
        "circuit_breaker"
    } else {
        "retry"
    }
}

/// Whether `value` is an object holding a section: a service's override (C11).
fn holds_a_section(value: &str) -> bool {
    Members::parse(value).is_ok_and(|m| m.0.iter().any(|(k, _)| SECTIONS.contains(&k.as_str())))
}

/// The user's section object as a valid one, if it is: non-empty, small, each key a setting
/// of `section` given once with a valid value.
fn own_section(value: &str, section: &str) -> Option<String> {
    let keys: &[&str] = if section == "retry" {
        &RETRY_KEYS
    } else {
        &BREAKER_KEYS
    };
    let members = Members::parse(value).ok()?;
    if members.0.is_empty() {
        return None;
    }
    let mut parts = Vec::new();
    for (key, v) in &members.0 {
        if !keys.contains(&key.as_str()) || members.count(key) > 1 {
            return None;
        }
        parts.push(valid_member(key, v.get())?);
    }
    let echoed = format!("{{{}}}", parts.join(", "));
    (echoed.chars().count() <= ECHO_MAX).then_some(echoed)
}

/// The user's value for `key` as a valid section object, if it is valid.
fn own_setting(key: &str, value: &str) -> Option<String> {
    Some(format!("{{{}}}", valid_member(key, value)?))
}

/// `"key": value`, re-written, when `value` is valid for the setting `key`.
fn valid_member(key: &str, value: &str) -> Option<String> {
    let v: Value = serde_json::from_str(value).ok()?;
    ServiceOverride::default().set(key, &v).ok()?;
    Some(format!(r#""{key}": {v}"#))
}

fn example_section(section: &str) -> String {
    let key = if section == "retry" {
        "max_attempts"
    } else {
        "failure_threshold"
    };
    format!(r#"{{"{key}": {}}}"#, example_value(key))
}

/// A valid value for each setting, for a fix the user's own value cannot give.
fn example_value(key: &str) -> &'static str {
    match key {
        "max_attempts" => "5",
        "base_delay" => "2.0",
        "max_delay" => "30.0",
        "backoff_strategy" => r#""jitter""#,
        "total_timeout" => "120.0",
        "failure_threshold" => "3",
        "recovery_timeout" | "cooldown_seconds" => "30.0",
        "half_open_max_successes" => "2",
        "jitter" | "enabled" => "false",
        // retry_on_idempotent_only
        _ => "true",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// C2: every setting's example value is valid for it.
    #[test]
    fn c2_example_values_are_valid() {
        for key in RETRY_KEYS.iter().chain(&BREAKER_KEYS) {
            let v: Value = serde_json::from_str(example_value(key)).unwrap();
            assert!(ServiceOverride::default().set(key, &v).is_ok(), "{key}");
        }
    }
}
