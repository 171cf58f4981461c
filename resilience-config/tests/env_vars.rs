//! C1: keys, env var names, defaults, strict parsing, and bad values kept out with a warning.

mod support;

use resilience_config::{
    CodeDeclared, Config, DiagnosticKind, EnvSource, GlobalKey, Source, DEFAULT_PREFIX,
};
use resilience_core::backoff::BackoffStrategy;
use std::collections::{BTreeMap, HashMap};
use support::{capture, config, env, warnings};

#[test]
fn c1_keys_env_vars_and_defaults_match_the_seed_table() {
    let expected = [
        ("retry_max_attempts", "CLEVERAGENTS_RETRY_MAX_ATTEMPTS", "3"),
        ("retry_base_delay", "CLEVERAGENTS_RETRY_BASE_DELAY", "1.0"),
        ("retry_max_delay", "CLEVERAGENTS_RETRY_MAX_DELAY", "60.0"),
        ("retry_jitter", "CLEVERAGENTS_RETRY_JITTER", "true"),
        (
            "retry_backoff_strategy",
            "CLEVERAGENTS_RETRY_BACKOFF_STRATEGY",
            "exponential",
        ),
        (
            "circuit_breaker_failure_threshold",
            "CLEVERAGENTS_CB_FAILURE_THRESHOLD",
            "5",
        ),
        (
            "circuit_breaker_recovery_timeout",
            "CLEVERAGENTS_CB_RECOVERY_TIMEOUT",
            "60.0",
        ),
        (
            "circuit_breaker_cooldown",
            "CLEVERAGENTS_CB_COOLDOWN",
            "30.0",
        ),
        (
            "retry_service_overrides",
            "CLEVERAGENTS_RETRY_SERVICE_OVERRIDES",
            "{}",
        ),
    ];
    let actual: Vec<_> = GlobalKey::ALL
        .iter()
        .map(|k| (k.key(), k.env_var(DEFAULT_PREFIX), k.default_text()))
        .collect();
    assert_eq!(actual, expected);
}

#[test]
fn c1_unset_globals_report_the_seed_defaults_as_built_in() {
    let g = Config::default().globals();
    let b = Source::BuiltIn;
    assert_eq!((g.max_attempts.value, g.max_attempts.source), (3, b));
    assert_eq!((g.base_delay.value, g.base_delay.source), (1.0, b));
    assert_eq!((g.max_delay.value, g.max_delay.source), (60.0, b));
    assert_eq!((g.jitter.value, g.jitter.source), (true, b));
    assert_eq!(g.backoff_strategy.value, BackoffStrategy::Exponential);
    assert_eq!(
        (g.failure_threshold.value, g.failure_threshold.source),
        (5, b)
    );
    assert_eq!(
        (g.recovery_timeout.value, g.recovery_timeout.source),
        (60.0, b)
    );
    assert_eq!((g.cooldown.value, g.cooldown.source), (30.0, b));
    // Overrides default `{}`: no service beyond the built-in 11, nothing reported.
    assert_eq!(Config::default().service_names().len(), 11);
    assert!(Config::default().diagnostics().is_empty());
}

#[test]
fn c1_every_global_variable_is_read_and_applied() {
    let c = config(&[
        ("CLEVERAGENTS_RETRY_MAX_ATTEMPTS", "4"),
        ("CLEVERAGENTS_RETRY_BASE_DELAY", "0.25"),
        ("CLEVERAGENTS_RETRY_MAX_DELAY", "9"),
        ("CLEVERAGENTS_RETRY_JITTER", "No"),
        ("CLEVERAGENTS_RETRY_BACKOFF_STRATEGY", "LINEAR"),
        ("CLEVERAGENTS_CB_FAILURE_THRESHOLD", "7"),
        ("CLEVERAGENTS_CB_RECOVERY_TIMEOUT", "12.5"),
        ("CLEVERAGENTS_CB_COOLDOWN", "3"),
    ]);
    assert!(c.diagnostics().is_empty(), "{:?}", c.diagnostics());
    let s = c.resolve("trace_service", &CodeDeclared::EMPTY);
    assert_eq!(s.max_attempts.value, 4);
    assert_eq!(s.base_delay.value, 0.25);
    assert_eq!(s.max_delay.value, 9.0);
    assert!(!s.jitter.value);
    assert_eq!(s.backoff_strategy.value, BackoffStrategy::Linear);
    assert_eq!(s.failure_threshold.value, 7);
    assert_eq!(s.recovery_timeout.value, 12.5);
    assert_eq!(s.cooldown_seconds.value, 3.0);
    assert_eq!(
        s.max_attempts.source,
        Source::Env("CLEVERAGENTS_RETRY_MAX_ATTEMPTS")
    );
    assert_eq!(
        s.cooldown_seconds.source,
        Source::Env("CLEVERAGENTS_CB_COOLDOWN")
    );
}

