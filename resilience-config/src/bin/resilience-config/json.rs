//! `explain --json`: one document with the table's content.

use crate::render;
use resilience_config::{CodeDeclared, Config, Source};
use serde_json::{json, Map, Value};

/// `{"prefix", "services": {NAME: {"category", KEY: {"value", "source", …}}}, "diagnostics"}`.
/// A source is `built-in`, `code`, `env` (with `env_var`), `json` (with `path`) or `default`.
/// A base delay under its strategy's floor also has `floor`, the delay used (R5).
pub fn document(config: &Config, services: &[String]) -> String {
    let mut out = Map::new();
    for name in services {
        let s = config.resolve(name, &CodeDeclared::EMPTY);
        let shown = distinct(&out, render::name(name));
        let mut svc = Map::new();
        svc.insert("category".into(), s.category.as_str().into());
        for e in s.entries() {
            let mut v = Map::new();
            v.insert("value".into(), render::json_value(e.value));
            v.insert("source".into(), e.source.label().into());
            if let Some(floor) = render::floor(&s, &e) {
                v.insert("floor".into(), floor.into());
            }
            match e.source {
                Source::Env(var) => {
                    v.insert("env_var".into(), var.into());
                }
                Source::Json => {
                    let path = format!("{shown}.{}.{}", e.section.as_str(), e.key);
                    v.insert("path".into(), path.into());
                }
                _ => {}
            }
            svc.insert(e.key.into(), Value::Object(v));
        }
        out.insert(shown, Value::Object(svc));
    }
    let diagnostics: Vec<Value> = config
        .diagnostics()
        .iter()
        .map(|d| {
            json!({
                "kind": format!("{:?}", d.kind()),
                "env_var": d.env_var(),
                "path": d.path(),
                "message": d.message(),
            })
        })
        .collect();
    let doc = json!({
        "prefix": config.prefix(),
        "services": out,
        "diagnostics": diagnostics,
    });
    serde_json::to_string_pretty(&doc).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

/// `shown`, or `shown (2)`, `shown (3)`… if a service shown before has it: two names that
/// sanitize alike (two tokens pasted as keys) must stay two entries, not one overwriting
/// the other.
fn distinct(out: &Map<String, Value>, shown: String) -> String {
    let mut key = shown.clone();
    let mut n = 1;
    while out.contains_key(&key) {
        n += 1;
        key = format!("{shown} ({n})");
    }
    key
}
