//! What this process's grants counted in the shared G8 rules lately: if Redis loses its data,
//! each process reports this before it rejoins, and the rules' counts are rebuilt from the
//! reports (`pacing_rebuild.lua`) instead of starting from zero.
//!
//! Kept like the script keeps the counts: per window rule, rings of [`BUCKETS`] + 1 buckets
//! of `span / BUCKETS` ms of the *server's* clock (a grant's time is the server's), so a
//! report adds bucket to bucket. Recording a grant is a few additions under a lock the
//! acquire path takes once.

use crate::pacing::{pack, Ask, Item, PacingArgs};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// Buckets per window, as `pacing.lua`'s `NB`.
pub(crate) const BUCKETS: u64 = 10;
const SLOTS: usize = BUCKETS as usize + 1;

/// The most endpoints a per-endpoint rule logs one by one; past it (after idle ones are
/// dropped), the rest share one ring that the report counts against every endpoint.
const LOCAL_ENDPOINTS: usize = 256;

/// The endpoint name of that shared ring in a report (`pacing.lua`'s `OVERFLOW`).
const OVERFLOW: &str = "\u{1}";

/// Counts per bucket number; the newest is `top`, and the ring holds `top - BUCKETS ..= top`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Ring {
    top: u64,
    counts: [u64; SLOTS],
}

impl Ring {
    fn add(&mut self, bucket: u64, n: u64) {
        if bucket > self.top {
            let from = self.top + 1;
            for k in from..=bucket.min(self.top + BUCKETS + 1) {
                self.counts[(k % SLOTS as u64) as usize] = 0;
            }
            self.top = bucket;
        }
        // Older than the ring: the server's clock stepped back (a failover to a host whose
        // clock is behind). The script counts such a grant in its newest bucket; so does the
        // log, which would otherwise leave it out of a report while the rule still counts it.
        let into = if bucket + BUCKETS >= self.top {
            bucket
        } else {
            self.top
        };
        self.counts[(into % SLOTS as u64) as usize] += n;
    }

    /// Whether every count is out of the ring at bucket `now`.
    fn idle_at(&self, now: u64) -> bool {
        self.top + BUCKETS < now || self.counts.iter().all(|&c| c == 0)
    }

    /// `top`, then the counts of buckets `top - BUCKETS ..= top`, oldest first (zero below
    /// bucket 0).
    fn items(&self, out: &mut Vec<Item<'_>>) {
        out.push(Item::Int(self.top));
        for k in 0..=BUCKETS {
            let count = (self.top + k)
                .checked_sub(BUCKETS)
                .map_or(0, |b| self.counts[(b % SLOTS as u64) as usize]);
            out.push(Item::Int(count));
        }
    }
}

/// One window rule's rings: one for a rule counted across endpoints, else one per endpoint.
#[derive(Debug, Clone, Default)]
struct WindowLog {
    whole: Option<Ring>,
    endpoints: HashMap<Arc<str>, Ring>,
    overflow: Option<Ring>,
}

/// See the module docs. One per resource with shared rules.
#[derive(Debug, Default)]
pub(crate) struct PaceLog {
    windows: Vec<WindowLog>,
    /// The last selected grant of each spacing rule (server ms, 0 none).
    spacings: Vec<u64>,
    /// Local clock time after which nothing logged counts in any rule any more.
    live_until: Duration,
}

impl PaceLog {
    pub fn new(rules: &PacingArgs) -> Self {
        Self {
            windows: vec![WindowLog::default(); rules.windows.len()],
            spacings: vec![0; rules.spacings.len()],
            live_until: Duration::ZERO,
        }
    }