#[test]
fn c1_booleans_accept_true_false_1_0_yes_no_in_any_case() {
    for (text, want) in [
        ("true", true),
        ("FALSE", false),
        ("1", true),
        ("0", false),
        ("Yes", true),
        ("nO", false),
    ] {
        let c = config(&[("CLEVERAGENTS_RETRY_JITTER", text)]);
        assert_eq!(c.globals().jitter.value, want, "{text}");
        assert!(c.diagnostics().is_empty());
    }
}

/// A bad value keeps the lower layer's value, warns naming the variable, and is a diagnostic.
#[test]
fn c1_bad_values_are_rejected_not_clamped_and_keep_the_default() {
    let cases = [
        ("CLEVERAGENTS_RETRY_MAX_ATTEMPTS", "3.5"),
        ("CLEVERAGENTS_RETRY_MAX_ATTEMPTS", "0"),
        ("CLEVERAGENTS_RETRY_MAX_ATTEMPTS", "-2"),
        ("CLEVERAGENTS_RETRY_BASE_DELAY", "-1"),
        ("CLEVERAGENTS_RETRY_BASE_DELAY", "NaN"),
        ("CLEVERAGENTS_RETRY_MAX_DELAY", "inf"),
        ("CLEVERAGENTS_RETRY_JITTER", "maybe"),
        ("CLEVERAGENTS_RETRY_BACKOFF_STRATEGY", "fibonacci"),
        ("CLEVERAGENTS_CB_FAILURE_THRESHOLD", "0"),
        ("CLEVERAGENTS_CB_RECOVERY_TIMEOUT", "soon"),
        ("CLEVERAGENTS_CB_COOLDOWN", "-30"),
    ];
    let defaults = Config::default().resolve("plan_service", &CodeDeclared::EMPTY);
    for (var, value) in cases {
        let (c, events) = capture(|| config(&[(var, value)]));
        let d = c.diagnostics();
        assert_eq!(d.len(), 1, "{var}={value}: {d:?}");
        assert_eq!(d[0].kind(), DiagnosticKind::InvalidValue);
        assert_eq!(d[0].env_var(), var);
        assert!(d[0].message().contains(value), "{}", d[0]);
        let warns = warnings(&events);
        assert_eq!(warns.len(), 1, "{var}={value}");
        assert!(warns[0].text().contains(var), "{}", warns[0].text());
        assert_eq!(
            c.resolve("plan_service", &CodeDeclared::EMPTY),
            defaults,
            "{var}={value} must leave every value as it was"
        );
    }
}

#[test]
fn c1_bad_values_are_shown_sanitized_in_diagnostics_and_warnings() {
    let secret = "postgres://admin:hunter2@db/x password=hunter2";
    let (c, events) = capture(|| config(&[("CLEVERAGENTS_RETRY_MAX_DELAY", secret)]));
    let shown = resilience_core::sanitize(secret);
    let message = c.diagnostics()[0].message().to_owned();
    let warning = warnings(&events)[0].text();
    assert!(message.contains(shown.as_ref()), "{message}");
    assert!(warning.contains(shown.as_ref()), "{warning}");
    if shown != secret {
        // Once the sanitizer redacts, the raw secret must appear nowhere.
        assert!(!message.contains("hunter2") && !warning.contains("hunter2"));
    }
}

#[test]
fn c1_an_empty_variable_counts_as_unset() {
    let c = config(&[
        ("CLEVERAGENTS_RETRY_MAX_ATTEMPTS", ""),
        ("CLEVERAGENTS_RETRY_SERVICE_OVERRIDES", "  "),
    ]);
    assert!(c.diagnostics().is_empty());
    assert_eq!(c.globals().max_attempts.source, Source::BuiltIn);
}

