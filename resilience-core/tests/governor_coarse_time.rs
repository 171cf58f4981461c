//! The in-process fast path decides on the coarse clock (`Clock::now_coarse`). On a clock
//! whose coarse reading lags (as `CLOCK_MONOTONIC_COARSE` does, by up to a kernel tick), no
//! decision is early, none is late by the lag, and every stamp a later gate relies on is
//! exact or conservative.

mod governor_support;

use governor_support::*;
use resilience_core::clock::{Clock, ManualClock};
use resilience_core::governor::{
    AgentId, Governor, GovernorConfig, Pacing, Priority, RefusalReason, Request, ResourceConfig,
    ResourceId, WaitReason,
};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

const TICK: Duration = Duration::from_millis(4);

/// Precise time is a `ManualClock`'s; the coarse reading is it rounded down to a 4 ms tick.
/// Counts precise reads.
#[derive(Debug, Clone)]
struct TickClock {
    manual: ManualClock,
    precise_reads: Arc<AtomicU64>,
}

impl TickClock {
    fn new() -> Self {
        Self {
            manual: ManualClock::new(),
            precise_reads: Arc::default(),
        }
    }
    fn precise_reads(&self) -> u64 {
        self.precise_reads.load(Ordering::Relaxed)
    }
    fn set(&self, t: Duration) {
        self.manual.advance_to(t);
    }
}

impl Clock for TickClock {
    fn now(&self) -> Duration {
        self.precise_reads.fetch_add(1, Ordering::Relaxed);
        self.manual.now()
    }
    fn unix_time(&self) -> Duration {
        self.manual.unix_time()
    }
    fn now_coarse(&self) -> Duration {
        let n = self.manual.now().as_nanos() as u64;
        let tick = TICK.as_nanos() as u64;
        Duration::from_nanos(n - n % tick)
    }
    fn coarse_lag(&self) -> Duration {
        TICK
    }
}

fn rig(cfg: ResourceConfig, gcfg: GovernorConfig) -> (TickClock, Governor, ResourceId) {
    let clock = TickClock::new();
    let gov = Governor::builder()
        .config(gcfg)
        .clock(clock.clone())
        .seed(5)
        .build()
        .unwrap();
    let core = gov.add_resource("core", cfg).unwrap();
    (clock, gov, core)
}

/// Grants `req` and releases it unused: no clock read, no lease renewal, nothing spent.
fn grant_now(gov: &Governor, a: AgentId, core: ResourceId, req: &Request<'_>) {
    gov.release(go(gov.decide(a, core, req)));
}

/// Grants `req` and reports the call made (it counts as spent).
fn spend_now(gov: &Governor, a: AgentId, core: ResourceId, req: &Request<'_>) {
    made_on(gov, go(gov.decide(a, core, req)));
}

#[test]
fn the_fast_path_reads_only_the_coarse_clock_and_release_reads_none() {
    let (clock, gov, core) = rig(ResourceConfig::default(), GovernorConfig::default());
    let a = gov.register("picard", Priority::P1).unwrap();
    clock.set(ms(5_003));
    // The first grant anchors the assumed window: precise.
    grant_now(&gov, a, core, &Request::read());
    let before = clock.precise_reads();
    for _ in 0..10 {
        let g = go(gov.decide(a, core, &Request::read()));
        assert_eq!(g.granted_at(), secs(5), "stamped with the coarse reading");
        gov.release(g);
    }
    assert_eq!(clock.precise_reads(), before);
}

#[test]
fn g6_a_lagging_coarse_reading_neither_opens_a_block_early_nor_waits_for_the_lag() {
    let (clock, gov, core) = rig(light_only(), GovernorConfig::default());
    let a = gov.register("picard", Priority::P0).unwrap();
    let b = gov.register("data", Priority::P0).unwrap();
    clock.set(secs(1));
    grant_now(&gov, a, core, &Request::read());
    gov.note_retry_after(core, secs(10)); // blocked until 11 s
                                          // Just before the end the coarse reading (10.996 s) and the precise one both say
                                          // blocked: a wait decided on the precise clock, in P0's release window.
    clock.set(ms(10_999));
    let w = wait(gov.decide(a, core, &Request::read()));
    assert_eq!(w.reason, WaitReason::Blocked);
    assert!(w.until >= secs(11) && w.until < secs(11) + ms(500), "{w:?}");
    assert_eq!(w.delay, w.until - ms(10_999), "delay from the precise time");
    gov.cancel(&w.ticket);
    // After the block the coarse reading (11 s) still lags; the precise clock decides and
    // grants at once rather than sending the call back for the lag.
    clock.set(ms(11_003));
    let g = go(gov.decide(b, core, &Request::read()));
    assert_eq!(g.granted_at(), ms(11_003));
}

