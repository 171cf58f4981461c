//! The shortest time any scheduler could finish a workload under the emulator's limits.
//!
//! `lower_bound = max(path, points, content_minute, content_hour, primary)`, each term a time
//! before which the workload cannot be done, whoever schedules it:
//!
//! - `path`: the longest agent's solo replay. An agent's steps are sequential, each thinks for
//!   its `think` then makes its calls at once, which take the slowest call's latency (or, over
//!   `max_concurrency` calls, the `ceil(calls / max_concurrency)` shortest latencies one after
//!   another, if longer); a task waits for its `not_before`; a call wanted inside
//!   a scripted block can only be answered after the block. No contention, no waits: no
//!   scheduler can make an agent faster than this.
//! - `points`: per endpoint `e` with `P_e` points, at most `points_per_window` fit in any
//!   window, so the last call of `e` is sent no earlier than
//!   `points_window × (ceil(P_e / points_per_window) − 1)` and answered a read latency later.
//! - `content_minute`, `content_hour`: the same with `C` content-creating calls against 80 per
//!   minute and 500 per hour (plus the content latency).
//! - `primary`: the same with the `R` calls that must spend quota (conditional polls may be
//!   free) against the hourly budget.
//!
//! Each term is a necessary condition, so their maximum is a true lower bound; it ignores how
//! the terms interact, so it can be beaten by no scheduler but reached only approximately.
//! `goodput_ratio = lower_bound / completion` is then at most 1.
//!
//! On the squad's workload the bound is reachable, so a goodput target near 1 asks nothing
//! impossible: a plain pacer with no priorities at all (sliding windows for points per
//! endpoint and content creation, one shared block after a rejection) finished the incident
//! at goodput 0.967–0.969 with no rejection (seeds 7, 1, 2026), and the governed squad finishes
//! within 0.1 s of the bound. (That pacer was a test while the governor was being built; the
//! governed squad's own goodput test now fails first if the bound ever became unreachable.)

use super::workload::Workload;
use crate::limits::Limits;
use crate::request::Kind;
use std::collections::BTreeMap;
use std::time::Duration;

/// The terms of the lower bound and their maximum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct LowerBound {
    /// The longest solo agent path.
    pub path: Duration,
    /// The busiest endpoint's points.
    pub points: Duration,
    /// Content creation per minute.
    pub content_minute: Duration,
    /// Content creation per hour.
    pub content_hour: Duration,
    /// Primary quota.
    pub primary: Duration,
}

impl LowerBound {
    /// The bound: the largest term.
    pub fn total(&self) -> Duration {
        self.path
            .max(self.points)
            .max(self.content_minute)
            .max(self.content_hour)
            .max(self.primary)
    }
}

/// Computes the lower bound of `workload` under `limits`.
pub fn lower_bound(workload: &Workload, limits: &Limits) -> LowerBound {
    let lat = workload.latency;
    let mut path = Duration::ZERO;
    for agent in &workload.agents {
        let mut t = Duration::ZERO;
        for task in &agent.tasks {
            t = t.max(task.not_before);
            for step in &task.steps {
                t += step.think;
                if step.calls.is_empty() {
                    continue;
                }
                let send = after_blocks(t, &workload.scripted_blocks);
                t = send + step_time(step, lat, limits.max_concurrency);
            }
        }
        path = path.max(t);
    }

    let mut points: BTreeMap<String, u64> = BTreeMap::new();
    let (mut content, mut charged) = (0u64, 0u64);
    for call in workload.calls() {
        let p = if call.kind.is_write() {
            limits.write_points
        } else {
            limits.read_points
        };
        *points.entry(super::template(&call.path)).or_default() += u64::from(p);
        content += u64::from(call.kind == Kind::ContentCreating);
        charged += u64::from(!(call.conditional && limits.conditional_requests_free));
    }
    let busiest = points.values().copied().max().unwrap_or(0);
    LowerBound {
        path,
        points: windows_needed(
            busiest,
            limits.points_per_window,
            limits.points_window,
            lat.read,
        ),
        content_minute: windows_needed(
            content,
            limits.content_per_minute,
            Duration::from_secs(60),
            lat.content,
        ),
        content_hour: windows_needed(
            content,
            limits.content_per_hour,
            Duration::from_secs(3_600),
            lat.content,
        ),
        primary: windows_needed(
            charged,
            limits.primary_limit,
            limits.primary_window,
            lat.read,
        ),
    }
}