#[test]
fn c1_the_prefix_is_configurable() {
    let vars = env(&[
        ("MYAPP_RETRY_MAX_ATTEMPTS", "9"),
        ("CLEVERAGENTS_RETRY_MAX_ATTEMPTS", "2"),
        (
            "MYAPP_RETRY_SERVICE_OVERRIDES",
            r#"{"x": {"retry": {"jitter": false}}}"#,
        ),
    ]);
    let c = Config::with_prefix("MYAPP", &vars);
    assert_eq!(c.prefix(), "MYAPP");
    let s = c.resolve("x", &CodeDeclared::EMPTY);
    assert_eq!(s.max_attempts.value, 9);
    assert_eq!(
        s.max_attempts.source,
        Source::Env("MYAPP_RETRY_MAX_ATTEMPTS")
    );
    assert_eq!((s.jitter.value, s.jitter.source), (false, Source::Json));
    // The default prefix still reads its own variables.
    assert_eq!(Config::from_source(&vars).globals().max_attempts.value, 2);
}

#[test]
fn c1_misspelt_prefixed_variables_are_reported_with_a_suggestion() {
    let c = config(&[
        ("CLEVERAGENTS_RETRY_MAX_ATEMPTS", "5"),
        ("CLEVERAGENTS_CB_HALF_OPEN_MAX_SUCCESSES", "2"),
        ("CLEVERAGENTS_LOG_LEVEL", "debug"),
    ]);
    let d = c.diagnostics();
    assert_eq!(d.len(), 2, "{d:?}");
    assert!(d.iter().all(|d| d.kind() == DiagnosticKind::UnknownKey));
    let typo = d
        .iter()
        .find(|d| d.env_var() == "CLEVERAGENTS_RETRY_MAX_ATEMPTS")
        .expect("typo reported");
    assert!(typo
        .message()
        .contains("did you mean CLEVERAGENTS_RETRY_MAX_ATTEMPTS"));
}

/// C10: a "did you mean" for an unknown variable compares what follows the family prefix, so
/// an unrelated name gets no false hint, and a total timeout is pointed to the overrides.
#[test]
fn c10_env_hints_compare_the_name_after_its_family() {
    let c = config(&[
        ("CLEVERAGENTS_RETRY_API_TOKEN", "x"),
        ("CLEVERAGENTS_RETRY_TOTAL_TIMEOUT", "30"),
        ("CLEVERAGENTS_RETRY_MAX_ATEMPTS", "3"),
    ]);
    let message = |var: &str| {
        c.diagnostics()
            .iter()
            .find(|d| d.to_string().contains(var))
            .unwrap_or_else(|| panic!("no diagnostic for {var}: {:?}", c.diagnostics()))
            .to_string()
    };
    assert!(
        !message("RETRY_API_TOKEN").contains("did you mean"),
        "{}",
        message("RETRY_API_TOKEN")
    );
    let total = message("RETRY_TOTAL_TIMEOUT");
    assert!(!total.contains("did you mean"), "{total}");
    assert!(total.contains("retry.total_timeout"), "{total}");
    assert!(message("RETRY_MAX_ATEMPTS").contains("did you mean CLEVERAGENTS_RETRY_MAX_ATTEMPTS?"));
}

/// C1: `-0` is zero seconds, from env and JSON alike; it used to be kept as `-0.0` and shown as
/// `-0.0 s` by `explain` (and `-0.0` in its JSON).
#[test]
fn c1_negative_zero_seconds_read_as_plain_zero() {
    let c = config(&[
        ("CLEVERAGENTS_RETRY_BASE_DELAY", "-0"),
        (
            "CLEVERAGENTS_RETRY_SERVICE_OVERRIDES",
            r#"{"plan_service": {"circuit_breaker": {"cooldown_seconds": -0.0}}}"#,
        ),
    ]);
    assert!(c.diagnostics().is_empty(), "{:?}", c.diagnostics());
    let s = c.resolve("plan_service", &CodeDeclared::EMPTY);
    for secs in [s.base_delay.value, s.cooldown_seconds.value] {
        assert_eq!(secs, 0.0);
        assert!(secs.is_sign_positive(), "{secs:?}");
    }
}

/// C1: each key's one-line description is the seed table's Description column.
#[test]
fn c1_key_descriptions_match_the_seed_table() {
    let expected = [
        "Maximum retry attempts",
        "Base delay (seconds)",
        "Max delay (seconds)",
        "Add random jitter",
        "Backoff: exponential, linear, fixed, jitter, none",
        "Failures before circuit opens",
        "Seconds before half-open",
        "Min seconds between recovery",
        "JSON per-service overrides",
    ];
    let actual: Vec<_> = GlobalKey::ALL.iter().map(|k| k.description()).collect();
    assert_eq!(actual, expected);
}

