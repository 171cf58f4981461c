//! "Did you mean …?" for misspelt keys (C10).

/// The option closest to `typed` by edit distance (ignoring ASCII case), if it is close enough
/// to be a plausible typo: at most a third of the longer name's length, and at least 1.
pub(crate) fn closest<'a>(typed: &str, options: &[&'a str]) -> Option<&'a str> {
    closest_within(typed, options, |longer| (longer / 3).max(1))
}

/// The option closest to `typed` (ignoring ASCII case) within `bound(longer name's length)`
/// edits.
pub(crate) fn closest_within<'a>(
    typed: &str,
    options: &[&'a str],
    bound: impl Fn(usize) -> usize,
) -> Option<&'a str> {
    let typed = typed.to_ascii_lowercase();
    options
        .iter()
        .map(|&o| (edit_distance(&typed, &o.to_ascii_lowercase()), o))
        .filter(|&(d, o)| d <= bound(typed.len().max(o.len())))
        .min_by_key(|&(d, _)| d)
        .map(|(_, o)| o)
}

/// The one option whose `_`-separated words include every word of `typed` (ignoring ASCII
/// case): a name with a word left out (`OVERRIDES` for `SERVICE_OVERRIDES`, `BACKOFF` for
/// `BACKOFF_STRATEGY`) is too many edits away for [`closest`]. `None` if several fit.
pub(crate) fn with_words_of<'a>(typed: &str, options: &[&'a str]) -> Option<&'a str> {
    let typed = typed.to_ascii_lowercase();
    let words: Vec<&str> = typed.split('_').filter(|w| !w.is_empty()).collect();
    if words.is_empty() {
        return None;
    }
    let mut fits = options.iter().filter(|o| {
        let o = o.to_ascii_lowercase();
        words.iter().all(|w| o.split('_').any(|ow| ow == *w))
    });
    match (fits.next(), fits.next()) {
        (Some(&one), None) => Some(one),
        _ => None,
    }
}

/// Levenshtein distance over chars, two rows of memory.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let subst = prev[j] + usize::from(ca != cb);
            cur[j + 1] = subst.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c10_suggests_close_keys_only() {
        let keys = ["max_attempts", "base_delay", "max_delay"];
        assert_eq!(closest("max_atempts", &keys), Some("max_attempts"));
        assert_eq!(closest("Base_Dealy", &keys), Some("base_delay"));
        assert_eq!(closest("colour", &keys), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
    }

    /// C10: a name with a word left out is suggested if one known name alone has its words.
    #[test]
    fn c10_suggests_the_one_key_that_holds_every_word_typed() {
        let keys = [
            "SERVICE_OVERRIDES",
            "BACKOFF_STRATEGY",
            "MAX_DELAY",
            "BASE_DELAY",
        ];
        assert_eq!(with_words_of("OVERRIDES", &keys), Some("SERVICE_OVERRIDES"));
        assert_eq!(with_words_of("backoff", &keys), Some("BACKOFF_STRATEGY"));
        assert_eq!(with_words_of("DELAY", &keys), None, "two fit");
        assert_eq!(with_words_of("COLOUR", &keys), None);
        assert_eq!(with_words_of("", &keys), None);
    }

    /// C10: the distance counts deletions from the typed name as well as insertions, so it is
    /// the same both ways round.
    #[test]
    fn c10_edit_distance_is_symmetric() {
        for (a, b, d) in [
            ("abc", "", 3),
            ("kitten", "sitting", 3),
            ("max_attemptss", "max_attempts", 1),
            ("xmax_delay", "max_delay", 1),
            ("flaw", "lawn", 2),
            ("ab", "b", 1),
        ] {
            assert_eq!(edit_distance(a, b), d, "{a} -> {b}");
            assert_eq!(edit_distance(b, a), d, "{b} -> {a}");
        }
    }
}
