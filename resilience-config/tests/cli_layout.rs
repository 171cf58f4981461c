//! The `resilience-config` binary's output at its edges: the `explain` table's layout, values
//! at exactly a strategy's floor or exactly the cap, and `--json` keys for names that
//! sanitize alike. Each run gets a clean environment plus the variables the test sets.

mod support;

use serde_json::Value;
use std::process::{Command, Output};
use support::OVERRIDES;

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

/// C13: the table is a title, a blank line, the column header, then one block of 12 rows per
/// service (its name and category on the first), blocks separated by one blank line.
#[test]
fn c13_explain_table_has_a_header_and_one_block_per_service() {
    let o = run(&["explain"], &[]);
    assert!(o.status.success());
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("resilience configuration (prefix CLEVERAGENTS;"),
        "{out}"
    );
    assert_eq!(lines[1], "", "{out}");
    assert_eq!(
        lines[2].split_whitespace().collect::<Vec<_>>(),
        ["SERVICE", "CATEGORY", "SETTING", "VALUE", "SOURCE"],
        "{out}"
    );
    let blocks: Vec<&[&str]> = lines[3..].split(|l| l.is_empty()).collect();
    assert_eq!(blocks.len(), 11, "{out}");
    for block in blocks {
        assert_eq!(block.len(), 12, "{block:?}");
        assert!(!block[0].starts_with(' '), "{block:?}");
        assert!(block[0].contains("retry.max_attempts"), "{block:?}");
        assert!(block[1..].iter().all(|l| l.starts_with(' ')), "{block:?}");
    }
    let o = run(&["explain", "--service", "trace_service"], &[]);
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3 + 12, "{out}");
    assert!(lines[3].starts_with("trace_service  database"), "{out}");
}

/// C13: in `--json`, a second name that sanitizes like one shown before is numbered ` (2)`.
#[test]
fn c13_explain_json_numbers_a_name_that_sanitizes_alike_from_2() {
    let a = "ghp_abcdefghijklmnopqrstuvwxyz0123456789AB";
    let b = "ghp_ZYXWVUTSRQPONMLKJIHGFEDCBA9876543210zy";
    let json = format!(
        r#"{{"{a}": {{"retry": {{"max_attempts": 2}}}}, "{b}": {{"retry": {{"max_attempts": 3}}}}}}"#
    );
    let o = run(&["explain", "--json"], &[(OVERRIDES, &json)]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}");
    let doc: Value = serde_json::from_str(&out).expect("explain --json is JSON");
    let services = doc["services"].as_object().expect("services");
    let mut custom: Vec<&str> = services
        .iter()
        .filter(|(_, s)| s["max_attempts"]["source"] == "json")
        .map(|(k, _)| k.as_str())
        .collect();
    custom.sort_unstable();
    assert_eq!(custom.len(), 2, "{out}");
    assert_eq!(custom[1], format!("{} (2)", custom[0]), "{out}");
}

/// R5: a base delay exactly at its strategy's floor is not under it: neither the table nor
/// `--json` adds a floor.
#[test]
fn r5_explain_adds_no_floor_to_a_base_delay_exactly_at_it() {
    for (strategy, base) in [("linear", "2.0"), ("exponential", "0.1"), ("fixed", "0.1")] {
        let vars = [
            ("CLEVERAGENTS_RETRY_BACKOFF_STRATEGY", strategy),
            ("CLEVERAGENTS_RETRY_BASE_DELAY", base),
        ];
        let o = run(&["explain", "--service", "trace_service"], &vars);
        let out = stdout(&o);
        assert!(o.status.success(), "{out}");
        assert!(out.contains(&format!(" {base} s ")), "{strategy}: {out}");
        assert!(!out.contains("floor"), "{strategy}: {out}");
        let o = run(&["explain", "--json", "--service", "trace_service"], &vars);
        let doc: Value = serde_json::from_slice(&o.stdout).expect("JSON");
        let base_delay = &doc["services"]["trace_service"]["base_delay"];
        assert!(
            base_delay.get("floor").is_none(),
            "{strategy}: {base_delay}"
        );
    }
}

/// R4: a base delay equal to `max_delay` is not capped by it: `check` does not warn.
#[test]
fn r4_check_does_not_warn_when_base_delay_equals_max_delay() {
    let vars = [
        ("CLEVERAGENTS_RETRY_BASE_DELAY", "5"),
        ("CLEVERAGENTS_RETRY_MAX_DELAY", "5"),
    ];
    let o = run(&["check"], &vars);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}");
    assert!(!out.contains("warning"), "{out}");
    // At linear's floor (2.0 s) with the cap there too: still nothing to warn about.
    let json = r#"{"trace_service": {"retry": {"backoff_strategy": "linear", "base_delay": 0.5,
                                              "max_delay": 2.0}}}"#;
    let out = stdout(&run(&["check"], &[(OVERRIDES, json)]));
    assert!(!out.contains("warning"), "{out}");
}

/// R5, R4: a base delay exactly at its strategy's floor, above the cap, is warned about as a
/// base delay; the floor is not named, since it is not what lifts the delay.
#[test]
fn r5_check_names_the_floor_only_when_it_lifts_the_base_delay() {
    let json = r#"{"trace_service": {"retry": {"backoff_strategy": "linear", "base_delay": 2.0,
                                              "max_delay": 1.0}}}"#;
    let o = run(&["check"], &[(OVERRIDES, json)]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}");
    let line = out
        .lines()
        .find(|l| l.starts_with("warning: trace_service: retry.base_delay"))
        .unwrap_or_else(|| panic!("no warning in\n{out}"));
    assert_eq!(
        line,
        "warning: trace_service: retry.base_delay 2 s (json) exceeds retry.max_delay 1 s (json): \
         every delay is capped at 1 s"
    );
}
