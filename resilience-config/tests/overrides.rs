//! C2, C4–C10: the JSON per-service overrides.

mod support;

use resilience_config::{CodeDeclared, Config, DiagnosticKind, Source, MAX_OVERRIDES_LEN};
use resilience_core::backoff::BackoffStrategy;
use support::{capture, config, warnings, with_overrides, OVERRIDES, SEED_EXAMPLE};

fn resolve(c: &Config, service: &str) -> resilience_config::ServiceSettings {
    c.resolve(service, &CodeDeclared::EMPTY)
}

#[test]
fn c2_the_seed_example_applies_per_service() {
    let c = with_overrides(SEED_EXAMPLE);
    assert!(c.diagnostics().is_empty(), "{:?}", c.diagnostics());
    let plan = resolve(&c, "plan_service");
    assert_eq!(
        (plan.max_attempts.value, plan.max_attempts.source),
        (5, Source::Json)
    );
    assert_eq!(
        (plan.base_delay.value, plan.base_delay.source),
        (2.0, Source::Json)
    );
    assert_eq!(
        (plan.failure_threshold.value, plan.failure_threshold.source),
        (3, Source::Json)
    );
    // Untouched keys keep the built-in row.
    assert_eq!(plan.max_delay.source, Source::BuiltIn);
    assert_eq!(plan.backoff_strategy.value, BackoffStrategy::Jitter);
    let vs = resolve(&c, "vector_store_service");
    assert_eq!(vs.max_attempts.value, 7);
    assert_eq!(
        (vs.backoff_strategy.value, vs.backoff_strategy.source),
        (BackoffStrategy::Jitter, Source::Json)
    );
    // Policies build with those values.
    assert_eq!(plan.retry_policy().unwrap().max_attempts(), 5);
    assert_eq!(
        plan.breaker_config().unwrap().unwrap().failure_threshold(),
        3
    );
    // Another service is untouched.
    assert_eq!(
        resolve(&c, "trace_service"),
        resolve(&Config::default(), "trace_service")
    );
}

#[test]
fn c2_every_retry_and_breaker_key_is_accepted() {
    let c = with_overrides(
        r#"{"svc": {
            "retry": {"max_attempts": 2, "base_delay": 0.3, "max_delay": 4, "jitter": false,
                      "backoff_strategy": "fixed", "total_timeout": 12.5,
                      "retry_on_idempotent_only": false},
            "circuit_breaker": {"failure_threshold": 9, "recovery_timeout": 8,
                                "cooldown_seconds": 7, "half_open_max_successes": 3,
                                "enabled": true}}}"#,
    );
    assert!(c.diagnostics().is_empty(), "{:?}", c.diagnostics());
    let s = resolve(&c, "svc");
    assert!(s.entries().iter().all(|e| e.source == Source::Json));
    let r = s.retry_policy().unwrap();
    assert_eq!(r.max_attempts(), 2);
    assert_eq!(r.total_timeout().as_secs_f64(), 12.5);
    assert!(!r.retry_on_idempotent_only());
    assert_eq!(r.backoff().strategy(), BackoffStrategy::Fixed);
    let b = s.breaker_config().unwrap().unwrap();
    assert_eq!((b.failure_threshold(), b.half_open_max_successes()), (9, 3));
    assert_eq!(
        (b.recovery_timeout().as_secs(), b.cooldown().as_secs()),
        (8, 7)
    );
}

/// C4: `cooldown_seconds` and `half_open_max_successes` are per-service JSON keys; the latter
/// has no environment variable at all.
#[test]
fn c4_cooldown_and_half_open_probes_are_set_per_service_through_json() {
    let c = config(&[
        ("CLEVERAGENTS_CB_HALF_OPEN_MAX_SUCCESSES", "4"),
        (
            OVERRIDES,
            r#"{"plan_service": {"circuit_breaker": {"cooldown_seconds": 2.5, "half_open_max_successes": 3}}}"#,
        ),
    ]);
    let plan = resolve(&c, "plan_service")
        .breaker_config()
        .unwrap()
        .unwrap();
    assert_eq!(plan.half_open_max_successes(), 3);
    assert_eq!(plan.cooldown().as_secs_f64(), 2.5);
    // The would-be env var changed nothing for anyone else (and was reported as unknown).
    let other = resolve(&c, "trace_service");
    assert_eq!(
        (
            other.half_open_max_successes.value,
            other.half_open_max_successes.source
        ),
        (1, Source::BuiltIn)
    );
    assert_eq!(other.cooldown_seconds.value, 30.0);
    assert!(c
        .diagnostics()
        .iter()
        .any(|d| d.env_var() == "CLEVERAGENTS_CB_HALF_OPEN_MAX_SUCCESSES"));
}

