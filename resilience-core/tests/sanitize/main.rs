//! The error sanitizer, S1–S5 (DESIGN.md §4). Each test names the item it pins; one file per
//! family of forms, the property tests in `properties.rs`.

use resilience_core::sanitize;
use std::borrow::Cow;

/// Asserts the exact redaction and that redacting again changes nothing.
#[track_caller]
fn check(input: &str, expected: &str) {
    let once = sanitize(input);
    assert_eq!(once, expected, "input: {input:?}");
    assert_eq!(sanitize(&once), once, "not idempotent on: {input:?}");
}

#[track_caller]
fn unchanged(input: &str) {
    assert!(
        matches!(sanitize(input), Cow::Borrowed(s) if s == input),
        "expected {input:?} borrowed and unchanged, got {:?}",
        sanitize(input)
    );
}

mod literals;
mod pairs;
mod properties;
mod structured;
mod url;
