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
/// credential, e.g. a URL pasted as a key) and [`printable`].
pub fn name(name: &str) -> String {
    // Escaped here too, not only on output, so the table's columns are measured on what shows.
    printable(&resilience_core::sanitize(name)).into_owned()
}

/// `text` with every control character but newline and tab written as an escape (`\u{1b}`):
/// service names come from the environment, and one must not drive the terminal (a cleared
/// screen or a cursor move can hide the lines above it, a colour can fake a status).
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(is_hidden_control) {
        return text.into();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_hidden_control(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out.into()
}

fn is_hidden_control(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}
