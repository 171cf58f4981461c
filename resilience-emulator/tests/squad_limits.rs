//! An independent recount of DESIGN §6 over the governed squad's request log: its zero
//! rate-limited responses must not rest on a lenient emulator.

use resilience_emulator::server::Latency;
use resilience_emulator::squad::{self, Governed, Scenario};
use resilience_emulator::{Kind, Limits, LogEntry, Outcome};
use std::collections::BTreeMap;
use std::time::Duration;

fn governed(scenario: Scenario, seed: u64) -> Vec<LogEntry> {
    let w = scenario.workload(seed);
    squad::run_virtual(&w, &Limits::github(), seed, |env| {
        Ok(Governed::github(env, &w)?)
    })
    .expect("runs")
    .log
}

/// Most of `amount` in any window `(t - window, t]`, over every request (served or not).
fn peak_in_window(events: &[(Duration, u64)], window: Duration) -> u64 {
    let mut peak = 0;
    for (i, &(t, _)) in events.iter().enumerate() {
        let sum: u64 = events[..=i]
            .iter()
            .filter(|(s, _)| *s + window > t)
            .map(|(_, n)| n)
            .sum();
        peak = peak.max(sum);
    }
    peak
}

#[test]
fn squad_governed_log_keeps_every_section_6_limit_by_an_independent_count() {
    let minute = Duration::from_secs(60);
    let lat = Latency::default();
    for scenario in Scenario::ALL {
        for seed in [7, 1, 2026] {
            let log = governed(scenario, seed);
            let at = format!("{scenario} seed {seed}");
            // ≤ 100 in flight: every request counts from arrival for its latency.
            let conc = log
                .iter()
                .map(|e| {
                    log.iter()
                        .filter(|o| o.at <= e.at && e.at < o.at + lat.of(o.kind))
                        .count()
                })
                .max()
                .unwrap_or(0);
            assert!(conc <= 100, "{at}: {conc} in flight");
            // 900 points a minute per endpoint (GET 1, writes 5).
            let mut per_endpoint: BTreeMap<String, Vec<(Duration, u64)>> = BTreeMap::new();
            for e in &log {
                let p = if e.kind == Kind::Read { 1 } else { 5 };
                per_endpoint
                    .entry(squad::endpoint(&e.path))
                    .or_default()
                    .push((e.at, p));
            }
            for (endpoint, events) in &per_endpoint {
                let peak = peak_in_window(events, minute);
                assert!(peak <= 900, "{at}: {endpoint} {peak} points in a minute");
            }
            // 80 content-creating requests a minute, 500 an hour.
            let content: Vec<_> = log
                .iter()
                .filter(|e| e.kind == Kind::ContentCreating)
                .map(|e| (e.at, 1))
                .collect();
            assert!(peak_in_window(&content, minute) <= 80, "{at}");
            assert!(peak_in_window(&content, 60 * minute) <= 500, "{at}");
            // Primary: 5 000 an hour, a 304 free.
            let charged: Vec<_> = log
                .iter()
                .filter(|e| e.outcome != Outcome::NotModified)
                .map(|e| (e.at, 1))
                .collect();
            assert!(peak_in_window(&charged, 60 * minute) <= 5_000, "{at}");
            // Every rejection is accounted for: only the outage's scripted block.
            for e in log.iter().filter(|e| e.outcome.is_rate_limited()) {
                assert_eq!(e.outcome, Outcome::Scripted, "{at}: {e:?}");
            }
        }
    }
}
