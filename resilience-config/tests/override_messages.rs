//! C7–C10 and C1's strict parsing, as the JSON overrides' diagnostics word them: each message
//! says what was expected and what was found, and points where the problem is.

mod support;

use resilience_config::{CodeDeclared, DiagnosticKind, Source};
use support::{capture, config, with_overrides, OVERRIDES};
use tracing::Level;

/// The only diagnostic of loading `json` as the overrides.
fn only_message(json: &str) -> String {
    let c = with_overrides(json);
    let d = c.diagnostics();
    assert_eq!(d.len(), 1, "{json}: {d:?}");
    d[0].message().to_owned()
}

/// The message for `value` as `s.retry.<key>`.
fn retry_message(key: &str, value: &str) -> String {
    only_message(&format!(r#"{{"s": {{"retry": {{"{key}": {value}}}}}}}"#))
}

/// C8: a diagnostic's location is its JSON path for an override problem, and the variable's
/// name for a problem with a variable.
#[test]
fn c8_a_diagnostic_is_located_at_its_json_path_or_its_variable() {
    let c = config(&[
        ("CLEVERAGENTS_RETRY_JITTER", "maybe"),
        (OVERRIDES, r#"{"s": {"retry": {"max_attempts": 0}}}"#),
    ]);
    let locations: Vec<_> = c.diagnostics().iter().map(|d| d.location()).collect();
    assert_eq!(
        locations,
        ["CLEVERAGENTS_RETRY_JITTER", "s.retry.max_attempts"]
    );
}

/// C8, C1: a count written as a float is refused. A whole one (`5.0`, even `4294967295.0`) is
/// told to drop the `.`; a fraction, zero or a negative one is told to be a whole number >= 1;
/// one past `u32` is told it is too large.
#[test]
fn c8_a_float_count_is_told_what_is_wrong_with_it() {
    for raw in ["5.0", "1.0", "1e2", "4294967295.0"] {
        let m = retry_message("max_attempts", raw);
        assert!(
            m.starts_with("must be a whole number written without `.` or an exponent, got"),
            "{raw}: {m}"
        );
    }
    for raw in ["2.5", "0.5", "0.0", "-2.0", "1.5e0"] {
        let m = retry_message("max_attempts", raw);
        assert!(
            m.starts_with("must be a whole number >= 1, got"),
            "{raw}: {m}"
        );
    }
    for raw in ["4294967296.0", "1e23"] {
        let m = retry_message("max_attempts", raw);
        assert!(
            m.starts_with("must be at most 4294967295, got"),
            "{raw}: {m}"
        );
    }
}

/// C8, C1: seconds that are refused say which rule they broke: `>= 0` for delays and breaker
/// times, `> 0` for the total timeout.
#[test]
fn c8_refused_seconds_name_their_rule() {
    for key in ["base_delay", "max_delay"] {
        let m = retry_message(key, "-1");
        assert!(
            m.starts_with("must be a finite number of seconds >= 0, got `-1`"),
            "{key}: {m}"
        );
    }
    for key in ["recovery_timeout", "cooldown_seconds"] {
        let m = only_message(&format!(
            r#"{{"s": {{"circuit_breaker": {{"{key}": "1"}}}}}}"#
        ));
        assert!(
            m.starts_with("must be a finite number of seconds >= 0, got `\"1\"`"),
            "{key}: {m}"
        );
    }
    let m = retry_message("total_timeout", "0");
    assert!(
        m.starts_with("must be a finite number of seconds > 0 (at least 1e-9), got `0`"),
        "{m}"
    );
}

/// C8, C1: seconds that are finite and positive but longer than a `Duration` holds are told
/// the real bound, not called infinite or negative.
#[test]
fn c8_seconds_too_long_for_a_duration_name_the_bound() {
    let bound = "must be below 2^64 (about 1.8e19) seconds, the longest a `Duration` holds, got";
    for (key, raw) in [("total_timeout", "1e308"), ("base_delay", "1e20")] {
        let m = retry_message(key, raw);
        assert!(m.starts_with(bound), "{key}: {m}");
    }
    let c = config(&[("CLEVERAGENTS_RETRY_MAX_DELAY", "1e300")]);
    let m = c.diagnostics()[0].message();
    assert!(m.starts_with(&format!("{bound} `1e300`")), "{m}");
    // Still finite-or-not for what is not a number of seconds at all.
    let c = config(&[("CLEVERAGENTS_RETRY_MAX_DELAY", "inf")]);
    let m = c.diagnostics()[0].message();
    assert!(
        m.starts_with("must be a finite number of seconds >= 0"),
        "{m}"
    );
}

/// C9: a document that is valid JSON but not an object says what it is instead; it is not
/// called invalid JSON.
#[test]
fn c9_a_non_object_document_says_what_it_got() {
    for (raw, got) in [
        ("[]", "an array `[]`"),
        ("5", "a number `5`"),
        (r#""{}""#, r#"a string `"{}"`"#),
        ("null", "null `null`"),
        ("true", "a boolean `true`"),
    ] {
        let c = with_overrides(raw);
        let d = c.diagnostics();
        assert_eq!(d.len(), 1, "{raw}: {d:?}");
        assert_eq!(d[0].kind(), DiagnosticKind::InvalidJson);
        assert_eq!(
            d[0].message(),
            format!("must be a JSON object of service names, got {got}; all overrides ignored"),
            "{raw}"
        );
    }
    let m = only_message("{not json");
    assert!(m.starts_with("is not valid JSON ("), "{m}");
}

/// C9: an array holding a number serde_json cannot hold is not read as a document at all; its
/// message still says an object was expected.
#[test]
fn c9_an_unreadable_non_object_document_says_an_object_was_expected() {
    let m = only_message("[1e400]");
    assert!(m.contains("expected a JSON object"), "{m}");
    assert!(m.ends_with("; all overrides ignored"), "{m}");
}

/// C9: a service's override (or section) that is not an object says what it is instead.
#[test]
fn c9_a_non_object_override_says_what_it_got() {
    for (value, got) in [
        ("5", "a number `5`"),
        (r#""fast""#, r#"a string `"fast"`"#),
        ("[1, 2]", "an array `[1,2]`"),
        ("null", "null `null`"),
        ("true", "a boolean `true`"),
    ] {
        let m = only_message(&format!(r#"{{"s": {value}}}"#));
        assert_eq!(
            m,
            format!("override must be a JSON object, got {got}; ignored"),
            "{value}"
        );
        let m = only_message(&format!(r#"{{"s": {{"retry": {value}}}}}"#));
        assert_eq!(
            m,
            format!("must be a JSON object, got {got}; the override for `s` is skipped"),
            "{value}"
        );
    }
}

/// C9 and the sanitizer: under a secret-looking service name only the value's kind is said.
#[test]
fn c9_a_non_object_under_a_secret_name_says_only_its_kind() {
    for (value, kind) in [
        (r#""hunter2""#, "a string"),
        ("12345678", "a number"),
        (r#"["hunter2"]"#, "an array"),
        ("false", "a boolean"),
        ("null", "null"),
        ("1e400", "invalid JSON"),
    ] {
        let m = only_message(&format!(r#"{{"api_key": {value}}}"#));
        assert_eq!(
            m,
            format!("override must be a JSON object, got {kind} (not shown); ignored"),
            "{value}"
        );
    }
}

/// C10: an unknown key given once is not said to be repeated; the hint follows the key.
#[test]
fn c10_an_unknown_key_given_once_is_not_called_repeated() {
    let m = only_message(r#"{"s": {"retry": {"max_atempts": 3}}}"#);
    assert_eq!(
        m,
        "unknown key `max_atempts` in the override for `s`, ignored; did you mean `max_attempts`?"
    );
    let m = only_message(r#"{"s": {"colour": 1}}"#);
    assert_eq!(
        m,
        "unknown key `colour` in the override for `s`, ignored; valid keys: retry, circuit_breaker"
    );
}

/// C7: a `service_name` key given once is ignored without a warning, but not without a
/// trace: a debug event names its path.
#[test]
fn c7_an_ignored_service_name_is_traced_at_debug_level() {
    let (c, events) = capture(|| {
        with_overrides(r#"{"plan_service": {"service_name": "x", "retry": {"service_name": "y"}}}"#)
    });
    assert!(c.diagnostics().is_empty(), "{:?}", c.diagnostics());
    let paths: Vec<_> = events
        .iter()
        .filter(|e| e.level == Level::DEBUG)
        .filter(|e| {
            e.fields
                .get("message")
                .is_some_and(|m| m.contains("`service_name`"))
        })
        .filter_map(|e| e.fields.get("path").map(String::as_str))
        .collect();
    assert_eq!(
        paths,
        [
            "plan_service.service_name",
            "plan_service.retry.service_name"
        ],
        "{events:?}"
    );
}

/// The JSON a `MissingService` message offers as the fix: the text after `write `.
fn offered_fix(message: &str) -> &str {
    let start = message.find("; write ").expect(message) + "; write ".len();
    let end = message.find(" with your service's name").expect(message);
    &message[start..end]
}

/// The only diagnostic of `json`, which must be a `MissingService` whose offered fix loads
/// with no diagnostic at all; returns the message and the fix.
fn missing_service(json: &str) -> (String, String) {
    let c = with_overrides(json);
    let d = c.diagnostics();
    assert_eq!(d.len(), 1, "{json}: {d:?}");
    assert_eq!(d[0].kind(), DiagnosticKind::MissingService, "{json}: {d:?}");
    let message = d[0].message().to_owned();
    let fix = offered_fix(&message).to_owned();
    let fixed = with_overrides(&fix);
    assert!(
        fixed.diagnostics().is_empty(),
        "{json}: the fix {fix} is refused: {:?}",
        fixed.diagnostics()
    );
    (message, fix)
}

/// C2: a section or setting without its service is told a fix that is itself valid: the
/// user's own object when it is small and valid for that section (or for the other one,
/// where its settings belong), else a valid example for that section (a breaker section is
/// not offered a retry key).
#[test]
fn c2_a_missing_service_offers_a_valid_fix() {
    for (json, fix) in [
        (
            r#"{"circuit_breaker": {"enabled": false}}"#,
            r#"{"plan_service": {"circuit_breaker": {"enabled": false}}}"#,
        ),
        (
            r#"{"retry": {"max_attempts":7,"backoff_strategy":"jitter"}}"#,
            r#"{"plan_service": {"retry": {"max_attempts": 7, "backoff_strategy": "jitter"}}}"#,
        ),
        (
            r#"{"recovery_timeout": 9}"#,
            r#"{"plan_service": {"circuit_breaker": {"recovery_timeout": 9}}}"#,
        ),
        (
            r#"{"jitter": false}"#,
            r#"{"plan_service": {"retry": {"jitter": false}}}"#,
        ),
        // Settings of the other section: the fix moves them where they belong.
        (
            r#"{"circuit_breaker": {"max_attempts": 5}}"#,
            r#"{"plan_service": {"retry": {"max_attempts": 5}}}"#,
        ),
        (
            r#"{"retry": {"failure_threshold": 4}}"#,
            r#"{"plan_service": {"circuit_breaker": {"failure_threshold": 4}}}"#,
        ),
    ] {
        let (m, offered) = missing_service(json);
        assert_eq!(offered, fix, "{json}: {m}");
    }
    let (m, _) = missing_service(r#"{"circuit_breaker": {"max_attempts": 5}}"#);
    assert!(
        m.contains("its settings belong to the other section"),
        "{m}"
    );
    // Not the user's object: a key of the other section, an invalid value, a repeated key,
    // a non-object, a large object. Each still gets a valid fix for its own section.
    for json in [
        r#"{"circuit_breaker": {"failure_threshold": 0}}"#,
        r#"{"retry": {"max_attempts": 5, "max_attempts": 6}}"#,
        r#"{"retry": 5}"#,
        r#"{"retry": {"api_key": "hunter2"}}"#,
        r#"{"recovery_timeout": -1}"#,
        r#"{"max_attempts": {"x": 1}}"#,
        r#"{"backoff_strategy": "sometimes"}"#,
        r#"{"retry": {"max_attempts": 5, "base_delay": 2.0, "max_delay": 30.0, "jitter": true, "backoff_strategy": "exponential", "total_timeout": 120.0}}"#,
    ] {
        let (m, fix) = missing_service(json);
        assert!(!m.contains("hunter2"), "{m}");
        let section = if json.contains("circuit_breaker") || json.contains("recovery_timeout") {
            "circuit_breaker"
        } else {
            "retry"
        };
        assert!(
            fix.starts_with(&format!(r#"{{"plan_service": {{"{section}": "#)),
            "{json}: {m}"
        );
    }
}

/// C2/C5: `enabled` under `retry` without its service is not moved to the breaker section:
/// there it means "no circuit breaker at all" (C5), not "no retries", and a user who copied
/// the fix would lose the breaker. The fix stops retries instead, and the message says why.
#[test]
fn c2_c5_enabled_under_retry_is_not_moved_to_turn_the_breaker_off() {
    for json in [
        r#"{"retry": {"enabled": false}}"#,
        r#"{"retry": {"enabled": false, "failure_threshold": 3}}"#,
    ] {
        let (m, fix) = missing_service(json);
        assert_eq!(
            fix, r#"{"plan_service": {"retry": {"max_attempts": 1}}}"#,
            "{json}: {m}"
        );
        assert!(
            m.contains("would turn the circuit breaker off"),
            "{json}: {m}"
        );
        assert!(!m.contains("belong to the other section"), "{json}: {m}");
    }
    // `enabled: true` asks for nothing retries lack: a retry example, and the same warning.
    let (m, fix) = missing_service(r#"{"retry": {"enabled": true}}"#);
    assert!(fix.starts_with(r#"{"plan_service": {"retry": "#), "{m}");
    assert!(m.contains("the circuit breaker's switch"), "{m}");
}

/// C2: a section given twice without its service is a missing service too, not a service
/// called `retry` told to write `retry.retry.max_attempts`.
#[test]
fn c2_a_repeated_section_without_its_service_is_a_missing_service() {
    let c = with_overrides(r#"{"retry": {"max_attempts": 5}, "retry": {"max_attempts": 6}}"#);
    let d = c.diagnostics();
    assert!(
        d.iter()
            .any(|x| x.kind() == DiagnosticKind::MissingService && x.path() == Some("retry")),
        "{d:?}"
    );
    assert!(
        d.iter().all(|x| !x.message().contains("retry.retry")),
        "{d:?}"
    );
    assert!(!c.service_names().iter().any(|s| s == "retry"), "{d:?}");
}

/// C2: a section or setting written in another case or with spaces around it is diagnosed as
/// the section it reads as, with a valid fix, not as a service told `Retry.retry.max_attempts`.
#[test]
fn c2_a_section_in_another_case_or_padded_is_a_missing_service() {
    for (json, section) in [
        (r#"{"Retry": {"max_attempts": 5}}"#, "retry"),
        (r#"{" retry ": {"max_attempts": 5}}"#, "retry"),
        (
            r#"{"CIRCUIT_BREAKER": {"enabled": false}}"#,
            "circuit_breaker",
        ),
        (r#"{"Max_Attempts": 5}"#, "retry"),
        (r#"{"\tenabled": false}"#, "circuit_breaker"),
    ] {
        let (m, fix) = missing_service(json);
        assert!(!m.contains(&format!(".{section}.")), "{json}: {m}");
        assert!(
            fix.starts_with(&format!(r#"{{"plan_service": {{"{section}": "#)),
            "{json}: {m}"
        );
    }
}

/// C11, C2: a service may be named like a section or setting: its override holds sections,
/// which shows it is a service, and applies to it with no diagnostic.
#[test]
fn c11_a_service_named_like_a_section_or_setting_is_a_service() {
    let c = with_overrides(
        r#"{"retry": {"retry": {"max_attempts": 4}}, "enabled": {"circuit_breaker": {"enabled": false}}, "Retry": {"retry": {"max_attempts": 6}}}"#,
    );
    assert!(c.diagnostics().is_empty(), "{:?}", c.diagnostics());
    let retry = c.resolve("retry", &CodeDeclared::EMPTY);
    assert_eq!(retry.max_attempts.value, 4);
    assert_eq!(retry.max_attempts.source, Source::Json);
    let enabled = c.resolve("enabled", &CodeDeclared::EMPTY);
    assert!(!enabled.enabled.value);
    assert_eq!(enabled.enabled.source, Source::Json);
    assert_eq!(
        c.resolve("Retry", &CodeDeclared::EMPTY).max_attempts.value,
        6
    );
}