#[test]
fn c5_enabled_false_means_no_breaker_at_all() {
    let c = with_overrides(r#"{"trace_service": {"circuit_breaker": {"enabled": false}}}"#);
    let s = resolve(&c, "trace_service");
    assert_eq!((s.enabled.value, s.enabled.source), (false, Source::Json));
    assert_eq!(s.breaker_config(), Ok(None));
    assert!(resolve(&c, "plan_service")
        .breaker_config()
        .unwrap()
        .is_some());
}

#[test]
fn c6_an_override_string_over_10000_characters_is_rejected_whole_with_one_warning() {
    let valid = r#"{"plan_service": {"retry": {"max_attempts": 9}}}"#;
    // Pad with whitespace (still valid JSON) to exactly the limit, then one past it.
    let at_limit = format!("{valid}{}", " ".repeat(MAX_OVERRIDES_LEN - valid.len()));
    assert_eq!(at_limit.chars().count(), 10_000);
    let ok = with_overrides(&at_limit);
    assert!(ok.diagnostics().is_empty());
    assert_eq!(resolve(&ok, "plan_service").max_attempts.value, 9);

    let over = format!("{at_limit} ");
    let (c, events) = capture(|| with_overrides(&over));
    assert_eq!(warnings(&events).len(), 1);
    assert_eq!(c.diagnostics().len(), 1);
    assert_eq!(c.diagnostics()[0].kind(), DiagnosticKind::TooLong);
    assert_eq!(resolve(&c, "plan_service").max_attempts.value, 3);
}

#[test]
fn c6_the_limit_counts_characters_not_bytes() {
    // 9 000 two-byte characters: 18 000 bytes but under the limit.
    let name = "é".repeat(9_000);
    let json = format!(r#"{{"{name}": {{}}}}"#);
    assert!(json.len() > MAX_OVERRIDES_LEN && json.chars().count() < MAX_OVERRIDES_LEN);
    let c = with_overrides(&json);
    assert!(c
        .diagnostics()
        .iter()
        .all(|d| d.kind() != DiagnosticKind::TooLong));
}

#[test]
fn c7_a_service_name_key_is_ignored() {
    let (c, events) = capture(|| {
        with_overrides(
            r#"{"plan_service": {"service_name": "trace_service",
                                 "retry": {"max_attempts": 4, "service_name": "x"}}}"#,
        )
    });
    assert!(c.diagnostics().is_empty(), "{:?}", c.diagnostics());
    assert!(warnings(&events).is_empty());
    assert_eq!(resolve(&c, "plan_service").max_attempts.value, 4);
    // It did not redirect the override to the named service.
    assert_eq!(
        resolve(&c, "trace_service").max_attempts.source,
        Source::BuiltIn
    );
}

#[test]
fn c8_an_invalid_override_is_skipped_whole_and_the_others_still_apply() {
    let (c, events) = capture(|| {
        with_overrides(
            r#"{"plan_service": {"retry": {"max_attempts": 0, "base_delay": 2.0},
                                 "circuit_breaker": {"failure_threshold": 2}},
                "trace_service": {"retry": {"max_attempts": 6}}}"#,
        )
    });
    let d = c.diagnostics();
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].kind(), DiagnosticKind::InvalidValue);
    assert_eq!(d[0].path(), Some("plan_service.retry.max_attempts"));
    assert_eq!(warnings(&events).len(), 1);
    // The whole plan_service override is skipped, valid keys in it included.
    let plan = resolve(&c, "plan_service");
    assert_eq!(plan, resolve(&Config::default(), "plan_service"));
    assert!(!c.has_override("plan_service"));
    assert_eq!(resolve(&c, "trace_service").max_attempts.value, 6);
}

