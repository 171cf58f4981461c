//! S2 with the name apart from the value: a `name` or `key` field naming a secret, and the
//! secret in a sibling `value` field of the same XML tag or object.
//!
//! `<add key="Password" value="hunter2"/>` (.NET appSettings), `<property name="db.password"
//! value="…"/>` (Spring), `<param name="api_key">…</param>`, `{"Name": "DB_PASSWORD",
//! "Value": "…"}` (Kubernetes env lists, AWS parameters, HAR headers). No `key=value` rule
//! sees these: the secret word is a value, not a key. The name field is found by a pattern
//! (its value must be a secret key by S2's rule); the value field only inside the same start
//! tag, or as a member of the same `{…}` object (nested objects are stepped over whole), in
//! either order. Scans are bounded by [`WINDOW`], and only ever return positions of ASCII
//! bytes (or the end of the text), so every position is a char boundary.

use super::markup::{self, is_name_byte, TAG_WINDOW};
use super::patterns::Marks;
use super::value::{self, KeyKind};
use memchr::memmem::Finder;
use regex::bytes::Regex;
use std::ops::Range;
use std::sync::LazyLock;

/// How far a scan looks for the `{` that opens the object holding a name field, or for its
/// `value` member after that `{`.
const WINDOW: usize = 1024;

/// Whether the text (as `lower`, its lowercased bytes, and what `marks` says of it) can hold
/// a pair at all: a tag, or an object and the word `value`. The cheap gate in front of
/// [`pair_spans`]: a message without `<` or `{` costs nothing more.
pub(super) fn may_hold_pairs(lower: &[u8], marks: Marks) -> bool {
    static VALUE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"value"));
    marks.tags || (marks.braces && VALUE.find(lower).is_some())
}

/// The values whose sibling name field, found by `name_re` in `lower` (the lowercased
/// `text`), names a secret.
pub(super) fn pair_spans(name_re: &Regex, text: &str, lower: &[u8], spans: &mut Vec<Range<usize>>) {
    let b = text.as_bytes();
    // The `<` or `{` of the last tag or object looked at: a second name field in it adds
    // nothing, and skipping it keeps many of them in one object linear.
    let mut last_scope = None;
    // The end of the last value hidden: a name field inside it is hidden already, and
    // skipping it keeps many unterminated values linear, as the key scan's resume does.
    let mut hidden_to = 0;
    for m in name_re.find_iter(lower) {
        let start = m.start();
        if start < hidden_to {
            continue;
        }
        // CloudFormation's `ParameterKey`, whose sibling is `ParameterValue`.
        let prefix = parameter_prefix(lower, start, m.as_bytes());
        let field = start - prefix.len();
        // The whole field name: not `filename` or `api_key`.
        if field > 0 && (is_word_byte(b[field - 1]) || matches!(b[field - 1], b'-' | b'.')) {
            continue;
        }
        let Some(sep) = m.as_bytes().iter().position(|&c| c == b'=' || c == b':') else {
            continue;
        };
        if !text
            .get(named(m.as_bytes(), sep, start))
            .is_some_and(super::is_secret_key)
        {
            continue;
        }
        let tag = (m.as_bytes()[sep] == b'=' && start > 0 && b[start - 1].is_ascii_whitespace())
            .then(|| tag_open(b, start))
            .flatten();
        let attribute = tag.is_some();
        let scope = tag.or_else(|| enclosing_brace(b, key_start(b, field)));
        let Some(open) = scope else {
            continue;
        };
        if last_scope == Some(open) {
            continue;
        }
        last_scope = Some(open);
        let hide = if attribute {
            tag_value(text, open)
        } else {
            object_value(
                text,
                open,
                value_field(prefix),
                is_go_field(m.as_bytes(), sep),
            )
        };
        if let Some(hide) = hide {
            hidden_to = hidden_to.max(hide.end);
            spans.push(hide);
        }
    }
}

