//! The `resilience-config` binary end to end: `explain` (table and `--json`), `check`, `--help`.
//! Each run gets a clean environment plus the variables the test sets.

mod support;

use serde_json::Value;
use std::process::{Command, Output};
use support::{OVERRIDES, SEED_EXAMPLE};

fn run(args: &[&str], vars: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_resilience-config"));
    cmd.args(args).env_clear();
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.output().expect("the binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The row of `setting` in the block of `service` in the explain table.
fn row(table: &str, service: &str, setting: &str) -> String {
    let block: Vec<&str> = table
        .lines()
        .skip_while(|l| !l.starts_with(&format!("{service} ")))
        .take_while(|l| !l.trim().is_empty())
        .collect();
    block
        .iter()
        .find(|l| l.split_whitespace().any(|w| w == setting))
        .unwrap_or_else(|| panic!("no {service} {setting} in\n{table}"))
        .to_string()
}

#[test]
fn c13_explain_shows_the_seed_example_with_sources() {
    let o = run(&["explain"], &[(OVERRIDES, SEED_EXAMPLE)]);
    assert!(o.status.success());
    let t = stdout(&o);
    assert!(
        row(&t, "plan_service", "retry.max_attempts").ends_with("5        json"),
        "{t}"
    );
    assert!(row(&t, "plan_service", "retry.base_delay").contains("2.0 s"));
    assert!(row(&t, "plan_service", "retry.base_delay").ends_with("json"));
    assert!(row(&t, "plan_service", "circuit_breaker.failure_threshold").contains("3"));
    assert!(row(&t, "plan_service", "retry.max_delay").ends_with("built-in"));
    assert!(row(&t, "vector_store_service", "retry.max_attempts").contains("7"));
    let strategy = row(&t, "vector_store_service", "retry.backoff_strategy");
    assert!(
        strategy.contains("jitter") && strategy.ends_with("json"),
        "{strategy}"
    );
    // Every built-in service has a block.
    for name in [
        "plan_lifecycle_service",
        "error_recovery_service",
        "decision_service",
    ] {
        assert!(t.lines().any(|l| l.starts_with(name)), "{name}");
    }
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn c13_explain_names_the_env_var_behind_a_value() {
    let o = run(
        &["explain", "--service", "trace_service"],
        &[("CLEVERAGENTS_RETRY_MAX_ATTEMPTS", "4")],
    );
    let t = stdout(&o);
    assert!(row(&t, "trace_service", "retry.max_attempts")
        .ends_with("env CLEVERAGENTS_RETRY_MAX_ATTEMPTS"));
    assert!(
        !t.contains("plan_service"),
        "--service shows one service only"
    );
}

#[test]
fn c11_explain_an_unknown_service_shows_database_defaults() {
    let t = stdout(&run(&["explain", "--service", "billing"], &[]));
    assert!(row(&t, "billing", "retry.max_attempts").contains("database"));
    assert!(row(&t, "billing", "retry.backoff_strategy").contains("fixed"));
    assert!(row(&t, "billing", "retry.backoff_strategy").ends_with("default"));
}

#[test]
fn c13_explain_json_has_every_value_with_its_source() {
    let o = run(&["explain", "--json"], &[(OVERRIDES, SEED_EXAMPLE)]);
    assert!(o.status.success());
    let doc: Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    let services = doc["services"].as_object().expect("services");
    assert_eq!(services.len(), 11);
    let keys = [
        "max_attempts",
        "base_delay",
        "max_delay",
        "jitter",
        "backoff_strategy",
        "failure_threshold",
        "recovery_timeout",
        "cooldown_seconds",
        "half_open_max_successes",
        "enabled",
    ];
    for (name, svc) in services {
        for k in keys {
            assert!(svc[k].get("value").is_some(), "{name}.{k}");
            assert!(svc[k]["source"].is_string(), "{name}.{k}");
        }
    }
    let plan = &doc["services"]["plan_service"];
    assert_eq!(plan["max_attempts"]["value"], 5);
    assert_eq!(plan["max_attempts"]["source"], "json");
    assert_eq!(
        plan["max_attempts"]["path"],
        "plan_service.retry.max_attempts"
    );
    assert_eq!(plan["base_delay"]["value"], 2.0);
    assert_eq!(plan["failure_threshold"]["value"], 3);
    assert_eq!(plan["max_delay"]["source"], "built-in");
    assert_eq!(plan["category"], "provider");
    let vs = &doc["services"]["vector_store_service"];
    assert_eq!(vs["max_attempts"]["value"], 7);
    assert_eq!(vs["backoff_strategy"]["value"], "jitter");
    assert_eq!(doc["diagnostics"].as_array().map(Vec::len), Some(0));
}

#[test]
fn c13_explain_json_for_one_service_names_env_vars() {
    let o = run(
        &["explain", "--json", "--service", "plan_service"],
        &[("CLEVERAGENTS_CB_COOLDOWN", "12")],
    );
    let doc: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let services = doc["services"].as_object().expect("services");
    assert_eq!(services.keys().collect::<Vec<_>>(), ["plan_service"]);
    let cooldown = &doc["services"]["plan_service"]["cooldown_seconds"];
    assert_eq!(cooldown["value"], 12.0);
    assert_eq!(cooldown["source"], "env");
    assert_eq!(cooldown["env_var"], "CLEVERAGENTS_CB_COOLDOWN");
}

#[test]
fn c1_check_passes_on_a_valid_environment() {
    for vars in [vec![], vec![(OVERRIDES, SEED_EXAMPLE)]] {
        let o = run(&["check"], &vars);
        assert_eq!(o.status.code(), Some(0));
        assert!(stdout(&o).starts_with("OK:"), "{}", stdout(&o));
    }
}

#[test]
fn c1_c8_check_lists_every_problem_by_variable_or_path_and_exits_1() {
    let o = run(
        &["check"],
        &[
            ("CLEVERAGENTS_RETRY_MAX_ATTEMPTS", "3.5"),
            ("CLEVERAGENTS_CB_RECOVERY_TIMEOUT", "-1"),
            (
                OVERRIDES,
                r#"{"plan_service": {"retry": {"max_attempts": 0}}, "x": {"retry": {"jiter": true}}}"#,
            ),
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    for needle in [
        "CLEVERAGENTS_RETRY_MAX_ATTEMPTS",
        "CLEVERAGENTS_CB_RECOVERY_TIMEOUT",
        "plan_service.retry.max_attempts",
        "x.retry.jiter",
        // The unknown key is named but only warns (C10).
        "3 problem(s) found, 1 warning(s)",
    ] {
        assert!(out.contains(needle), "{needle} missing from\n{out}");
    }
}

#[test]
fn c6_check_fails_on_an_oversized_override_string() {
    let big = format!("{{}}{}", " ".repeat(10_000));
    let o = run(&["check"], &[(OVERRIDES, &big)]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stdout(&o).matches("error:").count(), 1);
}

#[test]
fn check_honours_a_custom_prefix() {
    let o = run(
        &["--prefix", "MYAPP", "check"],
        &[("MYAPP_RETRY_JITTER", "perhaps")],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("MYAPP_RETRY_JITTER"));
}

#[test]
fn explain_warns_on_stderr_but_succeeds() {
    let o = run(&["explain"], &[("CLEVERAGENTS_RETRY_JITTER", "perhaps")]);
    assert!(o.status.success());
    // Rejected, as `check` says: an error, not a warning.
    assert!(String::from_utf8_lossy(&o.stderr).contains("error: CLEVERAGENTS_RETRY_JITTER"));
}

/// C10: `explain` labels each finding as `check` does: a value applied as written (a
/// misspelt key, ignored) is a warning; a rejected one is an error.
#[test]
fn c10_explain_and_check_label_a_finding_alike() {
    let vars = [
        ("CLEVERAGENTS_RETRY_MAX_ATEMPTS", "4"),
        ("CLEVERAGENTS_RETRY_JITTER", "perhaps"),
    ];
    let explain = String::from_utf8_lossy(&run(&["explain"], &vars).stderr).into_owned();
    let check = stdout(&run(&["check"], &vars));
    for name in [
        "CLEVERAGENTS_RETRY_MAX_ATEMPTS",
        "CLEVERAGENTS_RETRY_JITTER",
    ] {
        let label = |text: &str| {
            text.lines()
                .find(|l| l.contains(name))
                .and_then(|l| l.split(':').next())
                .map(str::to_owned)
        };
        assert_eq!(
            label(&explain),
            label(&check),
            "{name}:\n{explain}\n{check}"
        );
    }
    assert!(
        explain.contains("warning: CLEVERAGENTS_RETRY_MAX_ATEMPTS"),
        "{explain}"
    );
}

#[test]
fn help_lists_both_subcommands() {
    let o = run(&["--help"], &[]);
    assert!(o.status.success());
    let h = stdout(&o);
    assert!(h.contains("explain") && h.contains("check") && h.contains("--prefix"));
    let o = run(&["explain", "--help"], &[]);
    assert!(stdout(&o).contains("--json") && stdout(&o).contains("--service"));
    // No subcommand is a usage error.
    assert_eq!(run(&[], &[]).status.code(), Some(2));
}

#[test]
fn explain_marks_a_base_delay_under_the_strategy_floor() {
    // R5: linear waits at least 2.0 s; the table shows the configured value and the floor.
    let o = run(
        &["explain", "--service", "trace_service"],
        &[("CLEVERAGENTS_RETRY_BACKOFF_STRATEGY", "linear")],
    );
    let base = row(&stdout(&o), "trace_service", "retry.base_delay");
    assert!(base.contains("0.5 s (floor 2.0 s)"), "{base}");
}

/// R5: `explain --json` says a base delay is under its strategy's floor, as the table does;
/// it used to give the configured value alone, so a tool read 0.5 s where 2.0 s is used.
#[test]
fn r5_explain_json_reports_a_base_delay_under_the_strategy_floor() {
    let o = run(
        &["explain", "--json"],
        &[("CLEVERAGENTS_RETRY_BACKOFF_STRATEGY", "linear")],
    );
    let doc: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let base = &doc["services"]["trace_service"]["base_delay"];
    assert_eq!(base["value"], 0.5, "{base}");
    assert_eq!(base["floor"], 2.0, "{base}");
    let o = run(&["explain", "--json"], &[]);
    let doc: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let base = &doc["services"]["trace_service"]["base_delay"];
    assert!(
        base.get("floor").is_none(),
        "0.5 s is over the fixed floor: {base}"
    );
}

/// C11: a custom service is valid; only a name an edit or two from a built-in one is
/// suspect, and `check` shows that as a warning without failing (it used to flag
/// `user_service` as "did you mean `plan_service`?" and exit 1).
#[test]
fn c11_check_passes_custom_services_and_warns_on_a_near_miss() {
    for name in [
        "user_service",
        "auth_service",
        "chat_service",
        "cache_service",
    ] {
        let json = format!(r#"{{"{name}": {{"retry": {{"max_attempts": 5}}}}}}"#);
        let o = run(&["check"], &[(OVERRIDES, &json)]);
        assert_eq!(o.status.code(), Some(0), "{name}: {}", stdout(&o));
        assert!(
            !stdout(&o).contains("did you mean"),
            "{name}: {}",
            stdout(&o)
        );
    }
    let o = run(
        &["check"],
        &[(
            OVERRIDES,
            r#"{"plan_servce": {"retry": {"max_attempts": 5}}}"#,
        )],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let out = stdout(&o);
    assert!(
        out.contains("warning:") && out.contains("did you mean `plan_service`"),
        "{out}"
    );
    assert!(out.contains("OK:"), "{out}");
}

/// A service name is input like any other value: one that looks like a credential (a token
/// pasted as a key) is shown sanitized, in the table and in `--json`.
#[test]
fn c13_explain_never_prints_a_service_name_that_looks_like_a_secret() {
    let token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789AB";
    let json = format!(r#"{{"{token}": {{"retry": {{"max_attempts": 2}}}}}}"#);
    for args in [&["explain"][..], &["explain", "--json"][..]] {
        let o = run(args, &[(OVERRIDES, &json)]);
        assert!(o.status.success());
        let all = format!("{}{}", stdout(&o), String::from_utf8_lossy(&o.stderr));
        assert!(!all.contains(token), "{args:?} printed the token:\n{all}");
        assert!(all.contains("max_attempts"), "{all}");
    }
}

/// Two names that sanitize alike stay two services in `--json`, each with its own values:
/// the second used to overwrite the first under the same redacted key.
#[test]
fn c13_explain_json_keeps_two_secret_looking_names_apart() {
    let a = "ghp_abcdefghijklmnopqrstuvwxyz0123456789AB";
    let b = "ghp_ZYXWVUTSRQPONMLKJIHGFEDCBA9876543210zy";
    let json = format!(
        r#"{{"{a}": {{"retry": {{"max_attempts": 2}}}}, "{b}": {{"retry": {{"max_attempts": 7}}}}}}"#
    );
    let o = run(&["explain", "--json"], &[(OVERRIDES, &json)]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}");
    assert!(!out.contains(a) && !out.contains(b), "{out}");
    let doc: serde_json::Value = serde_json::from_str(&out).expect("explain --json is JSON");
    let mut attempts: Vec<u64> = doc["services"]
        .as_object()
        .expect("services")
        .values()
        .filter(|s| s["max_attempts"]["source"] == "json")
        .filter_map(|s| s["max_attempts"]["value"].as_u64())
        .collect();
    attempts.sort_unstable();
    assert_eq!(attempts, [2, 7], "{out}");
}

/// A base delay above the cap is valid (the cap wins, R4) but almost surely a mistake:
/// `check` says so, naming both values and their sources, and still exits 0.
#[test]
fn c1_check_warns_when_base_delay_exceeds_max_delay() {
    let json = r#"{"plan_service": {"retry": {"base_delay": 90}}}"#;
    let o = run(&["check"], &[(OVERRIDES, json)]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}");
    let line = out
        .lines()
        .find(|l| l.starts_with("warning: plan_service: retry.base_delay 90 s (json)"))
        .unwrap_or_else(|| panic!("no warning in\n{out}"));
    assert!(
        line.contains("exceeds retry.max_delay") && line.contains("(built-in)"),
        "{line}"
    );
    assert!(out.contains("OK:"), "{out}");
}

/// C1: a variable that is not valid UTF-8 is refused and named. An override under a
/// service name with a stray byte used to apply to a service no code can name (`my_svc�`),
/// and `check` said OK.
#[cfg(unix)]
#[test]
fn c1_check_refuses_a_variable_that_is_not_utf8() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let cases: [(&str, &[u8]); 2] = [
        (
            OVERRIDES,
            b"{\"my_svc\xff\": {\"retry\": {\"max_attempts\": 5}}}",
        ),
        ("CLEVERAGENTS_RETRY_BACKOFF_STRATEGY", b"fixed\xff"),
    ];
    for (var, bytes) in cases {
        let o = Command::new(env!("CARGO_BIN_EXE_resilience-config"))
            .arg("check")
            .env_clear()
            .env(var, OsStr::from_bytes(bytes))
            .output()
            .expect("the binary runs");
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(1), "{var}: {out}");
        assert!(out.contains(&format!("error: {var}: ")), "{out}");
        assert!(out.contains("not valid UTF-8"), "{out}");
        assert!(out.contains("1 problem(s)"), "{out}");
    }
}

/// R5, R4: a strategy's floor above `max_delay` is defeated by the cap (linear 0.5 s, floor
/// 2.0 s, cap 1.0 s: every wait is 1.0 s). `check` warns as for a base delay above the cap;
/// it compared the configured 0.5 s and said nothing.
#[test]
fn r5_check_warns_when_the_floor_exceeds_max_delay() {
    let json = r#"{"trace_service": {"retry": {"backoff_strategy": "linear", "max_delay": 1.0}}}"#;
    let o = run(&["check"], &[(OVERRIDES, json)]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}");
    let line = out
        .lines()
        .find(|l| l.starts_with("warning: trace_service: retry.base_delay"))
        .unwrap_or_else(|| panic!("no warning in\n{out}"));
    assert!(line.contains("floor 2.0 s"), "{line}");
    assert!(
        line.contains("exceeds retry.max_delay 1 s (json)"),
        "{line}"
    );
}

/// R4: with strategy `none` there is no wait, so a base delay over `max_delay` (say a cap of 0
/// set for that very reason) changes nothing and is not worth a warning; `check` gave one.
#[test]
fn r4_check_does_not_warn_about_the_base_delay_of_strategy_none() {
    let json = r#"{"trace_service": {"retry": {"backoff_strategy": "none", "max_delay": 0}}}"#;
    let o = run(&["check"], &[(OVERRIDES, json)]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}");
    assert!(!out.contains("warning"), "{out}");
}

/// C13: `explain | head -1` with a long output (many services in a valid override) ends
/// quietly with its usual status; it panicked ("failed printing to stdout: Broken pipe",
/// status 101) once the reader had gone.
#[test]
fn c13_explain_into_a_closed_pipe_exits_quietly() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let services: Vec<String> = (0..900).map(|i| format!(r#""s{i}": {{}}"#)).collect();
    let json = format!("{{{}}}", services.join(","));
    let mut child = Command::new(env!("CARGO_BIN_EXE_resilience-config"))
        .arg("explain")
        .env_clear()
        .env(OVERRIDES, &json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut first = String::new();
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    out.read_line(&mut first).expect("a first line");
    assert!(first.starts_with("resilience configuration"), "{first}");
    drop(out);
    let o = child.wait_with_output().expect("the binary ends");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(o.status.code(), Some(0), "{err}");
}

/// C13: a failed write (a full disk) is one line on stderr and status 2, not a panic.
#[cfg(target_os = "linux")]
#[test]
fn c13_explain_into_a_full_device_reports_the_write_error() {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    for args in [&["explain"][..], &["explain", "--json"], &["check"]] {
        let o = Command::new(env!("CARGO_BIN_EXE_resilience-config"))
            .args(args)
            .env_clear()
            .stdout(full.try_clone().expect("a second handle"))
            .output()
            .expect("the binary runs");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(err.contains("cannot write"), "{args:?}: {err}");
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    }
}

/// A service name read from the environment must not drive the terminal: an escape sequence
/// in an override's key (a cleared screen, a colour, a cursor move hiding the lines above)
/// is shown escaped by `explain` and `check`, on stdout and on stderr.
#[test]
fn c13_control_characters_in_a_service_name_are_shown_escaped() {
    let overrides =
        r#"{"evil\u001b[2J\u001b[31msvc": {"retry": {"max_attempts": 0}}, "ok\u0007": {}}"#;
    for args in [&["explain"][..], &["check"], &["explain", "--json"]] {
        let o = run(args, &[(OVERRIDES, overrides)]);
        for (what, bytes) in [("stdout", &o.stdout), ("stderr", &o.stderr)] {
            let text = String::from_utf8_lossy(bytes);
            assert!(
                !bytes.iter().any(|&b| b < 0x20 && b != b'\n' && b != b'\t'),
                "{args:?} {what} holds raw control characters: {text:?}"
            );
        }
        let all = format!("{}{}", stdout(&o), String::from_utf8_lossy(&o.stderr));
        assert!(
            all.contains("evil"),
            "{args:?}: the service is still named: {all}"
        );
    }
}

/// C10: an unknown key inside an override *warns*: `check` names it (path and closest valid
/// key) and exits 0 when nothing else is wrong. It used to count as a problem and exit 1.
/// `--strict` makes any warning fail, for CI that wants typos to break the build.
#[test]
fn c10_check_warns_on_an_unknown_key_and_strict_fails_on_it() {
    let typo = r#"{"plan_service": {"retry": {"max_atempts": 5, "base_delay": 2.0}}}"#;
    let o = run(&["check"], &[(OVERRIDES, typo)]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    let line = out
        .lines()
        .find(|l| l.contains("plan_service.retry.max_atempts"))
        .unwrap_or_else(|| panic!("the key is not named in\n{out}"));
    assert!(line.starts_with("warning:"), "{line}");
    assert!(line.contains("did you mean `max_attempts`?"), "{line}");
    assert!(!out.contains("error:"), "{out}");
    assert!(out.contains("OK:") && out.contains("1 warning(s)"), "{out}");

    let o = run(&["check", "--strict"], &[(OVERRIDES, typo)]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("plan_service.retry.max_atempts"), "{out}");
    assert!(!out.contains("OK:"), "{out}");
    assert!(out.contains("--strict"), "{out}");

    // A clean environment passes `--strict` too.
    let o = run(&["check", "--strict"], &[(OVERRIDES, SEED_EXAMPLE)]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

/// C10 and C1 together: an unknown key stays a warning next to an invalid value, which still
/// fails `check` (exit 1) and is the only thing counted as a problem. A misspelt prefixed
/// variable is an unknown key too: a warning, failing only under `--strict`.
#[test]
fn c10_c1_an_invalid_value_still_fails_check_beside_a_warning() {
    let json = r#"{"plan_service": {"retry": {"max_attempts": 0, "jiter": true}}}"#;
    let o = run(&["check"], &[(OVERRIDES, json)]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("error:") && l.contains("plan_service.retry.max_attempts")),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("warning:") && l.contains("plan_service.retry.jiter")),
        "{out}"
    );
    assert!(out.contains("1 problem(s)"), "{out}");

    let vars = [("CLEVERAGENTS_RETRY_MAX_ATEMPTS", "5")];
    let o = run(&["check"], &vars);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("warning: CLEVERAGENTS_RETRY_MAX_ATEMPTS")
            && out.contains("did you mean CLEVERAGENTS_RETRY_MAX_ATTEMPTS?"),
        "{out}"
    );
    assert_eq!(run(&["check", "--strict"], &vars).status.code(), Some(1));
}

/// C10: a variable with a word left out is pointed at the one that has it.
#[test]
fn c10_a_variable_missing_a_word_is_pointed_at_the_full_name() {
    let vars = [
        ("CLEVERAGENTS_RETRY_OVERRIDES", "{}"),
        ("CLEVERAGENTS_RETRY_BACKOFF", "linear"),
    ];
    let out = stdout(&run(&["check"], &vars));
    assert!(
        out.contains("did you mean CLEVERAGENTS_RETRY_SERVICE_OVERRIDES?"),
        "{out}"
    );
    assert!(
        out.contains("did you mean CLEVERAGENTS_RETRY_BACKOFF_STRATEGY?"),
        "{out}"
    );
}

/// `check --help` documents `--strict`.
#[test]
fn c10_check_help_documents_strict() {
    let o = run(&["check", "--help"], &[]);
    let h = stdout(&o);
    assert!(o.status.success(), "{h}");
    assert!(h.contains("--strict") && h.contains("warning"), "{h}");
}