#[test]
fn c8_each_kind_of_invalid_value_skips_the_override_and_names_the_path() {
    let cases = [
        (
            r#"{"retry": {"max_attempts": 3.5}}"#,
            "s.retry.max_attempts",
        ),
        (
            r#"{"retry": {"max_attempts": "5"}}"#,
            "s.retry.max_attempts",
        ),
        (r#"{"retry": {"base_delay": -1}}"#, "s.retry.base_delay"),
        (r#"{"retry": {"max_delay": null}}"#, "s.retry.max_delay"),
        (r#"{"retry": {"jitter": "yes"}}"#, "s.retry.jitter"),
        (
            r#"{"retry": {"backoff_strategy": "fibonacci"}}"#,
            "s.retry.backoff_strategy",
        ),
        (
            r#"{"retry": {"total_timeout": 0}}"#,
            "s.retry.total_timeout",
        ),
        (r#"{"retry": 5}"#, "s.retry"),
        (
            r#"{"circuit_breaker": {"failure_threshold": 0}}"#,
            "s.circuit_breaker.failure_threshold",
        ),
        (
            r#"{"circuit_breaker": {"half_open_max_successes": 0}}"#,
            "s.circuit_breaker.half_open_max_successes",
        ),
        (
            r#"{"circuit_breaker": {"cooldown_seconds": "30"}}"#,
            "s.circuit_breaker.cooldown_seconds",
        ),
        (
            r#"{"circuit_breaker": {"enabled": 0}}"#,
            "s.circuit_breaker.enabled",
        ),
    ];
    for (inner, path) in cases {
        let c = with_overrides(&format!(r#"{{"s": {inner}}}"#));
        let d = c.diagnostics();
        assert_eq!(d.len(), 1, "{inner}: {d:?}");
        assert_eq!(d[0].path(), Some(path), "{inner}");
        assert_eq!(d[0].kind(), DiagnosticKind::InvalidValue);
        assert!(!c.has_override("s"), "{inner}");
        assert!(!c.service_names().contains(&"s".to_owned()));
    }
}

#[test]
fn c9_a_non_object_override_is_logged_and_ignored() {
    for value in ["5", "\"fast\"", "[1, 2]", "null", "true"] {
        let json = format!(
            r#"{{"plan_service": {value}, "trace_service": {{"retry": {{"max_attempts": 2}}}}}}"#
        );
        let (c, events) = capture(|| with_overrides(&json));
        assert_eq!(warnings(&events).len(), 1, "{value}");
        let d = c.diagnostics();
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].kind(), DiagnosticKind::NotAnObject);
        assert_eq!(d[0].path(), Some("plan_service"));
        assert_eq!(
            resolve(&c, "plan_service").max_attempts.source,
            Source::BuiltIn
        );
        assert_eq!(resolve(&c, "trace_service").max_attempts.value, 2);
    }
}

#[test]
fn c9_a_non_object_or_malformed_document_is_reported_and_ignored() {
    for raw in ["[]", "5", "{not json", r#"{"a": {}"#] {
        let c = with_overrides(raw);
        let d = c.diagnostics();
        assert_eq!(d.len(), 1, "{raw}: {d:?}");
        assert_eq!(d[0].kind(), DiagnosticKind::InvalidJson);
        assert_eq!(d[0].env_var(), OVERRIDES);
        assert_eq!(c.service_names().len(), 11);
    }
}

#[test]
fn c10_unknown_keys_warn_naming_key_and_service_and_still_apply_the_rest() {
    let (c, events) = capture(|| {
        with_overrides(
            r#"{"plan_service": {"retry": {"max_atempts": 9, "base_delay": 2.0},
                                 "circuitbreaker": {},
                                 "max_attempts": 4,
                                 "colour": "blue"}}"#,
        )
    });
    let d = c.diagnostics();
    assert_eq!(d.len(), 4, "{d:?}");
    assert!(d.iter().all(|d| d.kind() == DiagnosticKind::UnknownKey));
    assert_eq!(warnings(&events).len(), 4);
    let by_path = |p: &str| {
        d.iter()
            .find(|d| d.path() == Some(p))
            .unwrap_or_else(|| panic!("no diagnostic for {p}: {d:?}"))
            .message()
            .to_owned()
    };
    let typo = by_path("plan_service.retry.max_atempts");
    assert!(
        typo.contains("`max_atempts`") && typo.contains("`plan_service`"),
        "{typo}"
    );
    assert!(typo.contains("did you mean `max_attempts`"), "{typo}");
    assert!(by_path("plan_service.circuitbreaker").contains("did you mean `circuit_breaker`"));
    assert!(by_path("plan_service.max_attempts").contains("plan_service.retry.max_attempts"));
    assert!(by_path("plan_service.colour").contains("valid keys: retry, circuit_breaker"));
    // Unknown keys do not invalidate the override: the valid key applied.
    let plan = resolve(&c, "plan_service");
    assert_eq!(
        (plan.base_delay.value, plan.base_delay.source),
        (2.0, Source::Json)
    );
    assert_eq!(plan.max_attempts.source, Source::BuiltIn);
}

#[test]
fn c10_a_service_spelt_like_a_built_in_one_is_flagged() {
    let c = with_overrides(r#"{"plan_servce": {"retry": {"max_attempts": 9}}, "billing": {}}"#);
    let d = c.diagnostics();
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].kind(), DiagnosticKind::SuspectServiceName);
    assert!(d[0].message().contains("did you mean `plan_service`"));
    // Still applied, to the service it names.
    assert_eq!(resolve(&c, "plan_servce").max_attempts.value, 9);
    assert!(c
        .service_names()
        .ends_with(&["billing".to_owned(), "plan_servce".to_owned()]));
}

#[test]
fn c8_an_empty_service_name_is_reported_and_ignored() {
    let c = with_overrides(r#"{"": {"retry": {"max_attempts": 2}}, " ": {}}"#);
    assert_eq!(c.diagnostics().len(), 2, "{:?}", c.diagnostics());
    assert!(c
        .diagnostics()
        .iter()
        .all(|d| d.kind() == DiagnosticKind::InvalidValue));
    assert_eq!(c.service_names().len(), 11);
}

/// C8: a number serde_json cannot hold (`1e400`) is one service's invalid value, reported at
/// its path; the other services still apply (it used to fail the whole string).
#[test]
fn c8_a_number_out_of_range_skips_only_its_service() {
    let c = with_overrides(
        r#"{"a_svc": {"retry": {"base_delay": 1e400}}, "plan_service": {"retry": {"max_attempts": 5}}}"#,
    );
    assert_eq!(resolve(&c, "plan_service").max_attempts.value, 5);
    assert_ne!(resolve(&c, "a_svc").base_delay.source, Source::Json);
    let d = c.diagnostics();
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].kind(), DiagnosticKind::InvalidValue);
    assert_eq!(d[0].path(), Some("a_svc.retry.base_delay"));
    assert!(d[0].to_string().contains("1e400"), "{}", d[0]);
}