/// The least time a step's calls can take with at most `max_concurrency` in flight: the
/// slowest call's latency, and, since some slot of the `max_concurrency` carries at least
/// `k = ceil(calls / max_concurrency)` calls one after another, the sum of the `k` shortest
/// latencies. (The slowest latency times `k` is not a bound when latencies differ: one slow
/// call beside 100 fast ones overlaps the fast second round.)
fn step_time(
    step: &super::workload::Step,
    lat: crate::server::Latency,
    max_concurrency: u32,
) -> Duration {
    let mut lats: Vec<Duration> = step.calls.iter().map(|c| lat.of(c.kind)).collect();
    lats.sort_unstable();
    let slowest = lats.last().copied().unwrap_or_default();
    let k = lats.len().div_ceil(max_concurrency.max(1) as usize);
    let one_slot: Duration = lats.iter().take(k).sum();
    slowest.max(one_slot)
}

/// Earliest answer to `amount` units at `per_window` per `window`: the last unit is sent no
/// earlier than `(ceil(amount / per_window) − 1)` windows in, then takes `latency`.
fn windows_needed(amount: u64, per_window: u32, window: Duration, latency: Duration) -> Duration {
    if amount == 0 {
        return Duration::ZERO;
    }
    if per_window == 0 {
        return Duration::MAX;
    }
    let full = amount.div_ceil(u64::from(per_window)) - 1;
    window.saturating_mul(u32::try_from(full).unwrap_or(u32::MAX)) + latency
}

/// `t`, moved past any scripted block containing it.
fn after_blocks(mut t: Duration, blocks: &[(Duration, Duration)]) -> Duration {
    loop {
        let inside = blocks.iter().find(|(s, len)| *s <= t && t < *s + *len);
        match inside {
            Some((s, len)) => t = *s + *len,
            None => return t,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::Latency;
    use crate::squad::workload::{AgentScript, Call, Step, Task};
    use crate::Priority;

    fn workload(calls: Vec<Call>, think: u64) -> Workload {
        Workload {
            agents: vec![AgentScript {
                name: "a".into(),
                priority: Priority::P1,
                tasks: vec![Task {
                    name: "t".into(),
                    not_before: Duration::ZERO,
                    steps: vec![Step {
                        think: Duration::from_secs(think),
                        calls,
                    }],
                }],
            }],
            latency: Latency::default(),
            scripted_blocks: vec![],
            horizon: Duration::from_secs(10_000),
            reconcile_every: None,
        }
    }

    #[test]
    fn points_term_counts_full_windows_before_the_last_call() {
        // 1 801 reads of one endpoint: two full windows of 900, the last read in the third.
        let calls = (0..1_801)
            .map(|i| Call::get(format!("/r/a/b/issues/{i}")))
            .collect();
        let lb = lower_bound(&workload(calls, 0), &Limits::github());
        assert_eq!(lb.points, Duration::from_millis(120_200));
        // Path: 19 rounds of 100 concurrent reads at 200 ms.
        assert_eq!(lb.path, Duration::from_millis(19 * 200));
        assert_eq!(lb.total(), lb.points);
    }

    #[test]
    fn a_scripted_block_delays_a_solo_path() {
        let mut w = workload(vec![Call::get("/a")], 10);
        w.scripted_blocks = vec![(Duration::from_secs(5), Duration::from_secs(60))];
        assert_eq!(
            lower_bound(&w, &Limits::github()).path,
            Duration::from_millis(65_200)
        );
    }

    #[test]
    fn content_terms_use_80_per_minute_and_500_per_hour() {
        let calls = (0..501)
            .map(|_| Call::new("POST", "/r/a/b/pulls", Kind::ContentCreating))
            .collect();
        let lb = lower_bound(&workload(calls, 0), &Limits::github());
        assert_eq!(lb.content_minute, Duration::from_millis(6 * 60_000 + 800));
        assert_eq!(lb.content_hour, Duration::from_millis(3_600_800));
    }
}
