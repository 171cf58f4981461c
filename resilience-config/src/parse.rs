//! Strict parsing and range checks shared by the env and JSON layers (C1).
//!
//! Errors are messages that already show the (sanitized) input; callers prefix where it came
//! from and what was done about it.

use crate::diagnostics::shown;
use resilience_core::backoff::BackoffStrategy;
use serde_json::Value;
use std::time::Duration;

/// Whether a number of seconds may be zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Secs {
    /// `>= 0` (delays, recovery, cooldown).
    NonNegative,
    /// `> 0` (the total timeout).
    Positive,
}

/// A whole number `>= min`, from text: `3.5`, `3.0`, `-1` and `three` are rejected.
pub(crate) fn count_text(text: &str, min: u32) -> Result<u32, String> {
    let t = text.trim();
    let n: u64 = t.parse().map_err(|_| {
        // All digits, but past u64: the number is whole, just too large.
        if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
            format!("must be at most {}, got {}", u32::MAX, shown(text))
        } else {
            format!("must be a whole number >= {min}, got {}", shown(text))
        }
    })?;
    check_count(n, min, &shown(text))
}

/// A whole number `>= min`, from JSON: `5` yes, `5.0`, `"5"` and `null` no.
pub(crate) fn count_json(value: &Value, min: u32) -> Result<u32, String> {
    let text = shown(&value.to_string());
    match value {
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(n), _) => check_count(n, min, &text),
            (None, Some(_)) => Err(format!("must be >= {min}, got {text}")),
            // A whole number past u64 arrives as a float (`1e+23`); so does `5.0`, which is
            // in range, just not written as a count.
            (None, None) if n.as_f64().is_some_and(|f| f > f64::from(u32::MAX)) => {
                Err(format!("must be at most {}, got {text}", u32::MAX))
            }
            (None, None) if n.as_f64().is_some_and(|f| f >= 1.0 && f.fract() == 0.0) => Err(
                format!("must be a whole number written without `.` or an exponent, got {text}"),
            ),
            (None, None) => Err(format!("must be a whole number >= {min}, got {text}")),
        },
        _ => Err(format!("must be a whole number >= {min}, got {text}")),
    }
}

fn check_count(n: u64, min: u32, shown_value: &str) -> Result<u32, String> {
    if n < u64::from(min) {
        return Err(format!("must be >= {min}, got {shown_value}"));
    }
    u32::try_from(n).map_err(|_| format!("must be at most {}, got {shown_value}", u32::MAX))
}

/// Seconds from text: a finite decimal number (`2`, `0.5`, `1e1`); `inf`, `NaN` and negative
/// values are rejected.
pub(crate) fn secs_text(text: &str, rule: Secs) -> Result<f64, String> {
    let secs: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{}, got {}", secs_rule(rule), shown(text)))?;
    check_secs(secs, rule, &shown(text))
}

/// Seconds from JSON: a number (`2` or `2.0`); strings and `null` are rejected.
pub(crate) fn secs_json(value: &Value, rule: Secs) -> Result<f64, String> {
    let text = shown(&value.to_string());
    match value.as_f64() {
        Some(secs) if value.is_number() => check_secs(secs, rule, &text),
        _ => Err(format!("{}, got {text}", secs_rule(rule))),
    }
}

fn check_secs(secs: f64, rule: Secs, shown_value: &str) -> Result<f64, String> {
    // `try_from_secs_f64` also rejects NaN and infinities.
    let duration = Duration::try_from_secs_f64(secs);
    let in_range = match rule {
        Secs::NonNegative => secs >= 0.0,
        // What the policy will hold, not the float: `1e-10` rounds to a zero `Duration`.
        Secs::Positive => duration.as_ref().is_ok_and(|d| *d > Duration::ZERO),
    };
    if secs.is_finite() && secs > 0.0 && duration.is_err() {
        // Finite and positive, but past what a `Duration` holds: name that bound.
        return Err(format!(
            "must be below 2^64 (about 1.8e19) seconds, the longest a `Duration` holds, got {shown_value}"
        ));
    }
    if !in_range || duration.is_err() {
        return Err(format!("{}, got {shown_value}", secs_rule(rule)));
    }
    // `-0` passes `>= 0.0`; read it as plain zero, or `explain` shows `-0.0 s`.
    Ok(if secs == 0.0 { 0.0 } else { secs })
}