#[test]
fn g8_with_pacing_rules_grants_are_stamped_on_the_precise_clock() {
    let mut cfg = light_only();
    cfg.pacing = Pacing::default().with_write_spacing(S);
    let (clock, gov, core) = rig(cfg, GovernorConfig::default());
    let a = gov.register("picard", Priority::P0).unwrap();
    clock.set(ms(9_503));
    grant_now(&gov, a, core, &Request::read()); // anchors the window; reads are not spaced
    clock.set(ms(10_003)); // coarse: 10.000 s; no sweep due until 10.503 s
    let g = go(gov.decide(a, core, &Request::create()));
    assert_eq!(g.granted_at(), ms(10_003));
    gov.release(g);
    // 0.999 s later: a stamp taken from the coarse reading would allow the next write
    // already; the rule's 1 s gap is kept to the nanosecond.
    clock.set(ms(11_002));
    let w = wait(gov.decide(a, core, &Request::create()));
    assert_eq!(w.until, ms(11_003));
    assert_eq!(w.reason, WaitReason::Rule("write_spacing".into()));
}

#[test]
fn g8_an_assumed_quota_window_is_anchored_on_the_precise_clock() {
    let (clock, gov, core) = rig(ResourceConfig::default(), GovernorConfig::default());
    let a = gov.register("picard", Priority::P1).unwrap();
    let b = gov.register("data", Priority::P1).unwrap();
    clock.set(ms(5_003)); // coarse: 5.000 s
    spend_now(&gov, a, core, &Request::read());
    let snap = gov.snapshot(core).unwrap();
    assert_eq!(snap.reset_in, Some(secs(3600)), "not 3600 s less the lag");
    // The window resets at 3605.003 s exactly: a coarse reading of 3605.000 s is within a
    // lag of it, so the fast path steps aside and the precise clock (3605.002 s) still
    // charges the old window.
    clock.set(ms(3_605_002));
    spend_now(&gov, a, core, &Request::read());
    spend_now(&gov, b, core, &Request::read());
    assert_eq!(gov.snapshot(core).unwrap().remaining, 4997);
    // A refused request rolls the window at 3605.003 s without anchoring the next one; the
    // grant that anchors it, on the fast path's terms, is on the precise clock.
    clock.set(ms(3_605_003));
    let r = refused(gov.decide(a, core, &Request::read().with_cost(10_000)));
    assert_eq!(r.reason, RefusalReason::Exhausted);
    assert_eq!(gov.snapshot(core).unwrap().reset_in, None, "a new window");
    spend_now(&gov, b, core, &Request::read());
    let snap = gov.snapshot(core).unwrap();
    assert_eq!((snap.remaining, snap.reset_in), (4999, Some(secs(3600))));
}

#[test]
fn g5_fast_path_renewals_never_let_a_lease_lapse_early() {
    let (clock, gov, core) = rig(ResourceConfig::default(), GovernorConfig::default());
    let a = gov.register("picard", Priority::P1).unwrap();
    let b = gov.register("data", Priority::P1).unwrap();
    clock.set(ms(99_003));
    grant_now(&gov, a, core, &Request::read()); // anchors the window
    clock.set(ms(100_003)); // coarse: 100.000 s
    grant_now(&gov, b, core, &Request::read()); // runs the sweep, on the precise clock
    let before = clock.precise_reads();
    grant_now(&gov, a, core, &Request::read()); // fast path: renews a's lease
    assert_eq!(
        clock.precise_reads(),
        before,
        "a's grant took the fast path"
    );
    // 119.999 s of true silence later, a's lease (2 min) must still be live. Stamped with
    // the coarse reading it would have been renewed at 100.000 s and lapse now.
    clock.set(ms(220_002));
    grant_now(&gov, b, core, &Request::read());
    assert_eq!(gov.snapshot(core).unwrap().live_agents, 2);
    // Past the lease and the next sweep it lapses.
    clock.set(ms(221_500));
    grant_now(&gov, b, core, &Request::read());
    assert_eq!(gov.snapshot(core).unwrap().live_agents, 1);
}

#[test]
fn the_default_pair_in_process_store_and_real_clock_decides_and_releases() {
    // `Governor::default()` and an explicit `MonotonicClock` take the statically dispatched
    // path; the answers are the same as through the trait objects.
    for gov in [
        Governor::default(),
        Governor::builder()
            .clock(resilience_core::clock::MonotonicClock::new())
            .build()
            .unwrap(),
    ] {
        let core = gov.add_resource("core", ResourceConfig::default()).unwrap();
        let a = gov.register("picard", Priority::P1).unwrap();
        let grants: Vec<_> = (0..3)
            .map(|_| go(gov.decide(a, core, &Request::read())))
            .collect();
        let snap = gov.snapshot(core).unwrap();
        assert_eq!((snap.in_flight, snap.remaining), (3, 4997));
        for g in grants {
            assert!(g.granted_at() <= gov.clock().now());
            gov.release(g);
        }
        assert_eq!(gov.snapshot(core).unwrap().in_flight, 0);
    }
}
