//! G8 pacing rules shared through Redis: what an acquire of a resource with shared rules
//! sends to the script (`pacing.lua`), and what it says about the request.
//!
//! The rules are the core's [`Pacing`]: its window rules, spacing rules and concurrency cap
//! (its even-spend settings belong to the primary quota, which the script shares already).

use crate::error::RedisQuotaError;
use resilience_core::governor::{Measure, Pacing, Request, RequestKind, Selector};
use std::sync::Arc;

/// The most endpoints a per-endpoint window rule keeps a window of its own for, per rule.
/// Idle ones (nothing left in their window) are evicted to make room; past it, endpoints share
/// one overflow window (conservative: their grants all count against each of them).
pub const SHARED_ENDPOINT_CAP: u32 = 32;

/// The longest rule name the script is sent.
const MAX_NAME: usize = 64;

/// The rules, as the script's arguments (built once per resource).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PacingArgs {
    /// Concurrency cap (0: none).
    pub cap: u32,
    /// Spacing count, then name, selector, gap ms each; window count, then name, selector,
    /// measure, limit, span ms, P0 headroom, per endpoint each.
    pub rules: Vec<String>,
    /// Whether a rule keeps windows per endpoint (else the endpoint is not sent).
    pub per_endpoint: bool,
}

/// What the script needs to know of one request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Ask {
    /// 0 read, 1 write, 2 create.
    pub kind: u8,
    pub points: u32,
    pub endpoint: Option<Arc<str>>,
}

impl Ask {
    /// A plain acquire (no request named): a read of one point, no endpoint.
    pub fn plain() -> Self {
        Self {
            kind: 0,
            points: 1,
            endpoint: None,
        }
    }

    /// `request`, for `rules` (the endpoint only if a rule needs it).
    pub fn of(request: &Request<'_>, rules: Option<&PacingArgs>) -> Self {
        let kind = match request.kind() {
            RequestKind::Read => 0,
            RequestKind::Write => 1,
            RequestKind::Create => 2,
        };
        let endpoint = rules
            .filter(|r| r.per_endpoint)
            .and_then(|_| request.endpoint())
            .map(Arc::from);
        Self {
            kind,
            points: request.points(),
            endpoint,
        }
    }
}

fn selector(s: Selector) -> &'static str {
    match s {
        Selector::All => "0",
        Selector::Writes => "1",
        Selector::Creates => "2",
    }
}

fn ms(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl PacingArgs {
    /// The script's arguments for `pacing`'s rules.
    pub fn new(pacing: &Pacing) -> Self {
        let mut rules = vec![pacing.spacings.len().to_string()];
        for sp in &pacing.spacings {
            rules.push(sp.name.to_string());
            rules.push(selector(sp.selector).into());
            rules.push(ms(sp.gap).to_string());
        }
        rules.push(pacing.windows.len().to_string());
        for w in &pacing.windows {
            rules.push(w.name.to_string());
            rules.push(selector(w.selector).into());
            rules.push(
                match w.measure {
                    Measure::Requests => "0",
                    Measure::Points => "1",
                    Measure::Cost => "2",
                }
                .into(),
            );
            rules.push(w.limit.to_string());
            rules.push(ms(w.window + w.margin).to_string());
            rules.push(w.p0_headroom.to_string());
            rules.push(if w.per_endpoint { "1" } else { "0" }.into());
        }
        Self {
            cap: pacing.max_concurrent.unwrap_or(0),
            rules,
            per_endpoint: pacing.windows.iter().any(|w| w.per_endpoint),
        }
    }
}

/// Checks the rules the script is given; errors name the field.
pub(crate) fn validate(pacing: &Pacing) -> Result<(), RedisQuotaError> {
    let bad = |field: &'static str, reason: &str| {
        Err(RedisQuotaError::Config {
            field,
            reason: reason.to_owned(),
        })
    };
    let day = std::time::Duration::from_secs(86_400);
    for w in &pacing.windows {
        if w.name.is_empty() || w.name.len() > MAX_NAME || w.name.contains('\0') {
            return bad("pacing.window.name", "1-64 bytes, no NUL");
        }
        if w.limit == 0 {
            return bad("pacing.window.limit", "at least 1");
        }
        if w.window.is_zero() || w.window + w.margin > day {
            return bad(
                "pacing.window.window",
                "above zero, with its margin at most a day",
            );
        }
        if w.p0_headroom >= w.limit {
            return bad("pacing.window.p0_headroom", "less than the rule's limit");
        }
    }
    for s in &pacing.spacings {
        if s.name.is_empty() || s.name.len() > MAX_NAME || s.name.contains('\0') {
            return bad("pacing.spacing.name", "1-64 bytes, no NUL");
        }
        if s.gap.is_zero() || s.gap > day {
            return bad("pacing.spacing.gap", "above zero and at most a day");
        }
    }
    if pacing.max_concurrent == Some(0) {
        return bad("pacing.max_concurrent", "at least 1");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn g7_g8_github_rules_become_script_arguments() {
        let p = Pacing::github().with_write_spacing(Duration::from_secs(1));
        validate(&p).expect("valid");
        let a = PacingArgs::new(&p);
        assert_eq!(a.cap, 99);
        assert!(a.per_endpoint);
        assert_eq!(&a.rules[..4], ["1", "write_spacing", "1", "1000"]);
        assert_eq!(a.rules[4], "3");
        assert_eq!(
            &a.rules[5..12],
            [
                "content_creating_per_minute",
                "2",
                "0",
                "80",
                "60500",
                "8",
                "0"
            ]
        );
        assert_eq!(a.rules.len(), 5 + 3 * 7);
        let r = Request::create().with_endpoint("POST /repos/{owner}/{repo}/pulls");
        let ask = Ask::of(&r, Some(&a));
        assert_eq!((ask.kind, ask.points), (2, 5));
        assert_eq!(
            ask.endpoint.as_deref(),
            Some("POST /repos/{owner}/{repo}/pulls")
        );
        let zero = Pacing {
            max_concurrent: Some(0),
            ..Pacing::default()
        };
        assert!(validate(&zero).is_err());
    }
}
