//! S2 with the name apart from the value, in YAML block mappings: a `name` or `key` field
//! naming a secret, and the secret in its sibling `value` field on a later line.
//!
//! ```yaml
//! env:
//! - name: DB_PASSWORD
//!   value: hunter2
//! ```
//!
//! (a Kubernetes env list; `kubectl` prints `name` before `value`), and CloudFormation's
//! `- ParameterKey: DbPassword` / `ParameterValue: …`. The name field is found by a pattern
//! run only on text holding a line break and a `name:` or `key:`, its value must be a
//! secret key by S2's rule, and it must start its line (after blanks and an optional `- `).
//! The value field is a key of the same mapping: a later line indented to the same column, before any line indented less.
//! `valueFrom:` is another key. The value field is looked for within [`WINDOW`], and a name
//! field inside what an earlier one at its column already scanned, or inside a value hidden,
//! is skipped, so the work stays linear.
//! Every position returned is that of an ASCII byte or the end of the text.

use super::value::{self, KeyKind};
use memchr::memmem::Finder;
use regex::bytes::Regex;
use std::ops::Range;
use std::sync::LazyLock;

/// How far past the name field's line its value field is looked for (a block value itself
/// is followed to its end).
const WINDOW: usize = 1024;

/// Name fields indented this far or more are not looked at (a YAML block nested deeper than
/// 32 levels of two blanks).
const MAX_COLUMN: usize = 64;

/// Whether `lower` (lowercased text holding a line break) holds `name:` or `key:` (so
/// `parameterkey:` too) at all: the cheap gate in front of [`pair_spans`], as a regex search
/// costs a multi-line message without one a third more. A name field written `name :` is
/// not looked for.
pub(super) fn may_hold_names(lower: &[u8]) -> bool {
    static NAME: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"name:"));
    static KEY: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"key:"));
    NAME.find(lower).is_some() || KEY.find(lower).is_some()
}

/// The values whose name field, found by `name_re` in `lower` (the lowercased `text`), names
/// a secret.
pub(super) fn pair_spans(name_re: &Regex, text: &str, lower: &[u8], spans: &mut Vec<Range<usize>>) {
    let b = text.as_bytes();
    // Per column, how far a name field's scan went: one after it, at the same column and
    // inside that, is in the same mapping and adds nothing.
    let mut scanned = [0usize; MAX_COLUMN];
    // The end of the last value hidden: a name field inside it is hidden already, and
    // skipping it keeps many nested block values linear.
    let mut hidden_to = 0;
    for m in name_re.find_iter(lower) {
        let end = m.end();
        if m.start() < hidden_to {
            continue;
        }
        if !matches!(b.get(end), None | Some(b'\r' | b'\n')) {
            continue;
        }
        // CloudFormation's `ParameterKey`, whose sibling is `ParameterValue`.
        let (field, value_field): (usize, &[u8]) = match lower[..m.start()]
            .strip_suffix(b"parameter")
        {
            Some(before) if m.as_bytes().starts_with(b"key") => (before.len(), b"parametervalue"),
            _ => (m.start(), b"value"),
        };
        let line = memchr::memrchr(b'\n', &b[..field]).map_or(0, |p| p + 1);
        let col = field - line;
        if col >= MAX_COLUMN || field < scanned[col] || !starts_item(&b[line..field]) {
            continue;
        }
        let Some(name) =
            named(m.as_bytes()).and_then(|r| text.get(m.start() + r.start..m.start() + r.end))
        else {
            continue;
        };
        if !super::is_secret_key(name) {
            continue;
        }
        let (reached, hide) = sibling_value(text, end, col, value_field);
        scanned[col] = reached;
        if let Some(hide) = hide {
            hidden_to = hide.end;
            spans.push(hide);
        }
    }
}

/// Whether `prefix`, the line before a field, lets the field start a mapping's key: blanks,
/// or blanks, `-` and blanks (a sequence item).
fn starts_item(prefix: &[u8]) -> bool {
    let is_blank = |c: &u8| *c == b' ' || *c == b'\t';
    let lead = prefix.iter().take_while(|c| is_blank(c)).count();
    match &prefix[lead..] {
        [] => true,
        [b'-', rest @ ..] => !rest.is_empty() && rest.iter().all(is_blank),
        _ => false,
    }
}

/// In a name field match (`name: "DB_PASSWORD"`), where the name is: after the `:` and
/// blanks, without quotes and trailing blanks.
fn named(field: &[u8]) -> Option<Range<usize>> {
    let colon = field.iter().position(|&c| c == b':')?;
    let mut start = colon + 1;
    start += field[start..]
        .iter()
        .take_while(|&&c| matches!(c, b' ' | b'\t' | b'"' | b'\''))
        .count();
    let mut end = field.len();
    end -= field[start..]
        .iter()
        .rev()
        .take_while(|&&c| matches!(c, b' ' | b'\t' | b'"' | b'\''))
        .count();
    (start < end).then_some(start..end)
}