/// C1: a misspelt variable is caught from a `HashMap` environment too, not only a `BTreeMap`
/// (the `HashMap` source lists its names).
#[test]
fn c1_a_hash_map_environment_lists_its_names_for_typo_detection() {
    let vars = HashMap::from([
        ("CLEVERAGENTS_RETRY_MAX_ATEMPTS", "5"),
        ("CLEVERAGENTS_RETRY_JITTER", "no"),
    ]);
    let mut names = vars.var_names();
    names.sort();
    assert_eq!(
        names,
        [
            "CLEVERAGENTS_RETRY_JITTER",
            "CLEVERAGENTS_RETRY_MAX_ATEMPTS"
        ]
    );
    let c = Config::from_source(&vars);
    let d = c.diagnostics();
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].kind(), DiagnosticKind::UnknownKey);
    assert_eq!(d[0].env_var(), "CLEVERAGENTS_RETRY_MAX_ATEMPTS");
}

/// A source that only implements `var`: the trait's defaults.
struct ValuesOnly(BTreeMap<String, String>);

impl EnvSource for ValuesOnly {
    fn var(&self, name: &str) -> Option<String> {
        self.0.get(name).cloned()
    }
}

/// C1: a source that does not list its names (the trait's default) lists none, so nothing
/// is reported as misspelt, and none of its values is taken as lossy.
#[test]
fn c1_a_source_without_var_names_lists_none_and_reports_no_typos() {
    let source = ValuesOnly(env(&[
        ("CLEVERAGENTS_RETRY_MAX_ATEMPTS", "5"),
        ("CLEVERAGENTS_RETRY_MAX_ATTEMPTS", "4"),
    ]));
    assert!(source.var_names().is_empty());
    assert!(!source.is_lossy("CLEVERAGENTS_RETRY_MAX_ATTEMPTS"));
    let c = Config::from_source(&source);
    assert!(c.diagnostics().is_empty(), "{:?}", c.diagnostics());
    assert_eq!(c.globals().max_attempts.value, 4);
}

/// A source whose every value was read lossily (not valid UTF-8).
struct Lossy(BTreeMap<String, String>);

impl EnvSource for Lossy {
    fn var(&self, name: &str) -> Option<String> {
        self.0.get(name).cloned()
    }

    fn is_lossy(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }
}

/// C1, C8: a variable that is not valid UTF-8 is refused, and the message says what that
/// costs: for the overrides variable every override, for a global key only that key.
#[test]
fn c1_a_non_utf8_variable_is_refused_saying_what_is_ignored() {
    let c = Config::from_source(&Lossy(env(&[
        ("CLEVERAGENTS_RETRY_MAX_ATTEMPTS", "4"),
        (
            "CLEVERAGENTS_RETRY_SERVICE_OVERRIDES",
            r#"{"plan_service": {"retry": {"max_attempts": 5}}}"#,
        ),
    ])));
    let d = c.diagnostics();
    assert_eq!(d.len(), 2, "{d:?}");
    assert!(d.iter().all(|d| d.kind() == DiagnosticKind::InvalidValue));
    let message = |var: &str| {
        d.iter()
            .find(|d| d.env_var() == var)
            .unwrap_or_else(|| panic!("no diagnostic for {var}: {d:?}"))
            .message()
            .to_owned()
    };
    let overrides = message("CLEVERAGENTS_RETRY_SERVICE_OVERRIDES");
    assert!(overrides.contains("is not valid UTF-8"), "{overrides}");
    assert!(
        overrides.ends_with("; all overrides ignored"),
        "{overrides}"
    );
    let attempts = message("CLEVERAGENTS_RETRY_MAX_ATTEMPTS");
    assert!(
        attempts.ends_with("; ignored, each service keeps its own value"),
        "{attempts}"
    );
    assert!(!c.has_override("plan_service"));
    let plan = c.resolve("plan_service", &CodeDeclared::EMPTY);
    assert_eq!(plan.max_attempts.source, Source::BuiltIn);
}

