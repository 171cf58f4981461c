//! Where the value after a secret key ends (S2–S4).
//!
//! Scans bytes, but only ever stops at an ASCII byte or at the end of the text, so every
//! position it returns is a char boundary.

use super::markup::closes_attribute;
use super::truncate::ELLIPSIS;
use std::ops::Range;

/// What kind of key introduced the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum KeyKind {
    /// `password`, `token`, …: an unquoted value is one word.
    Word,
    /// `Authorization`, `Cookie`, …: an unquoted value runs to the end of the line.
    Header,
    /// An XML start tag `<password>`: the value is the element's text, up to the next tag.
    Element,
    /// An attribute in an XML start tag, `<conn password="…">`: no backslash escapes, and an
    /// unquoted value ends at a blank, `>` or `/>`.
    Attribute,
    /// A value in a connection string (ODBC's `Pwd=`, ADO.NET's `Password=`): a `{…}` value
    /// may hold `;`, and `}}` in it is an escaped `}`; an unquoted one runs to the next `;`
    /// (blanks before it kept), the line's end, or a quote closing the string the connection
    /// string is in (followed by a blank, the end, or closing punctuation).
    Connection,
}

/// The part of a value to hide, and where scanning for the next key resumes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Extent {
    /// Replaced by `***`; quotes around it stay.
    pub(super) hide: Range<usize>,
    /// Just past the value (past its closing quote, if any).
    pub(super) resume: usize,
}

/// Unquoted values that say "nothing here": kept, as they help debugging and hide nothing.
const NOT_SECRETS: [&[u8]; 5] = [b"None", b"null", b"nil", b"true", b"false"];

/// The extent of the value starting at byte `start` of `text`, or `None` if there is nothing
/// to hide (an empty value, or a marker such as `None`). A list or object under a secret key
/// is hidden whole: its items are the secret (`"api_key": ["sk-…"]`).
///
/// A final `...` counts as the end of the text: it is what S5 appends, and were it read as
/// part of a value cut at the limit, sanitizing the result again would change it.
pub(super) fn extent(text: &str, start: usize, kind: KeyKind) -> Option<Extent> {
    let b = without_ellipsis(text);
    kept(b, found(b, start, kind)?)
}

/// Where the value starting at byte `start` of `text` ends (just past it, past its closing
/// quote or bracket), whatever it holds: for scans that step over values. At least `start`.
pub(super) fn end(text: &str, start: usize, kind: KeyKind) -> usize {
    found(without_ellipsis(text), start, kind).map_or(start, |f| f.resume.max(start))
}

/// `text` without the `...` that S5 appends (see [`extent`]).
pub(super) fn without_ellipsis(text: &str) -> &[u8] {
    let all = text.as_bytes();
    all.strip_suffix(ELLIPSIS.as_bytes()).unwrap_or(all)
}

/// The value starting at `start` of `b`, empty or not; `None` past the end.
fn found(b: &[u8], start: usize, kind: KeyKind) -> Option<Extent> {
    if start > b.len() {
        return None;
    }
    if kind == KeyKind::Element {
        return Some(element_text(b, start));
    }
    let mut i = start;
    // Rust `Debug` of an `Option`: look inside `Some(…)`.
    if b.get(i..i + 5) == Some(b"Some(") {
        i += 5;
    }
    // Python bytes/raw/unicode literal prefixes: `b'…'`.
    if matches!(b.get(i), Some(b'b' | b'B' | b'r' | b'R' | b'u' | b'U'))
        && matches!(b.get(i + 1), Some(b'"' | b'\''))
    {
        i += 1;
    }
    let found = match (b.get(i), b.get(i + 1)) {
        (None, _) => return None,
        (Some(b'{'), _) if kind == KeyKind::Connection => odbc_braced(b, i + 1),
        (Some(b'\\'), Some(&q @ (b'"' | b'\''))) => escaped_quoted(b, i + 2, q),
        (Some(&q @ (b'"' | b'\'')), _) if kind == KeyKind::Attribute => {
            attribute_quoted(b, i + 1, q)
        }
        (Some(&q @ (b'"' | b'\'')), _) => quoted(b, i + 1, q),
        (Some(&open @ (b'{' | b'[')), _) => bracketed(b, i, open),
        _ if kind == KeyKind::Header => to_line_end(b, i),
        _ if kind == KeyKind::Attribute => attribute_unquoted(b, i),
        _ if kind == KeyKind::Connection => to_semicolon(b, i),
        _ => unquoted_word(b, i),
    };
    Some(found)
}

