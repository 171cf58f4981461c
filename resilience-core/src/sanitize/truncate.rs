//! S5: the length cap, applied after redaction.

use std::borrow::Cow;

/// The longest message kept whole, in Unicode scalar values (`char`s).
pub const MAX_CHARS: usize = 200;

/// What replaces the cut-off tail.
pub(super) const ELLIPSIS: &str = "...";

/// Keeps the first [`MAX_CHARS`] chars of a longer text and appends [`ELLIPSIS`]; says
/// whether it cut.
pub(super) fn truncate(text: Cow<'_, str>) -> (Cow<'_, str>, bool) {
    // No more bytes than the limit means no more chars either: skip counting.
    if text.len() <= MAX_CHARS {
        return (text, false);
    }
    match text.char_indices().nth(MAX_CHARS) {
        None => (text, false),
        Some((cut, _)) => {
            let mut out = String::with_capacity(cut + ELLIPSIS.len());
            // `cut` comes from `char_indices`, so it is a char boundary.
            out.push_str(&text[..cut]);
            out.push_str(ELLIPSIS);
            (Cow::Owned(out), true)
        }
    }
}