fn secs_rule(rule: Secs) -> &'static str {
    match rule {
        Secs::NonNegative => "must be a finite number of seconds >= 0",
        Secs::Positive => "must be a finite number of seconds > 0 (at least 1e-9)",
    }
}

/// A boolean from text: `true`/`false`/`1`/`0`/`yes`/`no`, any ASCII case.
pub(crate) fn bool_text(text: &str) -> Result<bool, String> {
    let t = text.trim();
    const TRUE: [&str; 3] = ["true", "1", "yes"];
    const FALSE: [&str; 3] = ["false", "0", "no"];
    if TRUE.iter().any(|w| w.eq_ignore_ascii_case(t)) {
        Ok(true)
    } else if FALSE.iter().any(|w| w.eq_ignore_ascii_case(t)) {
        Ok(false)
    } else {
        Err(format!(
            "must be one of true/false/1/0/yes/no, got {}",
            shown(text)
        ))
    }
}

/// A boolean from JSON: `true` or `false` only.
pub(crate) fn bool_json(value: &Value) -> Result<bool, String> {
    value
        .as_bool()
        .ok_or_else(|| format!("must be true or false, got {}", shown(&value.to_string())))
}

/// A strategy name from text (case-insensitive).
pub(crate) fn strategy_text(text: &str) -> Result<BackoffStrategy, String> {
    text.parse().map_err(|_| {
        format!(
            "must be one of exponential, linear, fixed, jitter, none, got {}",
            shown(text)
        )
    })
}

/// A strategy name from JSON: a string naming one of the five.
pub(crate) fn strategy_json(value: &Value) -> Result<BackoffStrategy, String> {
    match value {
        Value::String(s) => strategy_text(s),
        other => Err(format!(
            "must be one of \"exponential\", \"linear\", \"fixed\", \"jitter\", \"none\", got {}",
            shown(&other.to_string())
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn c1_counts_are_whole_numbers() {
        assert_eq!(count_text(" 3 ", 1), Ok(3));
        for bad in ["3.5", "3.0", "-1", "0", "three", "", "99999999999"] {
            assert!(count_text(bad, 1).is_err(), "{bad}");
        }
        assert_eq!(count_json(&json!(5), 1), Ok(5));
        for bad in [
            json!(5.0),
            json!("5"),
            json!(null),
            json!(-2),
            json!(0),
            json!(true),
        ] {
            assert!(count_json(&bad, 1).is_err(), "{bad}");
        }
    }

    #[test]
    fn c1_seconds_are_finite_and_in_range() {
        assert_eq!(secs_text("0", Secs::NonNegative), Ok(0.0));
        assert_eq!(secs_text("1e1", Secs::NonNegative), Ok(10.0));
        assert!(secs_text("0", Secs::Positive).is_err());
        for bad in ["-0.5", "inf", "NaN", "1e300", "two", ""] {
            assert!(secs_text(bad, Secs::NonNegative).is_err(), "{bad}");
        }
        assert_eq!(secs_json(&json!(2), Secs::NonNegative), Ok(2.0));
        assert!(secs_json(&json!("2.0"), Secs::NonNegative).is_err());
    }

    #[test]
    fn c1_booleans_accept_six_words_in_any_case() {
        for (t, v) in [
            ("TRUE", true),
            ("Yes", true),
            ("1", true),
            ("no", false),
            ("False", false),
            ("0", false),
        ] {
            assert_eq!(bool_text(t), Ok(v));
        }
        for bad in ["on", "y", "2", ""] {
            assert!(bool_text(bad).is_err(), "{bad}");
        }
        assert!(bool_json(&json!("true")).is_err());
    }
}