/// The number of blanks at `at`.
fn blanks(b: &[u8], at: usize) -> usize {
    b[at..]
        .iter()
        .take_while(|&&c| c == b' ' || c == b'\t')
        .count()
}

/// From `from`, the end of the name field's line: the value of the key `field` (compared
/// without case) of the mapping whose keys are at column `col`, and how far the scan went.
fn sibling_value(
    text: &str,
    from: usize,
    col: usize,
    field: &[u8],
) -> (usize, Option<Range<usize>>) {
    let b = text.as_bytes();
    let hi = b.len().min(from.saturating_add(WINDOW));
    let mut at = from;
    loop {
        let Some(nl) = memchr::memchr(b'\n', &b[at..hi]) else {
            return (hi, None);
        };
        let line = at + nl + 1;
        let indent = blanks(b, line);
        let content = line + indent;
        at = content;
        if content >= hi {
            return (hi, None);
        }
        if matches!(b[content], b'\n' | b'\r' | b'#') || indent > col {
            // A blank line, a comment, or the inside of another key's value.
            continue;
        }
        if indent < col {
            return (line, None);
        }
        let rest = &b[content..];
        if rest.len() < field.len() || !rest[..field.len()].eq_ignore_ascii_case(field) {
            continue;
        }
        let after = content + field.len();
        let colon = after + blanks(b, after);
        if b.get(colon) != Some(&b':') {
            // `valueFrom:`
            continue;
        }
        let start = colon + 1 + blanks(b, colon + 1);
        return (start, scalar(text, start, col));
    }
}

/// The value starting at `start` of a key at column `col`: a quoted or flow (`[…]`, `{…}`)
/// value as elsewhere, a plain one to the end of its line or to a comment (` #`), and with
/// nothing on the line (or a block scalar's `|` or `>`), the lines under it indented
/// further.
fn scalar(text: &str, start: usize, col: usize) -> Option<Range<usize>> {
    let b = value::without_ellipsis(text);
    match b.get(start) {
        None => None,
        Some(b'|' | b'>') => {
            let line_end = memchr::memchr(b'\n', &b[start..]).map_or(b.len(), |p| start + p);
            block(b, line_end, col)
        }
        Some(b'\n' | b'\r') => block(b, start, col),
        Some(&first) => {
            let mut hide = value::extent(text, start, KeyKind::Header)?.hide;
            if !matches!(first, b'"' | b'\'' | b'[' | b'{') {
                // A plain scalar: a comment (` #`) ends it.
                if let Some(p) = comment(&b[hide.clone()]) {
                    hide.end = hide.start + p;
                }
            }
            let trail = b[hide.clone()]
                .iter()
                .rev()
                .take_while(|&&c| c == b' ' || c == b'\t')
                .count();
            hide.end -= trail;
            (!hide.is_empty()).then_some(hide)
        }
    }
}

/// Where a comment starts in `line`: a `#` after a blank.
fn comment(line: &[u8]) -> Option<usize> {
    memchr::memchr_iter(b'#', line).find(|&p| p > 0 && matches!(line[p - 1], b' ' | b'\t'))
}

/// The lines after the line ending at `from` that are indented beyond `col` (blank lines
/// between them included): from the first one's text to the last one's end. Not bounded by
/// [`WINDOW`], so a long secret is hidden whole; the caller skips name fields inside it,
/// which keeps the work linear.
fn block(b: &[u8], from: usize, col: usize) -> Option<Range<usize>> {
    let mut at = from;
    let mut hide: Option<Range<usize>> = None;
    while let Some(nl) = memchr::memchr(b'\n', &b[at..]) {
        let line = at + nl + 1;
        let indent = blanks(b, line);
        let content = line + indent;
        let line_end = memchr::memchr(b'\n', &b[content..]).map_or(b.len(), |p| content + p);
        let text_end = content
            + b[content..line_end]
                .iter()
                .rposition(|c| !c.is_ascii_whitespace())
                .map_or(0, |p| p + 1);
        at = line_end;
        if text_end == content {
            // A blank line.
            continue;
        }
        if indent <= col {
            break;
        }
        hide = Some(hide.map_or(content, |h| h.start)..text_end);
    }
    hide
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_starts_a_key_after_blanks_or_a_dash() {
        assert!(starts_item(b""));
        assert!(starts_item(b"    "));
        assert!(starts_item(b"  - "));
        assert!(!starts_item(b"  -"));
        assert!(!starts_item(b"the "));
        assert!(!starts_item(b"- - x "));
    }

    #[test]
    fn the_name_is_after_the_colon_without_quotes() {
        assert_eq!(named(b"name: db_password"), Some(6..17));
        assert_eq!(named(b"key: 'token' "), Some(6..11));
        assert_eq!(named(b"name:"), None);
    }

    #[test]
    fn a_block_is_the_lines_indented_further() {
        let b = b"value: |\n    a\n\n    b\n  next: x";
        assert_eq!(block(b, 8, 2), Some(13..21));
        assert_eq!(block(b"value:\n  x", 6, 2), None);
    }
}
