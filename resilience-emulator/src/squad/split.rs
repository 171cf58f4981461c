//! One squad split over several processes that share one quota (G7): which agents each
//! process runs, what part of the secondary-limit budget its own governor may pace to, and a
//! clock every process reads the same.
//!
//! The shared quota (in Redis) covers the primary quota and the G6 block; the secondary
//! limits (points per minute, content creation, concurrency) are paced by each process's own
//! governor, so each gets a share of those budgets proportional to its number of agents, and
//! together they never pace past the real limit.

use super::workload::Workload;
use resilience_core::clock::Clock;
use resilience_core::error::PolicyError;
use resilience_core::governor::ResourceConfig;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The agents of part `k` of `n` (round robin in workload order, so the builders spread
/// evenly); the rest of the workload is kept. `None` if `n` is 0 or `k >= n`.
pub fn part(workload: &Workload, k: usize, n: usize) -> Option<Workload> {
    if n == 0 || k >= n {
        return None;
    }
    let agents = workload
        .agents
        .iter()
        .enumerate()
        .filter(|(i, _)| i % n == k)
        .map(|(_, a)| a.clone())
        .collect();
    Some(Workload {
        agents,
        ..workload.clone()
    })
}

/// `base` cut to `part`'s share of `whole`'s agents ([`ResourceConfig::part`]: every
/// window rule, its P0 headroom and smoothing burst, and the concurrency cap rounded down;
/// spacing gaps stretched), so the processes' governors together stay within the real
/// limits. The share is by agent count, which a deployment knows, not by the workload's
/// demand, which it does not.
///
/// # Errors
///
/// A part so small that a rule would be left nothing (the error names the rule).
pub fn config_for_part(
    whole: &Workload,
    part: &Workload,
    base: ResourceConfig,
) -> Result<ResourceConfig, PolicyError> {
    if whole.agents.is_empty() {
        return Ok(base);
    }
    base.part(part.agents.len() as f64 / whole.agents.len() as f64)
}

/// A [`Clock`] that reads zero at a wall-clock instant every process agrees on, running
/// `factor` times faster than real time after it (and zero before it). Processes on one
/// host read the same system clock, so their emulated times agree to well under a real
/// millisecond; the emulator's clock in the parent is one of these too.
#[derive(Debug, Clone, Copy)]
pub struct AnchoredClock {
    start_unix: Duration,
    factor: f64,
}

impl AnchoredClock {
    /// Zero at `start_unix` (time since the Unix epoch), `factor` times faster than real
    /// time (a factor that is not a positive finite number is taken as 1).
    pub fn new(start_unix: Duration, factor: f64) -> Self {
        let factor = if factor.is_finite() && factor > 0.0 {
            factor
        } else {
            1.0
        };
        Self { start_unix, factor }
    }

    /// The wall-clock instant this clock reads zero at.
    pub fn start_unix(&self) -> Duration {
        self.start_unix
    }

    /// Real time left until the start (zero once it has passed).
    pub fn until_start(&self) -> Duration {
        self.start_unix.saturating_sub(wall())
    }
}

fn wall() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
}

impl Clock for AnchoredClock {
    fn now(&self) -> Duration {
        wall().saturating_sub(self.start_unix).mul_f64(self.factor)
    }

    fn unix_time(&self) -> Duration {
        self.start_unix + self.now()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::squad::incident;
    use resilience_core::governor::ResourceConfig;

    #[test]
    fn g7_parts_cover_every_agent_once() {
        let w = incident(7);
        for n in 1..=4 {
            let mut names: Vec<String> = (0..n)
                .flat_map(|k| part(&w, k, n).expect("k < n").agents)
                .map(|a| a.name)
                .collect();
            names.sort();
            let mut all: Vec<String> = w.agents.iter().map(|a| a.name.clone()).collect();
            all.sort();
            assert_eq!(names, all, "n = {n}");
        }
        assert!(part(&w, 3, 3).is_none() && part(&w, 0, 0).is_none());
    }

    #[test]
    fn g7_g8_part_budgets_add_up_to_no_more_than_the_whole() {
        let (w, n) = (incident(7), 3);
        let base = ResourceConfig::github();
        let parts: Vec<ResourceConfig> = (0..n)
            .map(|k| config_for_part(&w, &part(&w, k, n).expect("k < n"), base.clone()).unwrap())
            .collect();
        for (i, rule) in base.pacing.windows.iter().enumerate() {
            let sum: u32 = parts.iter().map(|c| c.pacing.windows[i].limit).sum();
            // Rounded down: the parts never add up to more than the rule.
            assert!(sum <= rule.limit, "{}: {sum}", rule.name);
            // Shares add up to one and each floor loses less than a unit.
            assert!(sum + n as u32 >= rule.limit, "{}: {sum}", rule.name);
            for c in &parts {
                let r = &c.pacing.windows[i];
                assert!(r.p0_headroom < r.limit, "{}", r.name);
            }
        }
        let whole = config_for_part(&w, &w, base.clone()).unwrap();
        assert_eq!(
            whole.pacing.windows, base.pacing.windows,
            "one part is the whole"
        );
    }

    #[test]
    fn g7_anchored_clock_reads_zero_before_its_start() {
        let later = wall() + Duration::from_secs(3_600);
        let c = AnchoredClock::new(later, 30.0);
        assert_eq!(c.now(), Duration::ZERO);
        assert!(c.until_start() > Duration::from_secs(3_500));
        let past = AnchoredClock::new(wall().saturating_sub(Duration::from_secs(2)), 30.0);
        assert!(past.now() >= Duration::from_secs(60), "2 s real x30");
        assert!(past.unix_time() >= past.start_unix() + Duration::from_secs(60));
    }
}
