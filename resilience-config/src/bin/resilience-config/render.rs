//! Text shared by the table and the check report.

use resilience_config::{Entry, ServiceSettings, SettingValue, Source};

/// A value as shown in the table; a base delay under its strategy's floor says so (R5).
pub fn value(settings: &ServiceSettings, entry: &Entry) -> String {
    match floor(settings, entry) {
        Some(floor) => format!("{} (floor {floor:?} s)", entry.value),
        None => entry.value.to_string(),
    }
}

/// The strategy's floor in seconds when `entry` is a base delay under it (R5): the delay
/// actually used.
pub fn floor(settings: &ServiceSettings, entry: &Entry) -> Option<f64> {
    let floor = settings.backoff_strategy.value.floor().as_secs_f64();
    (entry.key == "base_delay" && settings.base_delay.value < floor).then_some(floor)
}

/// A source as shown in the table.
pub fn source(source: Source) -> String {
    source.to_string()
}

/// A value as JSON: counts and seconds as numbers, flags as booleans, strategies as strings.
pub fn json_value(value: SettingValue) -> serde_json::Value {
    match value {
        SettingValue::Count(n) => n.into(),
        SettingValue::Seconds(s) => s.into(),
        SettingValue::Flag(b) => b.into(),
        SettingValue::Strategy(s) => s.as_str().into(),
    }
}

/// Left-aligned columns separated by two spaces; trailing spaces trimmed.
pub fn columns(rows: &[Vec<String>]) -> String {
    let width = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..width)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (cell, w) in row.iter().zip(&widths) {
            line.push_str(&format!("{cell:<w$}  "));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// A service name as shown: sanitized (a name read from the environment could carry a
/// credential, e.g. a URL pasted as a key).
pub fn name(name: &str) -> String {
    resilience_core::sanitize(name).into_owned()
}