/// `found`, unless it hides nothing (empty, or a marker such as `None`).
fn kept(b: &[u8], found: Extent) -> Option<Extent> {
    let hide = &b[found.hide.clone()];
    if hide.is_empty() || NOT_SECRETS.contains(&hide) {
        return None;
    }
    Some(found)
}

/// An XML element's text from `from`: up to the next `<` (the closing tag, or a child),
/// blanks around it kept; a `<![CDATA[…]]>` section's content. Unterminated: to the end.
fn element_text(b: &[u8], from: usize) -> Extent {
    const CDATA: &[u8] = b"<![CDATA[";
    if b[from..].starts_with(CDATA) {
        let start = from + CDATA.len();
        return match b[start..].windows(3).position(|w| w == b"]]>") {
            Some(p) => Extent {
                hide: start..start + p,
                resume: start + p + 3,
            },
            None => Extent {
                hide: start..b.len(),
                resume: b.len(),
            },
        };
    }
    let end = b[from..]
        .iter()
        .position(|&c| c == b'<')
        .map_or(b.len(), |p| from + p);
    let text = &b[from..end];
    let lead = text.iter().take_while(|c| c.is_ascii_whitespace()).count();
    let trail = text[lead..]
        .iter()
        .rev()
        .take_while(|c| c.is_ascii_whitespace())
        .count();
    Extent {
        hide: from + lead..end - trail,
        resume: end,
    }
}

/// A `'…'` or `"…"` string whose content starts at `from`; backslash escapes the next byte.
/// Unterminated: the content runs to the end.
fn quoted(b: &[u8], from: usize, quote: u8) -> Extent {
    let mut j = from;
    while let Some(&c) = b.get(j) {
        if c == b'\\' {
            j += 2;
        } else if c == quote {
            return Extent {
                hide: from..j,
                resume: j + 1,
            };
        } else {
            j += 1;
        }
    }
    Extent {
        hide: from..b.len(),
        resume: b.len(),
    }
}

/// An attribute value quoted with `quote`, content from `from`. XML has no backslash escape,
/// so it closes at the next `quote` (`password="C:\dir\"`), if what follows goes on as a tag;
/// if not, the backslash was an escape after all (`password="a\"b c"`), read as in
/// [`quoted`], which never hides less.
fn attribute_quoted(b: &[u8], from: usize, quote: u8) -> Extent {
    match b[from..].iter().position(|&c| c == quote) {
        Some(p) if closes_attribute(b, from + p + 1) => Extent {
            hide: from..from + p,
            resume: from + p + 1,
        },
        _ => quoted(b, from, quote),
    }
}

/// An unquoted attribute value (invalid XML, but found in logs): up to a blank, `>` or `/>`.
fn attribute_unquoted(b: &[u8], from: usize) -> Extent {
    let mut j = from;
    while let Some(&c) = b.get(j) {
        if c.is_ascii_whitespace() || c == b'>' || (c == b'/' && b.get(j + 1) == Some(&b'>')) {
            break;
        }
        j += 1;
    }
    Extent {
        hide: from..j,
        resume: j,
    }
}

/// A string quoted with `\"` (JSON inside a string literal). It closes at a quote preceded by
/// exactly one backslash; `\\\"` is an escaped quote inside the inner string.
fn escaped_quoted(b: &[u8], from: usize, quote: u8) -> Extent {
    let mut j = from;
    while let Some(&c) = b.get(j) {
        if c != b'\\' {
            j += 1;
            continue;
        }
        let run = b[j..].iter().take_while(|&&c| c == b'\\').count();
        let after = j + run;
        if b.get(after) == Some(&quote) {
            if run == 1 {
                return Extent {
                    hide: from..j,
                    resume: after + 1,
                };
            }
            j = after + 1;
        } else {
            j = after;
        }
    }
    Extent {
        hide: from..b.len(),
        resume: b.len(),
    }
}

/// An ODBC `{…}` value whose content starts at `from`: it closes at a `}` that is not
/// doubled (`}}` is an escaped `}`); `;`, quotes and `{` inside are plain. Unterminated: the
/// content runs to the end.
fn odbc_braced(b: &[u8], from: usize) -> Extent {
    let mut j = from;
    while let Some(&c) = b.get(j) {
        if c == b'}' {
            if b.get(j + 1) != Some(&b'}') {
                return Extent {
                    hide: from..j,
                    resume: j + 1,
                };
            }
            j += 2;
        } else {
            j += 1;
        }
    }
    Extent {
        hide: from..b.len(),
        resume: b.len(),
    }
}

