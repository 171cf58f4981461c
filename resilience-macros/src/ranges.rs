//! The ranges numeric arguments must fall in, as messages: one place, used both when a value
//! is validated and when a message decides whether a bare number is a fix worth offering.

use crate::args::sym;

/// Whether the seconds argument `name` may be zero (a delay may; the total timeout may not).
pub(crate) fn zero_ok(name: &str) -> bool {
    name != sym::TOTAL_TIMEOUT
}

/// What is wrong with `v` seconds for the argument `name`, if anything.
pub(crate) fn secs_problem(name: &str, v: f64) -> Option<String> {
    let zero_ok = zero_ok(name);
    let shown = shown_secs(v);
    let ok = v.is_finite() && (v > 0.0 || (zero_ok && v == 0.0));
    if !ok {
        let rule = if zero_ok { ">= 0" } else { "> 0" };
        return Some(format!(
            "`{name}` must be a finite number of seconds {rule}, got {shown}"
        ));
    }
    // What the runtime will hold (R7): a value it cannot make a `Duration` of, or a timeout
    // that rounds to a zero one, would make it drop the whole declared policy at run time.
    match std::time::Duration::try_from_secs_f64(v) {
        Err(_) => Some(format!(
            "`{name}` must be a number of seconds a `Duration` can hold (below about 1.8e19), got {shown}"
        )),
        Ok(d) if d.is_zero() && !zero_ok => Some(format!(
            "`{name}` must be at least 1e-9 seconds (one nanosecond), got {shown}"
        )),
        Ok(_) => None,
    }
}

/// What is wrong with `n` as `max_attempts`, if anything.
pub(crate) fn attempts_problem(n: u64) -> Option<String> {
    match u32::try_from(n) {
        Ok(0) => Some(
            "`max_attempts = 0` would never run the operation: the count includes the first attempt, so use 1 or more (or remove `idempotent` to run it exactly once)".to_owned(),
        ),
        Ok(_) => None,
        Err(_) => Some(format!("`max_attempts` must fit in a u32, got {n}")),
    }
}

/// Seconds as a message shows them: `1e20`, not twenty digits.
pub(crate) fn shown_secs(v: f64) -> String {
    let a = v.abs();
    if a.is_finite() && (a >= 1e15 || (a > 0.0 && a < 1e-4)) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}
