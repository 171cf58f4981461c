//! "Did you mean": the closest valid name to a misspelt key or value.

use crate::args::sym;

/// "unknown argument", with the closest valid name when one is close enough.
pub(crate) fn unknown_key_message(given: &str, suggestion: Option<&str>) -> String {
    match suggestion {
        Some(best) => format!("unknown argument `{given}`: did you mean `{best}`?"),
        None => format!(
            "unknown argument `{given}`: valid arguments are {}",
            sym::ALL.join(", ")
        ),
    }
}

/// The candidate nearest to `given`, if any is plausibly what was meant: a few common
/// synonyms first, then edit distance scaled to the word's length.
pub(crate) fn closest<'a>(given: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let lower = given.to_ascii_lowercase();
    let synonym = match lower.as_str() {
        "retries" | "attempts" | "max_retries" | "retry" | "max_tries" | "tries" => {
            Some(sym::MAX_ATTEMPTS)
        }
        "timeout" | "deadline" | "timeout_secs" => Some(sym::TOTAL_TIMEOUT),
        "name" | "op" => Some(sym::OPERATION),
        "write" | "non_idempotent" | "nonidempotent" => Some(sym::NOT_IDEMPOTENT),
        "delay" | "initial_delay" | "min_delay" => Some(sym::BASE_DELAY),
        "strategy" => Some(sym::BACKOFF),
        "classifier" | "retry_if" | "retry_on" | "retry_when" | "hint" | "retry_hint" => {
            Some(sym::CLASSIFY)
        }
        _ => None,
    };
    if let Some(s) = synonym.and_then(|s| candidates.iter().find(|c| **c == s)) {
        return Some(s);
    }
    // An abbreviation (`"expo"`) is too far from its word for the edit distance.
    let mut prefixed = candidates.iter().filter(|c| c.starts_with(lower.as_str()));
    if let (Some(only), None, true) = (prefixed.next(), prefixed.next(), lower.len() >= 3) {
        return Some(only);
    }
    let (best, dist) = candidates
        .iter()
        .map(|c| (*c, levenshtein(&lower, c)))
        .min_by_key(|(_, d)| *d)?;
    (dist <= (given.len() / 3).max(1)).then_some(best)
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn m3_unknown_argument_suggestions() {
        assert_eq!(closest("max_attempt", &sym::ALL), Some("max_attempts"));
        assert_eq!(closest("retries", &sym::ALL), Some("max_attempts"));
        assert_eq!(closest("idempotnet", &sym::ALL), Some("idempotent"));
        assert_eq!(closest("sevrice", &sym::ALL), Some("service"));
        assert_eq!(closest("colour", &sym::ALL), None);
        assert_eq!(closest("retry_if", &sym::ALL), Some("classify"));
        assert_eq!(closest("clasify", &sym::ALL), Some("classify"));
        // Abbreviations of one name only.
        let backoffs = ["exponential", "linear", "fixed", "jitter", "none"];
        assert_eq!(closest("expo", &backoffs), Some("exponential"));
        assert_eq!(closest("lin", &backoffs), Some("linear"));
        assert_eq!(closest("max", &sym::ALL), None, "max_attempts or max_delay");
    }
}
