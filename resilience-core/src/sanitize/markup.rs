//! XML and HTML context for S2: whether a secret key is an element's name or an attribute's,
//! and where a start tag ends.
//!
//! Only ever returns positions of ASCII bytes (or the end of the text), so every position is
//! a char boundary. Scans are bounded by [`TAG_WINDOW`], so many keys in a long message cost
//! linear time, not quadratic.

use super::value::{self, KeyKind};
use regex::bytes::Regex;
use std::ops::Range;

/// How far a scan looks for the `<` that opens a tag, or the `>` that closes one. A start
/// tag longer than this is not read as one: its attributes are then pairs as anywhere else.
pub(super) const TAG_WINDOW: usize = 1024;

/// A byte of an XML name (with a namespace prefix: `db:password`).
pub(super) fn is_name_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b':')
}

/// Where the name holding the key at `key_start` begins (`db_` of `db_password`).
fn name_start(b: &[u8], key_start: usize) -> usize {
    b[..key_start]
        .iter()
        .rposition(|&c| !is_name_byte(c))
        .map_or(0, |p| p + 1)
}

/// Whether a `<` at `at` opens a tag: a name follows, and no word character comes before it,
/// so a generic type (`Vec<Token>`, `Option<AccessToken>`) is no tag.
pub(super) fn opens_tag(b: &[u8], at: usize) -> bool {
    b.get(at) == Some(&b'<')
        && b.get(at + 1)
            .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
        && (at == 0 || !(b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_'))
}

/// Whether the name ending in the key at `key_start` is an XML start tag's: `<` just before
/// it (after any namespace or prefix, `<db:password>`), itself not after a word character,
/// so a generic type (`Vec<Token>`) is not one, nor a closing tag (`</token>`).
pub(super) fn opens_element(b: &[u8], key_start: usize) -> bool {
    let start = name_start(b, key_start);
    start > 0 && opens_tag(b, start - 1)
}

/// Whether the key at `key_start` names an attribute: its name follows a blank, and before
/// that, with no `>` in between, a tag opens (`<conn host="h" password=`).
pub(super) fn in_start_tag(b: &[u8], key_start: usize) -> bool {
    let start = name_start(b, key_start);
    if start == 0 || !b[start - 1].is_ascii_whitespace() {
        return false;
    }
    let lo = start.saturating_sub(TAG_WINDOW);
    b[lo..start]
        .iter()
        .rposition(|&c| c == b'<' || c == b'>')
        .is_some_and(|p| opens_tag(b, lo + p))
}

/// The text of each element named like a secret key whose start tag has attributes,
/// `<token expires="3600">abc</token>` (found by `element_re` in `lower`, the lowercased
/// `text`). Its attributes are pairs like any other, found by the key pattern.
pub(super) fn element_spans(
    element_re: &Regex,
    text: &str,
    lower: &[u8],
    spans: &mut Vec<Range<usize>>,
) {
    let b = text.as_bytes();
    for m in element_re.find_iter(lower) {
        if !opens_tag(b, m.start()) {
            continue;
        }
        let found = start_tag_end(b, m.end())
            .and_then(|text_start| value::extent(text, text_start, KeyKind::Element));
        if let Some(found) = found {
            spans.push(found.hide);
        }
    }
}

/// Just past the `>` closing the start tag whose attributes begin at `from` (quoted values
/// skipped whole, so `note="a>b"` does not close it). `None` when it closes itself (`/>`),
/// or no `>` closes it within [`TAG_WINDOW`]: there is no element text to hide.
fn start_tag_end(b: &[u8], from: usize) -> Option<usize> {
    let hi = b.len().min(from.saturating_add(TAG_WINDOW));
    let mut j = from;
    while j < hi {
        match b[j] {
            q @ (b'"' | b'\'') => j += 1 + b[j + 1..hi].iter().position(|&c| c == q)? + 1,
            b'>' => return (b[j - 1] != b'/').then_some(j + 1),
            b'<' => return None,
            _ => j += 1,
        }
    }
    None
}

/// Whether an attribute's value, closed at `at`, is followed by what follows one in a tag:
/// the tag's end (`>`, `/>`, `?>`), another attribute (`name=`) after a blank, or the end of
/// the text (a cut message).
pub(super) fn closes_attribute(b: &[u8], at: usize) -> bool {
    let blanks = b[at..]
        .iter()
        .take_while(|c| c.is_ascii_whitespace())
        .count();
    let j = at + blanks;
    match b.get(j) {
        None | Some(b'>') => true,
        Some(b'/' | b'?') => b.get(j + 1) == Some(&b'>'),
        Some(c) if blanks > 0 && (c.is_ascii_alphabetic() || *c == b'_') => {
            let name = b[j..].iter().take_while(|&&c| is_name_byte(c)).count();
            let eq = b[j + name..]
                .iter()
                .take_while(|c| c.is_ascii_whitespace())
                .count();
            b.get(j + name + eq) == Some(&b'=')
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attribute_context_needs_an_open_tag_before_it() {
        let b = br#"<conn host="h" password="x">"#;
        assert!(in_start_tag(b, 15));
        assert!(!in_start_tag(b"x password=1", 2));
        assert!(!in_start_tag(b"<a> password=1", 4));
        assert!(!in_start_tag(b"Vec<T password=1", 6));
    }

    #[test]
    fn start_tag_end_skips_quoted_values_and_refuses_self_closing() {
        let b = br#"<token a="x>y" b='>'>t</token>"#;
        assert_eq!(start_tag_end(b, 6), Some(21));
        assert_eq!(start_tag_end(br#"<token a="1"/>"#, 6), None);
        assert_eq!(start_tag_end(br#"<token a="1"#, 6), None);
        assert_eq!(start_tag_end(b"<token a <b>", 6), None);
    }
}
