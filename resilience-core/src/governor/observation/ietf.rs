//! The IETF `RateLimit` / `RateLimit-Policy` fields (draft-ietf-httpapi-ratelimit-headers),
//! read leniently across the drafts that servers actually send:
//!
//! - draft-08 and later: `RateLimit: "default";r=50;t=30` and
//!   `RateLimit-Policy: "default";q=100;w=60` (lists of items with parameters);
//! - draft-07: `RateLimit: limit=100, remaining=50, reset=5` (a dictionary) and
//!   `RateLimit-Policy: 100;w=60`;
//! - earlier drafts: separate `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset`
//!   (handled by the caller, one integer each).
//!
//! Times are delta seconds. Anything unreadable yields `None`; nothing panics.

/// One member of a structured-field list: a bare item and its `key=value` parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Member<'a> {
    pub item: &'a str,
    pub params: Vec<(&'a str, &'a str)>,
}

/// What a `RateLimit` field says about the most constrained policy it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Current {
    pub remaining: Option<u64>,
    pub reset_after: Option<u64>,
    pub limit: Option<u64>,
}

/// A `RateLimit-Policy` entry: name (may be empty), quota and window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Policy {
    pub name: String,
    pub quota: u64,
}

/// Splits on `sep` outside double quotes.
fn split_outside_quotes(s: &str, sep: char) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut quoted, mut escaped) = (0, false, false);
    for (i, c) in s.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            c if c == sep && !quoted => {
                out.push(&s[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// Parses a list of members; at most 16 are read (a field is a hint, not a data set).
pub(crate) fn members(s: &str) -> Vec<Member<'_>> {
    split_outside_quotes(s, ',')
        .into_iter()
        .take(16)
        .filter_map(|m| {
            let mut parts = split_outside_quotes(m, ';').into_iter();
            let item = parts.next()?.trim();
            let params = parts
                .filter_map(|p| {
                    let (k, v) = p.split_once('=').unwrap_or((p, "?1"));
                    let k = k.trim();
                    (!k.is_empty()).then_some((k, v.trim()))
                })
                .collect();
            Some(Member { item, params })
        })
        .collect()
}

fn unquote(s: &str) -> &str {
    s.strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(s)
}

/// A non-negative integer, or `None`.
pub(crate) fn int(s: &str) -> Option<u64> {
    let s = s.trim();
    if s.is_empty() || s.len() > 19 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn param<'a>(m: &Member<'a>, key: &str) -> Option<&'a str> {
    m.params
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(key))
        .map(|(_, v)| *v)
}

/// Reads a `RateLimit` field value; `None` when it holds nothing usable.
pub(crate) fn parse_current(value: &str) -> Option<Current> {
    let ms = members(value);
    // draft-07 dictionary: `limit=…, remaining=…, reset=…` (each member is `key=value`).
    if ms.iter().any(|m| m.item.contains('=')) {
        let mut c = Current::default();
        for m in &ms {
            let Some((k, v)) = m.item.split_once('=') else {
                continue;
            };
            match k.trim().to_ascii_lowercase().as_str() {
                "limit" => c.limit = int(v),
                "remaining" => c.remaining = int(v),
                "reset" => c.reset_after = int(v),
                _ => {}
            }
        }
        return (c.remaining.is_some() || c.limit.is_some() || c.reset_after.is_some())
            .then_some(c);
    }
    // draft-08+: items with `r` and `t`; the most constrained (least remaining) wins.
    ms.iter()
        .filter_map(|m| {
            let r = param(m, "r").and_then(int)?;
            Some((m, r))
        })
        .min_by_key(|(_, r)| *r)
        .map(|(m, r)| Current {
            remaining: Some(r),
            reset_after: param(m, "t").and_then(int),
            limit: None,
        })
}

/// The name of the item the most constrained `RateLimit` member refers to (draft-08+).
pub(crate) fn current_policy_name(value: &str) -> Option<String> {
    members(value)
        .iter()
        .filter_map(|m| Some((m, param(m, "r").and_then(int)?)))
        .min_by_key(|(_, r)| *r)
        .map(|(m, _)| unquote(m.item).to_owned())
}

/// Reads a `RateLimit-Policy` field value.
pub(crate) fn parse_policies(value: &str) -> Vec<Policy> {
    members(value)
        .iter()
        .filter_map(|m| {
            // draft-08+: `"name";q=…`; draft-07: the item itself is the quota.
            match param(m, "q").and_then(int) {
                Some(quota) => Some(Policy {
                    name: unquote(m.item).to_owned(),
                    quota,
                }),
                None => int(m.item).map(|quota| Policy {
                    name: String::new(),
                    quota,
                }),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draft_08_items_pick_the_least_remaining() {
        let c = parse_current(r#""burst";r=50;t=30, "daily";r=5;t=3600"#).unwrap();
        assert_eq!(c.remaining, Some(5));
        assert_eq!(c.reset_after, Some(3600));
        assert_eq!(
            current_policy_name(r#""burst";r=50;t=30, "daily";r=5;t=3600"#).as_deref(),
            Some("daily")
        );
    }

    #[test]
    fn draft_07_dictionary() {
        let c = parse_current("limit=100, remaining=50, reset=5").unwrap();
        assert_eq!(
            (c.limit, c.remaining, c.reset_after),
            (Some(100), Some(50), Some(5))
        );
    }

    #[test]
    fn policies_both_drafts() {
        let p = parse_policies(r#""burst";q=100;w=60,"daily";q=1000;w=86400"#);
        assert_eq!(p.len(), 2);
        assert_eq!((p[1].name.as_str(), p[1].quota), ("daily", 1000));
        let p = parse_policies("10;w=1, 100;w=3600");
        assert_eq!(p.iter().map(|p| p.quota).collect::<Vec<_>>(), [10, 100]);
    }

    #[test]
    fn quoted_separators_do_not_split() {
        let c = parse_current(r#""a,b;c";r=7;t=1"#).unwrap();
        assert_eq!(c.remaining, Some(7));
    }

    #[test]
    fn junk_is_none() {
        assert_eq!(parse_current(""), None);
        assert_eq!(parse_current("r=-1"), None);
        assert_eq!(parse_current(r#""x";r=abc"#), None);
        assert!(parse_policies(";;;,,,").is_empty());
    }
}