    /// Logs a grant of `ask` (costing `cost`) made at `at_ms` on the server's clock, at
    /// `now` on this process's.
    pub fn record(&mut self, rules: &PacingArgs, ask: &Ask, cost: u32, at_ms: u64, now: Duration) {
        let mut longest = 0;
        for (rule, log) in rules.windows.iter().zip(&mut self.windows) {
            let n = rule.amount(ask, cost);
            if n == 0 {
                continue;
            }
            longest = longest.max(rule.span_ms + rule.bucket_ms());
            let bucket = at_ms / rule.bucket_ms();
            if !rule.per_endpoint {
                log.whole.get_or_insert_with(Ring::default).add(bucket, n);
                continue;
            }
            let endpoint = ask.endpoint.as_deref().unwrap_or("");
            if let Some(ring) = log.endpoints.get_mut(endpoint) {
                ring.add(bucket, n);
                continue;
            }
            if log.endpoints.len() >= LOCAL_ENDPOINTS {
                log.endpoints.retain(|_, r| !r.idle_at(bucket));
            }
            if log.endpoints.len() >= LOCAL_ENDPOINTS {
                log.overflow
                    .get_or_insert_with(Ring::default)
                    .add(bucket, n);
            } else {
                let mut ring = Ring::default();
                ring.add(bucket, n);
                log.endpoints.insert(Arc::from(endpoint), ring);
            }
        }
        for (&(selector, gap_ms), last) in rules.spacings.iter().zip(&mut self.spacings) {
            if crate::pacing::selects(selector, ask.kind) {
                *last = (*last).max(at_ms);
                longest = longest.max(gap_ms);
            }
        }
        if longest > 0 {
            self.live_until = self.live_until.max(now + Duration::from_millis(longest));
        }
    }

    /// Whether some logged grant may still count in a rule at `now` (local clock): then a
    /// rebuild needs this process's report.
    pub fn due(&self, now: Duration) -> bool {
        now < self.live_until
    }