/// The value after the AWS CLI's `ParameterValue=` at `start` (with its separator,
/// `matched`, lowercased), if a `ParameterKey=` naming a secret is its neighbour in the
/// same `,`-separated run: `ParameterKey=DbPassword,ParameterValue=…`, either order.
pub(super) fn shorthand_value(text: &str, start: usize, matched: &[u8]) -> Option<value::Extent> {
    const KEY: &[u8] = b"parameterkey=";
    if matched != b"parametervalue=" {
        return None;
    }
    let b = text.as_bytes();
    let found = value::extent(text, start + matched.len(), KeyKind::Word)?;
    let ends = |c: u8| c == b',' || c.is_ascii_whitespace();
    // The `ParameterKey=…` element from `from` to `to`: whether it names a secret.
    let names_secret = |from: usize, to: usize| {
        b[from..to].len() > KEY.len()
            && b[from..from + KEY.len()].eq_ignore_ascii_case(KEY)
            && text
                .get(from + KEY.len()..to)
                .is_some_and(super::is_secret_key)
    };
    let before = start
        .checked_sub(1)
        .filter(|&c| b[c] == b',')
        .is_some_and(|comma| {
            let from = b[..comma]
                .iter()
                .rposition(|&c| ends(c))
                .map_or(0, |p| p + 1);
            names_secret(from, comma)
        });
    let after = || {
        b.get(found.resume) == Some(&b',') && {
            let from = found.resume + 1;
            let to = b[from..]
                .iter()
                .position(|&c| ends(c))
                .map_or(b.len(), |p| from + p);
            names_secret(from, to)
        }
    };
    (before || after()).then_some(found)
}

/// `parameter` when the name field matched at `start` (`field`, the match) is
/// CloudFormation's `ParameterKey`; else empty.
fn parameter_prefix<'a>(lower: &'a [u8], start: usize, field: &[u8]) -> &'a [u8] {
    const PARAMETER: &[u8] = b"parameter";
    match lower[..start].strip_suffix(PARAMETER) {
        Some(_) if field.starts_with(b"key") => &lower[start - PARAMETER.len()..start],
        _ => b"",
    }
}

/// The name of the value field paired with a name field after `prefix`: `value`, or
/// `parametervalue` for `ParameterKey` (compared without case).
fn value_field(prefix: &[u8]) -> &'static [u8] {
    if prefix.is_empty() {
        b"value"
    } else {
        b"parametervalue"
    }
}

/// `text` up to about `hi` (a char boundary at most 3 bytes before it), so that a scan
/// stepping over values inside a window stops at the window's end whatever they hold.
fn up_to(text: &str, hi: usize) -> &str {
    let mut hi = hi.min(text.len());
    while !text.is_char_boundary(hi) {
        hi -= 1;
    }
    &text[..hi]
}

/// Where the name in `field` (a match of the name field pattern at `start`, its separator at
/// `sep`) is: after the separator, blanks and any opening quote, the run of the bytes the
/// pattern allows in a name.
fn named(field: &[u8], sep: usize, start: usize) -> Range<usize> {
    let open = sep
        + 1
        + field[sep + 1..]
            .iter()
            .take_while(|&&c| matches!(c, b' ' | b'\t' | b'\\' | b'"' | b'\''))
            .count();
    let len = field[open..]
        .iter()
        .take_while(|&&c| {
            c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b':' | b'/' | b'-')
        })
        .count();
    start + open..start + open + len
}

/// Whether the name field `field` (its separator at `sep`) is Go's `%+v` form, `Name:X`: not
/// quoted, and no blank after the separator. Go prints an empty string as nothing, so its
/// `Value: ValueFrom:…` has an empty value, not `ValueFrom:…`.
fn is_go_field(field: &[u8], sep: usize) -> bool {
    field[sep] == b':'
        && field
            .get(sep + 1)
            .is_some_and(|&c| c.is_ascii_alphanumeric() || c == b'_')
}

/// A byte of an identifier.
fn is_word_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The `<` of the start tag holding the attribute at `at`, if it is in one: backwards over
/// quoted values (which may hold `<` and `>`), with no `>` in between.
fn tag_open(b: &[u8], at: usize) -> Option<usize> {
    let lo = at.saturating_sub(TAG_WINDOW);
    let mut j = at;
    while j > lo {
        j -= 1;
        match b[j] {
            q @ (b'"' | b'\'') => j = lo + b[lo..j].iter().rposition(|&c| c == q)?,
            b'>' => return None,
            b'<' => return markup::opens_tag(b, j).then_some(j),
            _ => {}
        }
    }
    None
}