/// C4: `half_open_max_successes` has no variable of its own: a variable spelt like one is
/// pointed to the per-service JSON overrides, not to a near name. The cooldown has one,
/// `CLEVERAGENTS_CB_COOLDOWN`: a variable spelt like the JSON key is pointed to it first,
/// then to the JSON key for a per-service value.
#[test]
fn c4_variables_for_json_keys_point_to_the_variable_or_the_overrides() {
    let message = |var: &str| {
        let c = config(&[(var, "2")]);
        let d = c.diagnostics();
        assert_eq!(d.len(), 1, "{var}: {d:?}");
        assert_eq!(d[0].kind(), DiagnosticKind::UnknownKey);
        d[0].message().to_owned()
    };
    let half_open = message("CLEVERAGENTS_CB_HALF_OPEN_MAX_SUCCESSES");
    assert!(
        half_open.ends_with(
            "; it is set per service in CLEVERAGENTS_RETRY_SERVICE_OVERRIDES \
             (circuit_breaker.half_open_max_successes)"
        ),
        "{half_open}"
    );
    assert!(!half_open.contains("did you mean"), "{half_open}");
    let cooldown = message("CLEVERAGENTS_CB_COOLDOWN_SECONDS");
    assert!(
        cooldown.ends_with(
            "; did you mean CLEVERAGENTS_CB_COOLDOWN (every service)? Per service, set \
             circuit_breaker.cooldown_seconds in CLEVERAGENTS_RETRY_SERVICE_OVERRIDES"
        ),
        "{cooldown}"
    );
}

/// C1: a rejected value says what was expected: a count that is not a number is not called
/// too large, one that is too large says so, and seconds name their rule.
#[test]
fn c1_a_rejected_value_says_what_was_expected() {
    let message = |var: &str, value: &str| {
        let c = config(&[(var, value)]);
        assert_eq!(c.diagnostics().len(), 1, "{var}={value}");
        c.diagnostics()[0].message().to_owned()
    };
    let attempts = "CLEVERAGENTS_RETRY_MAX_ATTEMPTS";
    for text in ["three", "3.5", "-1", "3x"] {
        let m = message(attempts, text);
        assert!(
            m.starts_with(&format!("must be a whole number >= 1, got `{text}`")),
            "{m}"
        );
    }
    let m = message(attempts, "99999999999999999999");
    assert!(m.starts_with("must be at most 4294967295, got"), "{m}");
    for var in [
        "CLEVERAGENTS_RETRY_BASE_DELAY",
        "CLEVERAGENTS_RETRY_MAX_DELAY",
        "CLEVERAGENTS_CB_RECOVERY_TIMEOUT",
        "CLEVERAGENTS_CB_COOLDOWN",
    ] {
        for text in ["-1", "soon"] {
            let m = message(var, text);
            assert!(
                m.starts_with(&format!(
                    "must be a finite number of seconds >= 0, got `{text}`"
                )),
                "{var}: {m}"
            );
        }
    }
}

/// C4, C10: the cooldown and half-open hints read only the name after the prefix: a prefix
/// that holds `COOLDOWN` or `HALF_OPEN` does not turn every typo in its family into a
/// cooldown question; the typo gets its own fix.
#[test]
fn c4_a_prefix_holding_cooldown_or_half_open_keeps_the_typo_hint() {
    for (prefix, var, fix) in [
        (
            "COOLDOWN_SVC",
            "COOLDOWN_SVC_RETRY_MAX_ATTEMPS",
            "; did you mean COOLDOWN_SVC_RETRY_MAX_ATTEMPTS?",
        ),
        (
            "HALF_OPEN_APP",
            "HALF_OPEN_APP_CB_FAILURE_TRESHOLD",
            "; did you mean HALF_OPEN_APP_CB_FAILURE_THRESHOLD?",
        ),
    ] {
        let c = Config::with_prefix(prefix, &env(&[(var, "2")]));
        let d = c.diagnostics();
        assert_eq!(d.len(), 1, "{var}: {d:?}");
        assert!(d[0].message().ends_with(fix), "{var}: {}", d[0].message());
    }
    // The hints still apply after such a prefix.
    let c = Config::with_prefix("COOLDOWN_SVC", &env(&[("COOLDOWN_SVC_CB_HALF_OPEN", "2")]));
    assert!(
        c.diagnostics()[0]
            .message()
            .contains("(circuit_breaker.half_open_max_successes)"),
        "{:?}",
        c.diagnostics()
    );
}