/// C10, C8: a repeated key is an error naming it, not a silent last-wins: at the top level
/// (the service is skipped whole: which of its overrides was meant is unknown) and inside a
/// section (that service's override is skipped). Other services still apply.
#[test]
fn c10_a_repeated_key_is_reported_and_its_service_skipped() {
    let c = with_overrides(
        r#"{"plan_service": {"retry": {"max_attempts": 5}},
            "plan_service": {"circuit_breaker": {"failure_threshold": 2}},
            "trace_service": {"retry": {"max_attempts": 4, "max_attempts": 7}},
            "context_service": {"retry": {"max_attempts": 6}}}"#,
    );
    let plan = resolve(&c, "plan_service");
    assert_eq!(plan.max_attempts.source, Source::BuiltIn);
    assert_eq!(plan.failure_threshold.source, Source::BuiltIn);
    assert_eq!(
        resolve(&c, "trace_service").max_attempts.source,
        Source::BuiltIn
    );
    assert_eq!(resolve(&c, "context_service").max_attempts.value, 6);
    let d = c.diagnostics();
    let paths: Vec<_> = d.iter().map(|d| d.path()).collect();
    assert_eq!(
        paths,
        [
            Some("plan_service"),
            Some("trace_service.retry.max_attempts")
        ],
        "{d:?}"
    );
    assert!(d[0].to_string().contains("appears 2 times"), "{}", d[0]);
    assert!(d[1].to_string().contains("appears 2 times"), "{}", d[1]);
}

