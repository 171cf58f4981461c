//! What this process's grants counted in the shared G8 rules lately: if Redis loses its data,
//! each process reports this before it rejoins, and the rules' counts are rebuilt from the
//! reports (`pacing_rebuild.lua`) instead of starting from zero.
//!
//! Kept like the script keeps the counts: per window rule, rings of [`BUCKETS`] + 1 buckets
//! of `span / BUCKETS` ms of the *server's* clock (a grant's time is the server's), so a
//! report adds bucket to bucket. Recording a grant is a few additions under a lock the
//! acquire path takes once.
//!
//! An ask whose answer this process has not read yet ([`PendingAsk`]) may already count on
//! the server: a report sends it as counted *now*, which the script reads as its own clock at
//! the merge (later than the grant, so it counts no shorter). Without it, a grant whose reply
//! was still on its way when its process reported was missing from the rebuilt counts.

use crate::pacing::{pack, Ask, Item, PacingArgs};
use parking_lot::Mutex;
use resilience_core::clock::Clock;
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

/// In a report, the time the merging script reads as its own clock (`pacing_rebuild.lua`):
/// as a spacing rule's last grant (a real one is server ms since 1970, never 1), and as the
/// newest bucket of a ring (a real one is never bucket 0).
const NOW_MS: u64 = 1;
const NOW_BUCKET: u64 = 0;

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
    /// Asks sent whose answer was not read, reported as counted now.
    pending: Vec<Pending>,
    next_id: u64,
    /// Calls granted under the rules and not yet observed or released: their ask's id, and
    /// the local time after which the script no longer counts them (the call bound after the
    /// grant). After a data loss they are reported, so the concurrency cap counts them
    /// (forgotten, as they were, the cap let as many more go).
    flying: Vec<(u64, Duration)>,
    /// This process's call bound: how long after its grant one of its calls may still be on
    /// its way (the script counts it at least that long).
    bound: Duration,
}

/// An ask sent whose answer this process has not read.
#[derive(Debug)]
struct Pending {
    id: u64,
    ask: Ask,
    cost: u32,
    /// `None` while its acquire waits for the answer. Once the acquire gave up on it (lost
    /// connection, error, or dropped), the local time until which its grant, had there
    /// been one, could still count.
    until: Option<Duration>,
}

impl Pending {
    fn live(&self, now: Duration, own: Option<u64>) -> bool {
        Some(self.id) != own && self.until.is_none_or(|u| now < u)
    }
}

impl PaceLog {
    /// `bound`: the process's call bound.
    pub fn new(rules: &PacingArgs, bound: Duration) -> Self {
        Self {
            windows: vec![WindowLog::default(); rules.windows.len()],
            spacings: vec![0; rules.spacings.len()],
            bound,
            ..Self::default()
        }
    }

    /// The call of the grant made for ask `id` is no longer in flight.
    pub fn landed(&mut self, id: u64) {
        if let Some(i) = self.flying.iter().position(|&(f, _)| f == id) {
            self.flying.swap_remove(i);
        }
    }

    /// The calls granted that the script may still count as in flight at `now`, with the
    /// asks whose answer was not read (each may have been granted).
    fn calls_in_flight(&self, now: Duration, own: Option<u64>) -> u64 {
        let flying = self
            .flying
            .iter()
            .filter(|&&(_, until)| now < until)
            .count();
        let asked = self.pending.iter().filter(|p| p.live(now, own)).count();
        (flying + asked) as u64
    }