    /// The report `pacing_rebuild.lua` reads: the spacing rules' last grants, then per
    /// window rule its rings.
    pub fn report(&self) -> Vec<u8> {
        let mut items = vec![Item::Int(self.spacings.len() as u64)];
        items.extend(self.spacings.iter().map(|&ms| Item::Int(ms)));
        items.push(Item::Int(self.windows.len() as u64));
        for log in &self.windows {
            let rings: Vec<(&str, &Ring)> = log
                .whole
                .iter()
                .map(|r| ("", r))
                .chain(log.endpoints.iter().map(|(e, r)| (&**e, r)))
                .chain(log.overflow.iter().map(|r| (OVERFLOW, r)))
                .collect();
            items.push(Item::Int(rings.len() as u64));
            for (endpoint, ring) in rings {
                items.push(Item::Str(endpoint));
                ring.items(&mut items);
            }
        }
        pack(&items)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use resilience_core::governor::{Measure, Pacing, Request, Selector, WindowRule};

    fn rules() -> PacingArgs {
        let p = Pacing {
            windows: vec![
                WindowRule::new(
                    "creates",
                    Selector::Creates,
                    Measure::Requests,
                    10,
                    Duration::from_millis(1_000),
                ),
                WindowRule::new(
                    "points",
                    Selector::All,
                    Measure::Points,
                    100,
                    Duration::from_millis(1_000),
                )
                .per_endpoint(),
            ],
            ..Pacing::default()
        }
        .with_write_spacing(Duration::from_millis(300));
        PacingArgs::new(&p)
    }

    fn ask(r: &Request<'_>, a: &PacingArgs) -> Ask {
        Ask::of(r, Some(a))
    }

    /// The report's integers and strings, decoded from the subset `pack` writes.
    fn unpack(b: &[u8]) -> Vec<String> {
        let (mut i, mut out) = (0, Vec::new());
        let n = match b[0] {
            0xdc => {
                i = 3;
                usize::from(u16::from_be_bytes([b[1], b[2]]))
            }
            x => {
                i += 1;
                usize::from(x & 0x0f)
            }
        };
        for _ in 0..n {
            let x = b[i];
            let (v, len) = match x {
                0..=0x7f => (x.to_string(), 1),
                0xcc => (b[i + 1].to_string(), 2),
                0xcd => (u16::from_be_bytes([b[i + 1], b[i + 2]]).to_string(), 3),
                0xce => (
                    u32::from_be_bytes(b[i + 1..i + 5].try_into().unwrap()).to_string(),
                    5,
                ),
                0xcf => (
                    u64::from_be_bytes(b[i + 1..i + 9].try_into().unwrap()).to_string(),
                    9,
                ),
                0xa0..=0xbf => {
                    let l = usize::from(x & 0x1f);
                    (
                        format!("'{}'", String::from_utf8_lossy(&b[i + 1..i + 1 + l])),
                        1 + l,
                    )
                }
                _ => panic!("unexpected byte {x:#x}"),
            };
            out.push(v);
            i += len;
        }
        assert_eq!(i, b.len());
        out
    }

    #[test]
    fn g7_g8_a_grant_is_logged_in_the_buckets_of_the_rules_that_count_it() {
        let a = rules();
        let mut log = PaceLog::new(&a);
        assert!(!log.due(Duration::ZERO), "nothing logged");
        // Bucket width 100 ms (span 1 s / 10). A create on /x at 1 234 ms: bucket 12.
        let create = Request::create().with_endpoint("/x");
        log.record(&a, &ask(&create, &a), 1, 1_234, Duration::from_secs(5));
        // A read: not a create, not a write; 1 point on /x, bucket 13.
        let read = Request::read().with_endpoint("/x");
        log.record(&a, &ask(&read, &a), 1, 1_300, Duration::from_secs(5));
        let r = unpack(&log.report());
        let zeros = |n| vec!["0".to_owned(); n];
        let mut want = vec!["1".to_owned(), "1234".to_owned(), "2".to_owned()];
        // creates: one ring, top 12, buckets 2..=12.
        want.extend(["1", "''", "12"].map(String::from));
        want.extend(zeros(10));
        want.push("1".into());
        // points on /x: top 13, buckets 3..=13: 5 points at 12, 1 at 13.
        want.extend(["1", "'/x'", "13"].map(String::from));
        want.extend(zeros(9));
        want.extend(["5", "1"].map(String::from));
        assert_eq!(r, want);
        // Due while the longest span (1 s + a bucket) may still count it.
        assert!(log.due(Duration::from_millis(6_099)));
        assert!(!log.due(Duration::from_millis(6_100)));
    }

    #[test]
    fn g7_g8_a_ring_moving_past_a_window_forgets_what_left_it_and_keeps_what_is_older() {
        let mut ring = Ring::default();
        ring.add(5, 2);
        ring.add(15, 1); // 5 is still inside 5..=15
        assert_eq!(ring.counts.iter().sum::<u64>(), 3);
        ring.add(16, 1); // 5 leaves
        assert_eq!(ring.counts.iter().sum::<u64>(), 2);
        ring.add(3, 7); // older than the ring (a clock stepped back): in the newest, 16
        assert_eq!(ring.counts.iter().sum::<u64>(), 9);
        assert_eq!(ring.counts[(16 % SLOTS as u64) as usize], 8);
        ring.add(100, 1);
        assert_eq!(ring.counts.iter().sum::<u64>(), 1);
        assert!(!ring.idle_at(110) && ring.idle_at(111));
    }

    #[test]
    fn g7_g8_past_its_endpoint_bound_the_log_keeps_one_overflow_ring() {
        let a = rules();
        let mut log = PaceLog::new(&a);
        let names: Vec<String> = (0..=LOCAL_ENDPOINTS).map(|i| format!("/e{i}")).collect();
        for n in &names {
            let r = Request::read().with_endpoint(n);
            log.record(&a, &ask(&r, &a), 1, 1_000, Duration::ZERO);
        }
        assert_eq!(log.windows[1].endpoints.len(), LOCAL_ENDPOINTS);
        assert_eq!(
            log.windows[1].overflow.as_ref().map(|r| r.counts[10]),
            Some(1)
        );
        assert!(unpack(&log.report()).contains(&"'\u{1}'".to_owned()));
        // Once the logged endpoints are idle, a new one gets its own ring again.
        let r = Request::read().with_endpoint("/late");
        log.record(&a, &ask(&r, &a), 1, 10_000, Duration::ZERO);
        assert_eq!(log.windows[1].endpoints.len(), 1);
    }
}
