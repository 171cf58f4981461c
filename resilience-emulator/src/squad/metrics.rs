//! What a run is judged by: the numbers of the side-by-side table and of `--json`.

use super::bound::LowerBound;
use super::driver::{CallRecord, Records};
use crate::model::{Lockout, LogEntry};
use crate::request::Priority;
use std::time::Duration;

/// How long after a lockout ends its herd is looked for.
pub const HERD_WINDOW: Duration = Duration::from_secs(60);
/// The bucket of the herd measure.
pub const HERD_BUCKET: Duration = Duration::from_millis(100);

/// The measure of one run. Times in seconds.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Metrics {
    /// Requests the emulator received (all attempts).
    pub requests: u64,
    /// Of those, answered with a rate-limit rejection (primary, secondary, scripted).
    pub rate_limited_responses: u64,
    /// Longest time the token was locked out (overlapping lockouts merged).
    pub longest_lockout_s: f64,
    /// Median wait of a P0 call between being wanted and being sent successfully (the
    /// attempt that got through; calls never got through are not in the sample).
    pub p0_wait_p50_s: f64,
    /// 95th percentile of the same (nearest rank).
    pub p0_wait_p95_s: f64,
    /// The longest of the same. The percentiles are per call, and a P0 agent's steps run
    /// one after another: a stall delays the calls of one step only (every later step is
    /// wanted after it), so a 20-minute stall can leave p95 at 0. This row shows it.
    pub p0_wait_max_s: f64,
    /// `lower_bound_s / completion_s` if every task finished, else 0.
    pub goodput_ratio: f64,
    /// See [`lower_bound`](super::bound::lower_bound).
    pub lower_bound_s: f64,
    /// When the last task finished or was abandoned.
    pub completion_s: f64,
    /// Most requests in any 100 ms within 60 s after a lockout ended (the herd).
    pub peak_requests_per_100ms_after_block: u64,
    /// P2 requests let through while a P0 call was waiting (see [`inverted`]).
    pub priority_inversions: u64,
    /// P2 requests that reached the emulator while a P0 call was waiting, including those
    /// admitted before it was wanted (see [`arrivals_during_p0_wait`]).
    pub p2_arrivals_during_p0_wait: u64,
    /// Tasks not finished (abandoned, or cut by the horizon).
    pub unfinished_tasks: u64,
}

/// Computes the metrics of a run from the emulator's log and lockouts and the agents' records.
pub fn measure(
    log: &[LogEntry],
    lockouts: &[Lockout],
    records: &Records,
    bound: &LowerBound,
) -> Metrics {
    let p0_waits: Vec<Duration> = records
        .calls
        .iter()
        .filter(|c| c.priority == Priority::P0 && c.ok)
        .map(|c| c.wait())
        .collect();
    let completion = records
        .tasks
        .iter()
        .map(|t| t.end)
        .max()
        .unwrap_or_default();
    let lower = bound.total();
    Metrics {
        requests: log.len() as u64,
        rate_limited_responses: log.iter().filter(|e| e.outcome.is_rate_limited()).count() as u64,
        longest_lockout_s: merged(lockouts)
            .iter()
            .map(|(s, e)| *e - *s)
            .max()
            .unwrap_or_default()
            .as_secs_f64(),
        p0_wait_p50_s: percentile(&p0_waits, 0.50).as_secs_f64(),
        p0_wait_p95_s: percentile(&p0_waits, 0.95).as_secs_f64(),
        p0_wait_max_s: p0_waits
            .iter()
            .max()
            .copied()
            .unwrap_or_default()
            .as_secs_f64(),
        // Abandoned work has no time to finish: a run that gives up early must not score
        // above one that does the work (the bound is for the whole workload).
        goodput_ratio: if completion.is_zero() || records.tasks.iter().any(|t| !t.finished) {
            0.0
        } else {
            lower.as_secs_f64() / completion.as_secs_f64()
        },
        lower_bound_s: lower.as_secs_f64(),
        completion_s: completion.as_secs_f64(),
        peak_requests_per_100ms_after_block: herd_peak(log, lockouts),
        priority_inversions: inversions(log, records),
        p2_arrivals_during_p0_wait: arrivals_during_p0_wait(log, records),
        unfinished_tasks: records.tasks.iter().filter(|t| !t.finished).count() as u64,
    }
}