/// A `[…]` or `{…}` value opening at `from`: its content up to the matching bracket, quoted
/// strings skipped whole. Unterminated: the content runs to the end.
fn bracketed(b: &[u8], from: usize, open: u8) -> Extent {
    let close = if open == b'[' { b']' } else { b'}' };
    let mut depth = 0usize;
    let mut j = from;
    while let Some(&c) = b.get(j) {
        match c {
            b'"' | b'\'' => {
                j = quoted(b, j + 1, c).resume;
                continue;
            }
            _ if c == open => depth += 1,
            _ if c == close => {
                depth -= 1;
                if depth == 0 {
                    return Extent {
                        hide: from + 1..j,
                        resume: j + 1,
                    };
                }
            }
            _ => {}
        }
        j += 1;
    }
    Extent {
        hide: from + 1..b.len(),
        resume: b.len(),
    }
}

/// A header value without quotes: the rest of the line.
fn to_line_end(b: &[u8], from: usize) -> Extent {
    let end = b[from..]
        .iter()
        .position(|&c| c == b'\n' || c == b'\r')
        .map_or(b.len(), |p| from + p);
    Extent {
        hide: from..end,
        resume: end,
    }
}

/// An unquoted value in a connection string: up to the next `;` or line end, blanks before
/// it kept, or up to a quote followed by a blank, the end or closing punctuation (it closes
/// the string holding the connection string: `"Server=h;Pwd=my pass"`).
fn to_semicolon(b: &[u8], from: usize) -> Extent {
    let mut j = memchr::memchr3(b';', b'\n', b'\r', &b[from..]).map_or(b.len(), |p| from + p);
    let closing = memchr::memchr2_iter(b'"', b'\'', &b[from..j])
        .map(|p| from + p)
        .find(|&q| {
            b.get(q + 1)
                .is_none_or(|&n| n.is_ascii_whitespace() || is_closer(n))
        });
    if let Some(q) = closing {
        j = q;
    }
    let blanks = b[from..j]
        .iter()
        .rev()
        .take_while(|&&c| c == b' ' || c == b'\t')
        .count();
    Extent {
        hide: from..j - blanks,
        resume: j,
    }
}

/// Punctuation that may close a value (`"}`, `)`, `, `, `&next=`) or may be part of it.
fn is_closer(c: u8) -> bool {
    matches!(
        c,
        b'"' | b'\'' | b',' | b';' | b'&' | b')' | b']' | b'}' | b'>'
    )
}

/// An unquoted one-word value, with an optional `Bearer `/`Basic ` scheme in front.
///
/// It ends at whitespace, or at a run of closing punctuation followed by whitespace, the end,
/// or the start of another `key=` pair. Punctuation inside a word stays in the value, so
/// `p)ss,word` is hidden whole.
fn unquoted_word(b: &[u8], from: usize) -> Extent {
    let mut j = skip_scheme(b, from);
    while let Some(&c) = b.get(j) {
        if c.is_ascii_whitespace() {
            break;
        }
        if is_closer(c) {
            let run_end = j + b[j..].iter().take_while(|&&c| is_closer(c)).count();
            match b.get(run_end) {
                None => break,
                Some(n) if n.is_ascii_whitespace() => break,
                Some(_) if starts_pair(b, run_end) => break,
                Some(_) => j = run_end,
            }
        } else {
            j += 1;
        }
    }
    Extent {
        hide: from..j,
        resume: j,
    }
}

/// Past `Bearer ` or `Basic ` when a credential follows, so both words are hidden.
fn skip_scheme(b: &[u8], from: usize) -> usize {
    let word_len = b[from..]
        .iter()
        .take_while(|c| c.is_ascii_alphabetic())
        .count();
    let word = &b[from..from + word_len];
    if !(word.eq_ignore_ascii_case(b"bearer") || word.eq_ignore_ascii_case(b"basic")) {
        return from;
    }
    let spaces = b[from + word_len..]
        .iter()
        .take_while(|&&c| c == b' ' || c == b'\t')
        .count();
    let next = from + word_len + spaces;
    match b.get(next) {
        Some(&c) if spaces > 0 && !c.is_ascii_whitespace() && !is_closer(c) => next,
        _ => from,
    }
}

/// Whether `key=` starts at `at` (an identifier, then `=`).
fn starts_pair(b: &[u8], at: usize) -> bool {
    let rest = &b[at..];
    match rest.first() {
        Some(c) if c.is_ascii_alphabetic() || *c == b'_' => {}
        _ => return false,
    }
    let ident = rest
        .iter()
        .take_while(|&&c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'))
        .count();
    rest.get(ident) == Some(&b'=')
}