/// In the start tag opening at `open`: the value of its `value` attribute (`content` in a
/// `<meta>` tag); without one, the element's text when a closing tag of the same name follows
/// it (or the text ends).
fn tag_value(text: &str, open: usize) -> Option<Range<usize>> {
    let b = text.as_bytes();
    let name = open + 1
        ..open
            + 1
            + b[open + 1..]
                .iter()
                .take_while(|&&c| is_name_byte(c))
                .count();
    let value_attribute: &[u8] = if b[name.clone()].eq_ignore_ascii_case(b"meta") {
        b"content"
    } else {
        b"value"
    };
    let window = up_to(text, open.saturating_add(TAG_WINDOW));
    let all = b;
    let b = window.as_bytes();
    let mut j = name.end.min(b.len());
    let mut value_at = None;
    // Just past the tag's `>`, unless it closes itself (`/>`), or is cut off.
    let text_at = loop {
        j += b[j..]
            .iter()
            .take_while(|c| c.is_ascii_whitespace())
            .count();
        match b.get(j) {
            Some(b'>') => break Some(j + 1),
            Some(b'/' | b'?') if b.get(j + 1) == Some(&b'>') => break None,
            None | Some(b'<') => break None,
            _ => {}
        }
        let attr = j..j + b[j..].iter().take_while(|&&c| is_name_byte(c)).count();
        if attr.is_empty() {
            j += 1;
            continue;
        }
        j = attr.end
            + b[attr.end..]
                .iter()
                .take_while(|c| c.is_ascii_whitespace())
                .count();
        if b.get(j) != Some(&b'=') {
            continue;
        }
        j += 1;
        j += b[j..]
            .iter()
            .take_while(|c| c.is_ascii_whitespace())
            .count();
        if value_at.is_none() && b[attr].eq_ignore_ascii_case(value_attribute) {
            value_at = Some(j);
        }
        j = value::end(window, j, KeyKind::Attribute).max(j);
    };
    if let Some(at) = value_at {
        return value::extent(text, at, KeyKind::Attribute).map(|e| e.hide);
    }
    let found = value::extent(text, text_at?, KeyKind::Element)?;
    let rest = &value::without_ellipsis(text)[found.resume..];
    let closes = rest.is_empty()
        || rest.strip_prefix(b"</").is_some_and(|r| {
            r.len() >= name.len()
                && r[..name.len()].eq_ignore_ascii_case(&all[name.clone()])
                && !r.get(name.len()).is_some_and(|&c| is_name_byte(c))
        });
    closes.then_some(found.hide)
}

/// Where the field name at `at` starts with its opening quote (`"name"`, `\"name\"`).
fn key_start(b: &[u8], at: usize) -> usize {
    match at.checked_sub(1).map(|p| b[p]) {
        Some(b'"' | b'\'') if at >= 2 && b[at - 2] == b'\\' => at - 2,
        Some(b'"' | b'\'') => at - 1,
        _ => at,
    }
}

/// Whether the byte at `at` is escaped by an odd run of backslashes before it.
fn is_escaped(b: &[u8], at: usize) -> bool {
    b[..at].iter().rev().take_while(|&&c| c == b'\\').count() % 2 == 1
}

