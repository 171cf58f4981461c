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
    /// One MessagePack array, unpacked by the script in one C call (one argument instead of
    /// one per field: Redis turns every argument into a Lua string on every call): the
    /// endpoint cap, the concurrency cap (0: none), the spacing count, then name, selector,
    /// gap ms of each; the window count, then name, selector, measure, limit, span ms, P0
    /// headroom, per endpoint (0/1) of each.
    pub packed: Vec<u8>,
    /// Whether a rule keeps windows per endpoint (else the endpoint is not sent).
    pub per_endpoint: bool,
    /// The window rules, in order: to refuse here, by name, a request no window could grant,
    /// and to log what this process's grants counted in them ([`PaceLog`](crate::pace_log::PaceLog)).
    pub windows: Vec<WindowSpec>,
    /// The spacing rules' selectors and gaps (ms), in order.
    pub spacings: Vec<(u64, u64)>,
}

/// A window rule, as the script counts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WindowSpec {
    name: Arc<str>,
    /// 0 all, 1 writes, 2 creates.
    selector: u64,
    measure: Measure,
    limit: u64,
    p0_headroom: u64,
    /// The window plus its margin, ms.
    pub span_ms: u64,
    pub per_endpoint: bool,
}

impl WindowSpec {
    /// Whether the rule counts `ask`, and how many units (0: not counted).
    pub fn amount(&self, ask: &Ask, cost: u32) -> u64 {
        if !selects(self.selector, ask.kind) {
            return 0;
        }
        match self.measure {
            Measure::Requests => 1,
            Measure::Points => u64::from(ask.points),
            Measure::Cost => u64::from(cost),
        }
    }

    /// The width of one of its buckets, ms (as `pacing.lua`: span / 10, rounded up).
    pub fn bucket_ms(&self) -> u64 {
        self.span_ms.div_ceil(crate::pace_log::BUCKETS).max(1)
    }
}

/// Whether a rule with `selector` counts a request of `kind` (as `pacing.lua`'s `selects`).
pub(crate) fn selects(selector: u64, kind: u8) -> bool {
    selector == 0 || (selector == 1 && kind >= 1) || (selector == 2 && kind == 2)
}

/// One value of a packed array.
pub(crate) enum Item<'a> {
    Str(&'a str),
    Int(u64),
}