/// A total timeout that rounds to a zero `Duration` (`1e-10`) is invalid when read, not a
/// policy that fails to build later.
#[test]
fn c8_a_total_timeout_below_a_nanosecond_is_invalid() {
    let c = with_overrides(r#"{"plan_service": {"retry": {"total_timeout": 1e-10}}}"#);
    assert_eq!(c.diagnostics().len(), 1, "{:?}", c.diagnostics());
    assert_eq!(
        c.diagnostics()[0].path(),
        Some("plan_service.retry.total_timeout")
    );
    assert!(resolve(&c, "plan_service").retry_policy().is_ok());
}

/// An unknown key under a service name that holds a secret: the message says the name
/// sanitized, like its path (it used to carry it raw to the log).
#[test]
fn c10_an_unknown_key_message_sanitizes_the_service_name() {
    let c = with_overrides(r#"{"https://u:hunter2@h": {"bogus": 1}}"#);
    assert!(!c.diagnostics().is_empty());
    for d in c.diagnostics() {
        assert!(!d.to_string().contains("hunter2"), "{d}");
    }
}

/// A whole number past u64 is "too large", not "not a whole number".
#[test]
fn c1_a_count_past_u64_says_it_is_too_large() {
    let c =
        with_overrides(r#"{"plan_service": {"retry": {"max_attempts": 99999999999999999999999}}}"#);
    let message = c.diagnostics()[0].to_string();
    assert!(message.contains("at most 4294967295"), "{message}");
    let c = config(&[("CLEVERAGENTS_RETRY_MAX_ATTEMPTS", "99999999999999999999")]);
    let message = c.diagnostics()[0].to_string();
    assert!(message.contains("at most 4294967295"), "{message}");
}

/// C9 and the standard (nothing secret is logged): an override that is not an object, under a
/// name that says it is a secret (a credentials document pasted into the variable). Its value
/// was sanitized alone, without the name that makes it one, and so was shown whole.
#[test]
fn c9_a_non_object_under_a_secret_name_is_not_shown() {
    for value in [r#""hunter2""#, r#"["hunter2"]"#, "12345678"] {
        for name in ["api_key", "db_password", "GITHUB_TOKEN", "Authorization"] {
            let json = format!(r#"{{"{name}": {value}, "plan_service": {{}}}}"#);
            let (c, events) = capture(|| with_overrides(&json));
            let secret = value.trim_matches(['"', '[', ']']);
            let d = c.diagnostics();
            assert_eq!(d.len(), 1, "{json}: {d:?}");
            assert_eq!(d[0].kind(), DiagnosticKind::NotAnObject);
            assert!(!d[0].to_string().contains(secret), "{}", d[0]);
            for e in &events {
                assert!(!e.text().contains(secret), "{}", e.text());
            }
        }
    }
    // Under any other name the value still helps: it is shown (sanitized).
    let c = with_overrides(r#"{"plan_service": "fast"}"#);
    assert!(c.diagnostics()[0].message().contains("fast"));
}

/// C8: a count written as a float (`5.0`, `1e2`) is refused, but it is not "too large": the
/// message used to say `must be at most 4294967295, got 5.0`.
#[test]
fn c8_a_count_written_as_a_float_is_not_called_too_large() {
    for (raw, shown) in [("5.0", "5.0"), ("1e2", "100.0")] {
        let c = with_overrides(&format!(
            r#"{{"plan_service": {{"retry": {{"max_attempts": {raw}}}}}}}"#
        ));
        let d = c.diagnostics();
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].path(), Some("plan_service.retry.max_attempts"));
        let message = d[0].to_string();
        assert!(!message.contains("at most"), "{message}");
        assert!(message.contains("whole number"), "{message}");
        assert!(message.contains(shown), "{message}");
    }
}

/// C8, C10: a repeated service or section is still read, so `check` names the problems
/// inside it too (none of it applies). They used to be hidden behind "appears 2 times", to
/// surface one by one once the repeat was merged.
#[test]
fn c8_problems_inside_a_repeated_service_or_section_are_still_named() {
    let c = with_overrides(
        r#"{"s": {"retry": {"max_attempts": 0}},
            "s": {"retry": {"base_delay": -1}},
            "t": {"retry": {"jitter": "x"}, "retry": {"max_delay": null}},
            "plan_service": {"retry": {"max_attempts": 4}}}"#,
    );
    let d = c.diagnostics();
    let paths: Vec<_> = d.iter().filter_map(|d| d.path()).collect();
    assert_eq!(
        paths,
        [
            "s",
            "s.retry.max_attempts",
            "s.retry.base_delay",
            "t.retry",
            "t.retry.jitter",
            "t.retry.max_delay"
        ],
        "{d:?}"
    );
    assert!(d.iter().all(|d| d.kind() == DiagnosticKind::InvalidValue));
    assert!(!c.has_override("s") && !c.has_override("t"));
    assert_eq!(resolve(&c, "plan_service").max_attempts.value, 4);
}

/// C7, C8, C10: a repeated key that is ignored anyway, `service_name` (C7) or an unknown
/// key, does not skip the service: no value is in doubt, so the rest of the override applies
/// and the repeat is a warning (it used to be an InvalidValue skipping the whole service).
/// A repeated key that sets something still skips it (see
/// `c10_a_repeated_key_is_reported_and_its_service_skipped`).
#[test]
fn c7_c10_a_repeated_ignored_key_warns_and_the_override_still_applies() {
    let (c, events) = capture(|| {
        with_overrides(
            r#"{"plan_service": {"service_name": "a", "service_name": "b",
                                 "retry": {"max_attempts": 4,
                                           "service_name": "x", "service_name": "y"}},
                "trace_service": {"retry": {"max_atempts": 1, "max_atempts": 2,
                                            "base_delay": 2.0},
                                  "colour": 1, "colour": 2}}"#,
        )
    });
    let plan = resolve(&c, "plan_service");
    assert_eq!(
        (plan.max_attempts.value, plan.max_attempts.source),
        (4, Source::Json)
    );
    let trace = resolve(&c, "trace_service");
    assert_eq!(
        (trace.base_delay.value, trace.base_delay.source),
        (2.0, Source::Json)
    );
    let d = c.diagnostics();
    assert!(d.iter().all(|d| d.kind().is_warning()), "{d:?}");
    let paths: Vec<_> = d.iter().filter_map(|d| d.path()).collect();
    assert_eq!(
        paths,
        [
            "plan_service.service_name",
            "plan_service.retry.service_name",
            "trace_service.retry.max_atempts",
            "trace_service.colour",
        ],
        "{d:?}"
    );
    for d in d {
        assert!(d.message().contains("appears 2 times"), "{d}");
    }
    // The unknown key still gets its suggestion, said once.
    assert!(
        d[2].message().contains("did you mean `max_attempts`?"),
        "{}",
        d[2]
    );
    assert_eq!(d[0].kind(), DiagnosticKind::RepeatedIgnoredKey);
    assert_eq!(d[2].kind(), DiagnosticKind::UnknownKey);
    assert_eq!(warnings(&events).len(), 4);
}