/// Nearest-rank percentile; zero for no samples.
pub fn percentile(samples: &[Duration], p: f64) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Lockout intervals with overlaps merged, in order.
pub fn merged(lockouts: &[Lockout]) -> Vec<(Duration, Duration)> {
    let mut spans: Vec<(Duration, Duration)> = lockouts.iter().map(|l| (l.start, l.end)).collect();
    spans.sort_unstable();
    let mut out: Vec<(Duration, Duration)> = Vec::new();
    for (s, e) in spans {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// Most requests in a 100 ms window starting at a request within [`HERD_WINDOW`] after the
/// end of any lockout (both ends included).
pub fn herd_peak(log: &[LogEntry], lockouts: &[Lockout]) -> u64 {
    let times: Vec<Duration> = log.iter().map(|e| e.at).collect();
    let mut peak = 0;
    for (_, end) in merged(lockouts) {
        let from = times.partition_point(|t| *t < end);
        // "Within 60 s after": a window may start at `end + HERD_WINDOW` itself.
        let to = times.partition_point(|t| *t <= end + HERD_WINDOW);
        for i in from..to {
            let n = times[i..].partition_point(|t| *t < times[i] + HERD_BUCKET);
            peak = peak.max(n as u64);
        }
    }
    peak
}

/// P2 requests let through (and served, 2xx/304) at an instant when some P0 call was wanted
/// but not yet sent.
pub fn inversions(log: &[LogEntry], records: &Records) -> u64 {
    inverted(log, records).count() as u64
}

/// Each inversion: a P2 request let through while a P0 call waited, with the first such call.
///
/// A request's instant is when its client's scheduler admitted it ([`LogEntry::admitted`]),
/// or when the emulator handled it if the client did not say. A P2 request admitted before
/// the P0 call was wanted was not put ahead of it: it was already on its way. Across
/// processes such a request can still reach the emulator during the P0 call's wait; those are
/// counted apart, by [`arrivals_during_p0_wait`].
pub fn inverted<'a>(
    log: &'a [LogEntry],
    records: &'a Records,
) -> impl Iterator<Item = (&'a LogEntry, &'a CallRecord)> + 'a {
    during_p0_wait(log, records, |e| e.admitted.unwrap_or(e.at))
}

/// P2 requests served that *reached the emulator* while a P0 call waited, however early they
/// were admitted: the inversions plus the requests already in flight when the P0 call was
/// wanted. Equal to [`inversions`] when admission and arrival coincide (one process).
pub fn arrivals_during_p0_wait(log: &[LogEntry], records: &Records) -> u64 {
    during_p0_wait(log, records, |e| e.at).count() as u64
}