    /// Logs a grant of `ask` (costing `cost`) made at `at_ms` on the server's clock, at
    /// `now` on this process's.
    pub fn record(&mut self, rules: &PacingArgs, ask: &Ask, cost: u32, at_ms: u64, now: Duration) {
        for (rule, log) in rules.windows.iter().zip(&mut self.windows) {
            let n = rule.amount(ask, cost);
            if n == 0 {
                continue;
            }
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
        for (&(selector, _), last) in rules.spacings.iter().zip(&mut self.spacings) {
            if crate::pacing::selects(selector, ask.kind) {
                *last = (*last).max(at_ms);
            }
        }
        let longest = Self::life_ms(rules, ask, cost);
        if longest > 0 {
            self.live_until = self.live_until.max(now + Duration::from_millis(longest));
        }
    }

    /// How long after a grant of `ask` it may still count in some rule, ms (0: none).
    fn life_ms(rules: &PacingArgs, ask: &Ask, cost: u32) -> u64 {
        let windows = rules
            .windows
            .iter()
            .filter(|r| r.amount(ask, cost) > 0)
            .map(|r| r.span_ms + r.bucket_ms());
        let spacings = rules
            .spacings
            .iter()
            .filter(|&&(selector, _)| crate::pacing::selects(selector, ask.kind))
            .map(|&(_, gap_ms)| gap_ms);
        windows.chain(spacings).max().unwrap_or(0)
    }

    /// Notes an ask about to be sent; its id is for [`settle`](Self::settle) or
    /// [`give_up`](Self::give_up). Forgets asks given up on that can count no more.
    fn send(&mut self, ask: &Ask, cost: u32, now: Duration) -> u64 {
        self.pending.retain(|p| p.live(now, None));
        self.next_id += 1;
        self.pending.push(Pending {
            id: self.next_id,
            ask: ask.clone(),
            cost,
            until: None,
        });
        self.next_id
    }

    /// The answer to ask `id` was read: logs its grant, if any (server ms), in the same
    /// step, so no report can miss it in between.
    fn settle(&mut self, rules: &PacingArgs, id: u64, granted_ms: Option<u64>, now: Duration) {
        let Some(i) = self.pending.iter().position(|p| p.id == id) else {
            return;
        };
        let p = self.pending.swap_remove(i);
        if let Some(at_ms) = granted_ms {
            self.record(rules, &p.ask, p.cost, at_ms, now);
            self.flying.retain(|&(_, until)| now < until);
            self.flying.push((id, now + self.bound));
        }
    }

    /// Ask `id`'s answer will never be read: it is reported as counted now for as long as a
    /// grant made now could count.
    fn give_up(&mut self, rules: &PacingArgs, id: u64, now: Duration) {
        if let Some(p) = self.pending.iter_mut().find(|p| p.id == id) {
            let life = Self::life_ms(rules, &p.ask, p.cost);
            p.until = Some(now + Duration::from_millis(life));
        }
    }

    /// Whether some logged grant, or some ask but `own` not answered, may still count in a
    /// rule at `now` (local clock): then a rebuild needs this process's report.
    pub fn due(&self, now: Duration, own: Option<u64>) -> bool {
        now < self.live_until || self.calls_in_flight(now, own) > 0
    }

    /// The report `pacing_rebuild.lua` reads: the spacing rules' last grants, then per
    /// window rule its rings, then the calls in flight. The asks not answered, but `own` (the ask this report is sent
    /// for: it was not judged, and is asked again after the report), count at the merge's
    /// own time.
    pub fn report(&self, rules: &PacingArgs, own: Option<u64>, now: Duration) -> Vec<u8> {
        let pending: Vec<&Pending> = self.pending.iter().filter(|p| p.live(now, own)).collect();
        let mut items = vec![Item::Int(self.spacings.len() as u64)];
        for (&ms, &(selector, _)) in self.spacings.iter().zip(&rules.spacings) {
            let asked = pending
                .iter()
                .any(|p| crate::pacing::selects(selector, p.ask.kind));
            items.push(Item::Int(if asked { NOW_MS } else { ms }));
        }
        items.push(Item::Int(self.windows.len() as u64));
        let mut asked: Vec<(&str, Ring)> = Vec::new();
        for (log, rule) in self.windows.iter().zip(&rules.windows) {
            asked.clear();
            for p in &pending {
                let n = rule.amount(&p.ask, p.cost);
                if n == 0 {
                    continue;
                }
                let endpoint = match (rule.per_endpoint, p.ask.endpoint.as_deref()) {
                    (true, Some(e)) => e,
                    _ => "",
                };
                match asked.iter_mut().find(|(e, _)| *e == endpoint) {
                    Some((_, ring)) => ring.add(NOW_BUCKET, n),
                    None => {
                        let mut ring = Ring::default();
                        ring.add(NOW_BUCKET, n);
                        asked.push((endpoint, ring));
                    }
                }
            }
            let rings: Vec<(&str, &Ring)> = log
                .whole
                .iter()
                .map(|r| ("", r))
                .chain(log.endpoints.iter().map(|(e, r)| (&**e, r)))
                .chain(log.overflow.iter().map(|r| (OVERFLOW, r)))
                .chain(asked.iter().map(|(e, r)| (*e, r)))
                .collect();
            items.push(Item::Int(rings.len() as u64));
            for (endpoint, ring) in rings {
                items.push(Item::Str(endpoint));
                ring.items(&mut items);
            }
        }
        items.push(Item::Int(self.calls_in_flight(now, own)));
        pack(&items)
    }
}

/// An acquire's ask while its answer is not read (see the module docs). Settle it with the
/// answer; dropped unsettled (the call failed, or the acquire was dropped), it is given up.
pub(crate) struct PendingAsk<'a> {
    log: &'a Mutex<PaceLog>,
    rules: &'a PacingArgs,
    clock: &'a dyn Clock,
    id: u64,
    settled: bool,
}