/// C2: overrides are keyed by service first. A section or setting at the top level has lost
/// its service: an error that shows the shape meant, not a new service called `retry` with
/// a hint to write `retry.retry.max_attempts`.
#[test]
fn c2_a_section_or_setting_without_its_service_is_an_error_showing_the_shape() {
    let c = with_overrides(
        r#"{"retry": {"max_attempts": 5}, "recovery_timeout": 9, "plan_service": {"retry": {"max_attempts": 4}}}"#,
    );
    let d = c.diagnostics();
    assert_eq!(d.len(), 2, "{d:?}");
    let by_path = |p: &str| d.iter().find(|x| x.path() == Some(p)).unwrap();
    let section = by_path("retry");
    assert_eq!(section.kind(), DiagnosticKind::MissingService);
    assert!(!section.kind().is_warning());
    assert!(
        section
            .message()
            .contains("`retry` is a section, not a service")
            && section
                .message()
                .contains(r#"{"plan_service": {"retry": {"max_attempts": 5}}}"#),
        "{}",
        section.message()
    );
    let setting = by_path("recovery_timeout");
    assert_eq!(setting.kind(), DiagnosticKind::MissingService);
    assert!(
        setting
            .message()
            .contains(r#"{"plan_service": {"circuit_breaker": {"recovery_timeout": 9}}}"#),
        "{}",
        setting.message()
    );
    assert!(
        !c.service_names().iter().any(|s| s == "retry"),
        "no phantom service"
    );
    assert_eq!(resolve(&c, "plan_service").max_attempts.value, 4);
}

/// C10: an unknown key is named as written, dots and all; it was named by its last piece
/// (`attempts` for `max.attempts`), which is not what the user typed.
#[test]
fn c10_an_unknown_key_with_a_dot_is_named_whole() {
    let c = with_overrides(
        r#"{"plan_service": {"retry.max_attempts": 4, "retry": {"max.attempts": 5}}}"#,
    );
    let d = c.diagnostics();
    assert_eq!(d.len(), 2, "{d:?}");
    let messages: Vec<&str> = d.iter().map(|x| x.message()).collect();
    assert!(
        messages[0].contains("unknown key `retry.max_attempts` in the override for `plan_service`"),
        "{messages:?}"
    );
    assert!(
        messages[1].contains("unknown key `max.attempts` in the override for `plan_service`"),
        "{messages:?}"
    );
}