/// The served P2 requests whose instant (`at_of`) falls strictly inside some P0 call's wait.
fn during_p0_wait<'a>(
    log: &'a [LogEntry],
    records: &'a Records,
    at_of: impl Fn(&LogEntry) -> Duration + 'a,
) -> impl Iterator<Item = (&'a LogEntry, &'a CallRecord)> + 'a {
    let waiting: Vec<&CallRecord> = records
        .calls
        .iter()
        .filter(|c| c.priority == Priority::P0 && c.sent > c.wanted)
        .collect();
    log.iter()
        .filter(|e| e.priority == Priority::P2 && !e.outcome.is_rate_limited())
        .filter_map(move |e| {
            let at = at_of(e);
            let call = waiting.iter().find(|c| c.wanted < at && at < c.sent)?;
            Some((e, *call))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{LockoutCause, Outcome};
    use crate::request::Kind;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn entry(at: Duration, priority: Priority, outcome: Outcome) -> LogEntry {
        LogEntry {
            at,
            admitted: None,
            agent: "x".into(),
            priority,
            method: "GET".into(),
            path: "/a".into(),
            kind: Kind::Read,
            status: 200,
            outcome,
            remaining: 1,
            retry_after: None,
        }
    }

    #[test]
    fn percentile_is_nearest_rank() {
        let s: Vec<_> = (1..=20).map(ms).collect();
        assert_eq!(percentile(&s, 0.5), ms(10));
        assert_eq!(percentile(&s, 0.95), ms(19));
        assert_eq!(percentile(&[], 0.95), Duration::ZERO);
    }

    #[test]
    fn g6_herd_peak_counts_the_busiest_100ms_after_a_lockout_ends() {
        let lockouts = [Lockout {
            start: ms(0),
            end: ms(1_000),
            cause: LockoutCause::Scripted,
        }];
        // Four requests within 100 ms right at the end, then a spaced tail.
        let mut log: Vec<_> = [1_000, 1_020, 1_050, 1_099, 1_300, 1_500]
            .into_iter()
            .map(|t| entry(ms(t), Priority::P1, Outcome::Served))
            .collect();
        assert_eq!(herd_peak(&log, &lockouts), 4);
        // Requests before the end, or more than 60 s after it, are not the herd.
        log.insert(0, entry(ms(999), Priority::P1, Outcome::Served));
        log.extend((0..9).map(|_| entry(ms(61_001), Priority::P1, Outcome::Served)));
        assert_eq!(herd_peak(&log, &lockouts), 4);
        assert_eq!(herd_peak(&log, &[]), 0);
    }

    #[test]
    fn squad_herd_window_includes_the_instant_60_s_after_the_block() {
        // The outage's block ends at 540 s and the naive squad's reconciliation tick flushes
        // its given-up steps at 600 s, exactly `HERD_WINDOW` later: "within 60 s after".
        let lockouts = [Lockout {
            start: ms(480_000),
            end: ms(540_000),
            cause: LockoutCause::Scripted,
        }];
        let log: Vec<_> = [558_459, 600_000, 600_000, 600_000, 600_050]
            .into_iter()
            .map(|t| entry(ms(t), Priority::P1, Outcome::Served))
            .collect();
        assert_eq!(herd_peak(&log, &lockouts), 4);
        // A window starting after that instant is not the herd.
        let late: Vec<_> = [600_001, 600_002]
            .into_iter()
            .map(|t| entry(ms(t), Priority::P1, Outcome::Served))
            .collect();
        assert_eq!(herd_peak(&late, &lockouts), 0);
    }

    #[test]
    fn squad_goodput_is_not_earned_by_abandoning_tasks() {
        use crate::squad::driver::TaskRecord;
        let secs = Duration::from_secs;
        let bound = LowerBound {
            path: secs(100),
            points: Duration::ZERO,
            content_minute: Duration::ZERO,
            content_hour: Duration::ZERO,
            primary: Duration::ZERO,
        };
        let task = |finished, end| TaskRecord {
            agent: "a".into(),
            name: "t".into(),
            finished,
            end,
        };
        // A scheduler that gives up after 10 s (a workload with no reconciliation loop).
        let gave_up = Records {
            calls: vec![],
            tasks: vec![task(false, secs(10))],
        };
        let m = measure(&[], &[], &gave_up, &bound);
        assert_eq!(m.unfinished_tasks, 1);
        assert!(m.goodput_ratio <= 1.0, "{m:#?}");
        assert_eq!(m.goodput_ratio, 0.0);
        // Finished work is scored as before.
        let done = Records {
            calls: vec![],
            tasks: vec![task(true, secs(125))],
        };
        assert_eq!(measure(&[], &[], &done, &bound).goodput_ratio, 0.8);
    }

    /// One P0 call, wanted at 100 ms and sent at 500 ms.
    fn picard_waits_from_100_to_500_ms() -> Records {
        Records {
            calls: vec![CallRecord {
                agent: "picard".into(),
                priority: Priority::P0,
                wanted: ms(100),
                sent: ms(500),
                ok: true,
                attempts: 1,
            }],
            tasks: vec![],
        }
    }

    #[test]
    fn inversions_count_p2_served_while_p0_waits() {
        let records = picard_waits_from_100_to_500_ms();
        let log = vec![
            entry(ms(50), Priority::P2, Outcome::Served), // before P0 wanted
            entry(ms(200), Priority::P2, Outcome::Served), // inversion
            entry(ms(300), Priority::P2, Outcome::PenaltyBox), // not served
            entry(ms(300), Priority::P1, Outcome::Served), // not P2
            entry(ms(400), Priority::P2, Outcome::NotModified), // inversion
            entry(ms(500), Priority::P2, Outcome::Served), // P0 sent by then
        ];
        assert_eq!(inversions(&log, &records), 2);
        assert_eq!(arrivals_during_p0_wait(&log, &records), 2);
    }

    #[test]
    fn g7_inversions_date_a_request_by_its_admission_not_its_arrival() {
        let records = picard_waits_from_100_to_500_ms();
        let admitted = |at, by| LogEntry {
            admitted: Some(ms(by)),
            ..entry(ms(at), Priority::P2, Outcome::Served)
        };
        let log = vec![
            admitted(200, 90),  // on its way before P0 was wanted: arrives during the wait
            admitted(300, 250), // let through during the wait: an inversion
            admitted(600, 400), // let through during the wait, arrives after: an inversion
            admitted(450, 500), // admitted the instant P0 was sent: not during the wait
        ];
        let inverted: Vec<_> = inverted(&log, &records).map(|(e, _)| e.at).collect();
        assert_eq!(inverted, vec![ms(300), ms(600)]);
        assert_eq!(inversions(&log, &records), 2);
        // By arrival: the first, second and fourth reached the emulator during the wait.
        assert_eq!(arrivals_during_p0_wait(&log, &records), 3);
    }

    #[test]
    fn overlapping_lockouts_merge() {
        let l = |s, e| Lockout {
            start: ms(s),
            end: ms(e),
            cause: LockoutCause::Scripted,
        };
        assert_eq!(
            merged(&[l(50, 80), l(0, 60), l(100, 120)]),
            vec![(ms(0), ms(80)), (ms(100), ms(120))]
        );
    }
}