impl<'a> PendingAsk<'a> {
    pub fn send(
        log: &'a Mutex<PaceLog>,
        rules: &'a PacingArgs,
        clock: &'a dyn Clock,
        ask: &Ask,
        cost: u32,
    ) -> Self {
        let id = log.lock().send(ask, cost, clock.now());
        Self {
            log,
            rules,
            clock,
            id,
            settled: false,
        }
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    /// The answer was read: granted at `granted_ms` (server ms), or refused (`None`).
    pub fn settle(mut self, granted_ms: Option<u64>) {
        self.settled = true;
        let now = self.clock.now();
        self.log.lock().settle(self.rules, self.id, granted_ms, now);
    }
}

impl Drop for PendingAsk<'_> {
    fn drop(&mut self) {
        if !self.settled {
            let now = self.clock.now();
            self.log.lock().give_up(self.rules, self.id, now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use resilience_core::governor::{Measure, Pacing, Request, Selector, WindowRule};
    const BOUND: Duration = Duration::from_secs(30);

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
        let mut log = PaceLog::new(&a, BOUND);
        assert!(!log.due(Duration::ZERO, None), "nothing logged");
        // Bucket width 100 ms (span 1 s / 10). A create on /x at 1 234 ms: bucket 12.
        let create = Request::create().with_endpoint("/x");
        log.record(&a, &ask(&create, &a), 1, 1_234, Duration::from_secs(5));
        // A read: not a create, not a write; 1 point on /x, bucket 13.
        let read = Request::read().with_endpoint("/x");
        log.record(&a, &ask(&read, &a), 1, 1_300, Duration::from_secs(5));
        let r = unpack(&log.report(&a, None, Duration::ZERO));
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
        // No call in flight: these were logged, not granted through an ask.
        want.push("0".into());
        assert_eq!(r, want);
        // Due while the longest span (1 s + a bucket) may still count it.
        assert!(log.due(Duration::from_millis(6_099), None));
        assert!(!log.due(Duration::from_millis(6_100), None));
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
        let mut log = PaceLog::new(&a, BOUND);
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
        assert!(unpack(&log.report(&a, None, Duration::ZERO)).contains(&"'\u{1}'".to_owned()));
        // Once the logged endpoints are idle, a new one gets its own ring again.
        let r = Request::read().with_endpoint("/late");
        log.record(&a, &ask(&r, &a), 1, 10_000, Duration::ZERO);
        assert_eq!(log.windows[1].endpoints.len(), 1);
    }

    /// The report of a log with no grants but the asks not answered.
    fn pending_report(log: &PaceLog, a: &PacingArgs, own: Option<u64>, now: u64) -> Vec<String> {
        unpack(&log.report(a, own, Duration::from_millis(now)))
    }

    #[test]
    fn g7_g8_an_ask_not_answered_is_reported_as_counted_at_the_merge_but_the_one_reporting() {
        let a = rules();
        let mut log = PaceLog::new(&a, BOUND);
        let create = ask(&Request::create().with_endpoint("/x"), &a);
        let read = ask(&Request::read().with_endpoint("/y"), &a);
        let c = log.send(&create, 1, Duration::ZERO);
        let r = log.send(&read, 1, Duration::ZERO);
        assert!(
            log.due(Duration::ZERO, Some(r)),
            "the create is not answered"
        );
        let zeros = |n| vec!["0".to_owned(); n];
        // Reported for the read: the create counts now (1 in the spacing, top 0 in a ring).
        let mut want = vec!["1".to_owned(), "1".to_owned(), "2".to_owned()];
        want.extend(["1", "''", "0"].map(String::from));
        want.extend(zeros(10));
        want.push("1".into());
        want.extend(["1", "'/x'", "0"].map(String::from));
        want.extend(zeros(10));
        want.push(create.points.to_string());
        // And it may be a call in flight.
        want.push("1".into());
        assert_eq!(pending_report(&log, &a, Some(r), 0), want);
        // Reported for the create: the read counts in the points rule only, on its endpoint.
        let mut want = vec![
            "1".to_owned(),
            "0".to_owned(),
            "2".to_owned(),
            "0".to_owned(),
        ];
        want.extend(["1", "'/y'", "0"].map(String::from));
        want.extend(zeros(10));
        want.push("1".into());
        want.push("1".into());
        assert_eq!(pending_report(&log, &a, Some(c), 0), want);
        // Answered, the create is a logged grant at its server time; the read, refused,
        // counts nowhere.
        log.settle(&a, c, Some(1_234), Duration::ZERO);
        log.settle(&a, r, None, Duration::ZERO);
        // Its call is in flight until observed or released.
        let mut logged = PaceLog::new(&a, BOUND);
        logged.record(&a, &create, 1, 1_234, Duration::ZERO);
        let mut flying = pending_report(&logged, &a, None, 0);
        *flying.last_mut().expect("calls in flight") = "1".into();
        assert_eq!(pending_report(&log, &a, None, 0), flying);
        log.landed(c);
        assert_eq!(
            pending_report(&log, &a, None, 0),
            pending_report(&logged, &a, None, 0)
        );
    }

    /// A call granted under the rules is reported as in flight until it is observed or
    /// released, or the call bound has passed (the script counts it no longer): after a data
    /// loss, the concurrency cap counts it.
    #[test]
    fn g7_g8_a_granted_call_is_reported_in_flight_until_it_lands_or_the_call_bound() {
        let a = rules();
        let mut log = PaceLog::new(&a, BOUND);
        let read = ask(&Request::read().with_endpoint("/y"), &a);
        let first = log.send(&read, 1, Duration::ZERO);
        log.settle(&a, first, Some(1_000), Duration::ZERO);
        let second = log.send(&read, 1, Duration::from_secs(1));
        log.settle(&a, second, Some(2_000), Duration::from_secs(1));
        let in_flight = |log: &PaceLog, at: Duration| {
            let r = unpack(&log.report(&a, None, at));
            r.last().expect("calls in flight").clone()
        };
        assert_eq!(in_flight(&log, Duration::from_secs(1)), "2");
        log.landed(second);
        assert_eq!(in_flight(&log, Duration::from_secs(1)), "1");
        // The first is never settled: counted until its bound, then not.
        assert_eq!(in_flight(&log, BOUND - Duration::from_millis(1)), "1");
        assert!(log.due(BOUND - Duration::from_millis(1), None));
        assert_eq!(in_flight(&log, BOUND), "0");
        // Landing it late (or twice) changes nothing.
        log.landed(first);
        log.landed(first);
        assert_eq!(in_flight(&log, Duration::from_secs(1)), "0");
    }

    #[test]
    fn g7_g8_an_ask_given_up_on_counts_as_long_as_a_grant_made_then_could() {
        let a = rules();
        let mut log = PaceLog::new(&a, BOUND);
        let create = ask(&Request::create().with_endpoint("/x"), &a);
        let c = log.send(&create, 1, Duration::ZERO);
        // Given up at 5 s: the longest rule (1 s + a 100 ms bucket) could count it to 6.1 s.
        log.give_up(&a, c, Duration::from_secs(5));
        assert!(log.due(Duration::from_millis(6_099), None));
        assert_ne!(
            pending_report(&log, &a, None, 6_099),
            pending_report(&PaceLog::new(&a, BOUND), &a, None, 6_099)
        );
        assert!(!log.due(Duration::from_millis(6_100), None));
        assert_eq!(
            pending_report(&log, &a, None, 6_100),
            pending_report(&PaceLog::new(&a, BOUND), &a, None, 6_100)
        );
        // The next ask sent forgets it.
        log.send(&create, 1, Duration::from_millis(6_100));
        assert_eq!(log.pending.len(), 1);
    }
}
