//! DESIGN §7's "P0 wait p50/p95" against a P0 agent that was stalled.

use resilience_emulator::squad::{self, Naive, Scenario};
use resilience_emulator::{Limits, Priority};

/// The percentiles are taken per P0 *call*. Picard's steps run one after another, so a
/// stall delays only the calls of one step (10 of his ~700) and every later step is
/// "wanted" after it: p95 cannot move unless over 5 % of his calls wait. In the naive
/// incident (seed 7) one step waited 1 179.7 s (Picard's review of PR #101 went from ~120 s
/// solo to 1 300 s) while p50 = p95 = 0.0 s, the same as the governed side. The table's
/// "P0 wait max" row shows the stall.
#[test]
fn squad_p0_wait_max_sees_a_p0_agent_stalled_for_twenty_minutes() {
    let w = Scenario::Incident.workload(7);
    let run = squad::run_virtual(&w, &Limits::github(), 7, |env| {
        Ok(Naive::new(env.clock.clone()))
    })
    .expect("runs");
    let longest = run
        .records
        .calls
        .iter()
        .filter(|c| c.priority == Priority::P0 && c.ok)
        .map(|c| c.wait().as_secs_f64())
        .fold(0.0, f64::max);
    assert!(longest > 1_000.0, "Picard was stalled: {longest} s");
    let m = run.metrics;
    assert_eq!(m.p0_wait_max_s, longest, "{m:?}");
    assert!(
        m.p0_wait_p95_s < 1.0,
        "per call, the stall stays below p95: {m:?}"
    );
    let table = squad::report::table(&m, &m);
    assert!(table.contains("P0 wait max"), "{table}");
}