/// The `{` of the object that the member starting at `at` belongs to: backwards, over
/// nested brackets and `"…"` strings. `None` inside a list, or with no `{` in [`WINDOW`].
fn enclosing_brace(b: &[u8], at: usize) -> Option<usize> {
    let lo = at.saturating_sub(WINDOW);
    let mut depth = 0usize;
    let mut j = at;
    while j > lo {
        j -= 1;
        match b[j] {
            b'"' if !is_escaped(b, j) => loop {
                j = lo + b[lo..j].iter().rposition(|&c| c == b'"')?;
                if !is_escaped(b, j) {
                    break;
                }
            },
            b'}' | b']' => depth += 1,
            b'{' if depth == 0 => return Some(j),
            b'[' if depth == 0 => return None,
            b'{' | b'[' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// The value of the `value` member (named `field`) of the object opening at `open`, if it
/// has one (quoted or not: `"value":`, `'value':`, `\"value\":`, `value:`). `go`: the
/// object is Go's `%+v` (see [`is_go_field`]), where a blank after `Value:` means it is empty.
fn object_value(text: &str, open: usize, field: &[u8], go: bool) -> Option<Range<usize>> {
    let window = up_to(text, open.saturating_add(WINDOW));
    let b = window.as_bytes();
    let hi = b.len();
    let mut j = open + 1;
    while j < hi {
        let c = b[j];
        let quoted =
            matches!(c, b'"' | b'\'') || (c == b'\\' && matches!(b.get(j + 1), Some(b'"' | b'\'')));
        let key = if quoted || c == b'{' || c == b'[' {
            let end = value::end(window, j, KeyKind::Word).max(j + 1);
            let key = quoted.then(|| trim_quotes(&b[j..end]));
            let at = j;
            j = end;
            key.map(|k| (at, k))
        } else if c == b'}' || c == b']' {
            return None;
        } else if is_word_byte(c) && !is_word_byte(b[j - 1]) {
            let at = j;
            j += b[j..].iter().take_while(|&&c| is_word_byte(c)).count();
            Some((at, &b[at..j]))
        } else {
            j += 1;
            None
        };
        if let Some((_, key)) = key {
            if key.eq_ignore_ascii_case(field) {
                // Go's `Value:` is one `:`, the value right after it: empty before a blank,
                // and it may start with `:` itself.
                let go_value = (go && b.get(j) == Some(&b':')).then_some(j + 1);
                if go_value.is_some_and(|at| b.get(at).is_none_or(u8::is_ascii_whitespace)) {
                    return None;
                }
                if let Some(at) = go_value.or_else(|| after_separator(b, j)) {
                    return value::extent(text, at, KeyKind::Word).map(|e| e.hide);
                }
            }
        }
    }
    None
}

/// A quoted string's content: `s` without the quotes and backslashes around it.
fn trim_quotes(s: &[u8]) -> &[u8] {
    let is_quote = |c: &u8| matches!(c, b'"' | b'\'' | b'\\');
    let lead = s.iter().take_while(|c| is_quote(c)).count();
    let trail = s[lead..].iter().rev().take_while(|c| is_quote(c)).count();
    &s[lead..s.len() - trail]
}

/// Where the value starts after a member's name ending at `at`: past `:` or `=` (not `::`
/// or `==`) and blanks around it.
fn after_separator(b: &[u8], at: usize) -> Option<usize> {
    let blanks = |from: usize| {
        from + b[from..]
            .iter()
            .take_while(|c| c.is_ascii_whitespace())
            .count()
    };
    let mut k = blanks(at);
    match b.get(k) {
        Some(b':') if b.get(k + 1) != Some(&b':') => k += 1,
        Some(b'=') if b.get(k + 1) != Some(&b'=') => {
            k += 1;
            if b.get(k) == Some(&b'>') {
                k += 1;
            }
        }
        _ => return None,
    }
    let k = blanks(k);
    (k < b.len()).then_some(k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_enclosing_brace_skips_strings_and_nested_objects() {
        let b = br#"{"value":"a}{b","n":{"x":1},"name":"p"}"#;
        let at = b.len() - 11;
        assert_eq!(enclosing_brace(b, at), Some(0));
        assert_eq!(enclosing_brace(br#"[{"a":1},"name""#, 9), None);
        assert_eq!(enclosing_brace(br#"x "name""#, 2), None);
        assert_eq!(enclosing_brace(br#"{\"a\":\"b\",\"name\""#, 13), Some(0));
    }

    #[test]
    fn the_name_is_between_the_quotes_after_the_separator() {
        let name = |f: &[u8]| {
            let sep = f.iter().position(|&c| c == b'=' || c == b':').unwrap();
            named(f, sep, 10)
        };
        assert_eq!(name(br#"key="password""#), 15..23);
        assert_eq!(name(br#"name\": \"token\""#), 20..25);
        assert_eq!(name(b"name: 'x_sig'"), 17..22);
    }

    #[test]
    fn separators_and_quotes() {
        assert_eq!(after_separator(b" : x", 0), Some(3));
        assert_eq!(after_separator(b"=>x", 0), Some(2));
        assert_eq!(after_separator(b"::x", 0), None);
        assert_eq!(after_separator(b"==x", 0), None);
        assert_eq!(after_separator(b": ", 0), None);
        assert_eq!(trim_quotes(br#"\"value\""#), b"value");
        assert_eq!(trim_quotes(b"\"\""), b"");
    }
}