/// MessagePack of a flat array of strings and unsigned integers (the subset the script reads).
pub(crate) fn pack(items: &[Item<'_>]) -> Vec<u8> {
    fn header(out: &mut Vec<u8>, len: usize, fix: u8, fix_max: usize, wide: [u8; 3]) {
        if len <= fix_max {
            out.push(fix | len as u8);
        } else if let (Ok(n), true) = (u8::try_from(len), wide[0] != 0) {
            out.extend([wide[0], n]);
        } else if let Ok(n) = u16::try_from(len) {
            out.push(wide[1]);
            out.extend(n.to_be_bytes());
        } else {
            out.push(wide[2]);
            out.extend(u32::try_from(len).unwrap_or(u32::MAX).to_be_bytes());
        }
    }
    let mut out = Vec::new();
    // Arrays have no 8-bit length form.
    header(&mut out, items.len(), 0x90, 15, [0, 0xdc, 0xdd]);
    for item in items {
        match item {
            Item::Str(s) => {
                header(&mut out, s.len(), 0xa0, 31, [0xd9, 0xda, 0xdb]);
                out.extend(s.as_bytes());
            }
            Item::Int(n) => {
                if let Ok(b) = u8::try_from(*n) {
                    if b < 0x80 {
                        out.push(b);
                    } else {
                        out.extend([0xcc, b]);
                    }
                } else if let Ok(w) = u16::try_from(*n) {
                    out.push(0xcd);
                    out.extend(w.to_be_bytes());
                } else if let Ok(w) = u32::try_from(*n) {
                    out.push(0xce);
                    out.extend(w.to_be_bytes());
                } else {
                    out.push(0xcf);
                    out.extend(n.to_be_bytes());
                }
            }
        }
    }
    out
}

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

fn ms(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl PacingArgs {
    /// The script's arguments for `pacing`'s rules.
    pub fn new(pacing: &Pacing) -> Self {
        use Item::{Int, Str};
        let sel = |s: Selector| match s {
            Selector::All => 0,
            Selector::Writes => 1,
            Selector::Creates => 2,
        };
        let mut items = vec![
            Int(u64::from(SHARED_ENDPOINT_CAP)),
            Int(u64::from(pacing.max_concurrent.unwrap_or(0))),
            Int(pacing.spacings.len() as u64),
        ];
        for sp in &pacing.spacings {
            items.extend([Str(&sp.name), Int(sel(sp.selector)), Int(ms(sp.gap))]);
        }
        items.push(Int(pacing.windows.len() as u64));
        for w in &pacing.windows {
            let measure = match w.measure {
                Measure::Requests => 0,
                Measure::Points => 1,
                Measure::Cost => 2,
            };
            items.extend([
                Str(&w.name),
                Int(sel(w.selector)),
                Int(measure),
                Int(u64::from(w.limit)),
                Int(ms(w.window.saturating_add(w.margin))),
                Int(u64::from(w.p0_headroom)),
                Int(u64::from(w.per_endpoint)),
            ]);
        }
        let windows = pacing
            .windows
            .iter()
            .map(|w| WindowSpec {
                name: w.name.clone(),
                selector: sel(w.selector),
                measure: w.measure,
                limit: u64::from(w.limit),
                p0_headroom: u64::from(w.p0_headroom),
                span_ms: ms(w.window.saturating_add(w.margin)),
                per_endpoint: w.per_endpoint,
            })
            .collect();
        Self {
            packed: pack(&items),
            per_endpoint: pacing.windows.iter().any(|w| w.per_endpoint),
            windows,
            spacings: pacing
                .spacings
                .iter()
                .map(|s| (sel(s.selector), ms(s.gap)))
                .collect(),
        }
    }

    /// The first rule that can never grant `ask` of `cost` at `priority` (as the script
    /// judges it): `(rule, needs, allows)`.
    pub fn never_fits(&self, ask: &Ask, cost: u32, priority: u8) -> Option<(&str, u64, u64)> {
        self.windows.iter().find_map(|r| {
            let needs = r.amount(ask, cost);
            let allows = if priority == 0 {
                r.limit
            } else {
                r.limit - r.p0_headroom
            };
            (needs > allows).then_some((&*r.name, needs, allows))
        })
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
        if w.window.is_zero() || w.window.checked_add(w.margin).is_none_or(|s| s > day) {
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
    // Rules are counted by name: two of one kind with one name would share (and overwrite)
    // one count.
    let unique = |names: Vec<&str>| {
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        sorted.len() == names.len()
    };
    if !unique(pacing.windows.iter().map(|w| &*w.name).collect()) {
        return bad("pacing.window.name", "unique among the window rules");
    }
    if !unique(pacing.spacings.iter().map(|s| &*s.name).collect()) {
        return bad("pacing.spacing.name", "unique among the spacing rules");
    }
    if pacing.max_concurrent == Some(0) {
        return bad("pacing.max_concurrent", "at least 1");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use resilience_core::governor::{Measure, Selector, WindowRule};
    use std::time::Duration;

    #[test]
    fn g7_g8_github_rules_become_script_arguments() {
        let p = Pacing::github().with_write_spacing(Duration::from_secs(1));
        validate(&p).expect("valid");
        let a = PacingArgs::new(&p);
        assert!(a.per_endpoint);
        // A 28-item array: the two caps, one spacing rule, three window rules, two counts.
        assert_eq!(&a.packed[..3], [0xdc, 0, 28]);
        assert_eq!(&a.packed[3..7], [32, 99, 1, 0xa0 | 13]);
        assert_eq!(&a.packed[7..20], b"write_spacing");
        assert_eq!(&a.packed[20..24], [1, 0xcd, 0x03, 0xe8]); // Writes, 1000 ms
        let long = "x".repeat(40);
        assert_eq!(&pack(&[Item::Str(&long)])[..3], [0x91, 0xd9, 40]);
        assert_eq!(
            pack(&[Item::Int(200), Item::Int(70_000)]),
            [0x92, 0xcc, 200, 0xce, 0, 1, 0x11, 0x70]
        );
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
        let mut twice = Pacing::github();
        twice.windows.push(twice.windows[0].clone());
        assert!(validate(&twice).is_err());
    }

    /// A window whose margin overflows a `Duration` is a config error naming the field, not
    /// a panic.
    #[test]
    fn g7_g8_a_window_past_any_duration_is_refused_by_name() {
        let huge = Pacing {
            windows: vec![WindowRule::new(
                "huge",
                Selector::All,
                Measure::Requests,
                1,
                Duration::MAX,
            )
            .with_margin(Duration::from_millis(1))],
            ..Pacing::default()
        };
        match validate(&huge) {
            Err(RedisQuotaError::Config { field, .. }) => assert_eq!(field, "pacing.window.window"),
            other => panic!("{other:?}"),
        }
        // Built anyway, the arguments saturate instead of panicking.
        assert!(!PacingArgs::new(&huge).packed.is_empty());
    }
}
