//! R12 + G6: the retry executor's Retry-After path feeds the governor, so callers wait for the
//! one shared block in priority order instead of each sleeping out the same hint.

mod support;

use resilience_core::backoff::{Backoff, BackoffStrategy};
use resilience_core::clock::ManualClock;
use resilience_core::governor::{
    AgentId, Decision, Governor, Priority, Request, ResourceConfig, ResourceId, RetryAfterLink,
    WaitReason,
};
use resilience_core::retry::{ErrorClass, RetryAfterSink, RetryPolicy, ServiceGuard};
use resilience_core::sleep::ManualSleeper;
use std::cell::Cell;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::{op_err, TestError};

/// A governor on a manual clock with a fixed seed.
fn governor() -> (ManualClock, Arc<Governor>) {
    let clock = ManualClock::new();
    let gov = Governor::builder()
        .clock(clock.clone())
        .seed(7)
        .build()
        .unwrap();
    (clock, Arc::new(gov))
}

fn no_backoff() -> RetryPolicy {
    let b = Backoff::from_secs(BackoffStrategy::None, 0.0, 0.0, false).unwrap();
    RetryPolicy::new(3, b, Duration::from_secs(300)).unwrap()
}

fn rate_limited_once(calls: &Cell<u32>) -> Result<(), TestError> {
    calls.set(calls.get() + 1);
    if calls.get() == 1 {
        Err(op_err("429 retry-after: 30"))
    } else {
        Ok(())
    }
}

/// Forwards to the real link, then records what P0 is told while the block is in force.
#[derive(Debug)]
struct ProbeP0 {
    link: RetryAfterLink,
    gov: Arc<Governor>,
    core: ResourceId,
    picard: AgentId,
    p0_wait: Mutex<Option<(WaitReason, Duration)>>,
}

impl RetryAfterSink for ProbeP0 {
    fn retry_after(&self, service: &str, hint: Duration) -> Duration {
        let wait = self.link.retry_after(service, hint);
        if let Decision::Wait(w) = self.gov.decide(self.picard, self.core, &Request::read()) {
            *self.p0_wait.lock().unwrap() = Some((w.reason, w.delay));
            self.gov.cancel(&w.ticket);
        }
        wait
    }
}

#[test]
fn r12_g6_retry_after_becomes_the_governors_shared_block_and_waits_by_priority() {
    let (clock, gov) = governor();
    let mut cfg = ResourceConfig::default();
    cfg.pacing.even_spend = false;
    let core = gov.add_resource("core", cfg).unwrap();
    let ralph = gov.register("ralph", Priority::P2).unwrap();
    let picard = gov.register("picard", Priority::P0).unwrap();

    let probe = Arc::new(ProbeP0 {
        link: RetryAfterLink::new(gov.clone(), core, ralph),
        gov: gov.clone(),
        core,
        picard,
        p0_wait: Mutex::new(None),
    });
    let sleeper = ManualSleeper::new(clock.clone());
    let guard = ServiceGuard::builder("github")
        .policy(no_backoff())
        .clock(Arc::new(clock.clone()))
        .sleeper(Arc::new(sleeper.clone()))
        .retry_after_sink(probe.clone())
        .build();

    // Ralph (P2) sees the 429.
    let calls = Cell::new(0);
    let out = guard
        .call("poll_issues")
        .idempotent()
        .classify(|_: &TestError| ErrorClass::RetryAfter(Duration::from_secs(30)))
        .run(|| rate_limited_once(&calls));
    assert_eq!(out, Ok(()));
    let ralph_waited = sleeper.delays()[0];
    // P2 comes back in its window after the 30 s block: [3.5 s, 9.5 s) late.
    assert!(
        ralph_waited >= Duration::from_millis(33_500)
            && ralph_waited < Duration::from_millis(39_500),
        "P2 waited {ralph_waited:?}"
    );
    // The block is shared: Picard (P0), who never saw the 429, is held by the same block,
    // and released first: within [0, 0.5 s) of its end.
    let (reason, p0_wait) = probe
        .p0_wait
        .lock()
        .unwrap()
        .take()
        .expect("P0 was told to wait");
    assert_eq!(reason, WaitReason::Blocked);
    assert!(
        p0_wait >= Duration::from_secs(30) && p0_wait < Duration::from_millis(30_500),
        "P0 waits {p0_wait:?}"
    );
    assert!(p0_wait < ralph_waited);
}

#[test]
fn r12_without_a_sink_the_hint_itself_is_the_wait() {
    let clock = ManualClock::new();
    let sleeper = ManualSleeper::new(clock.clone());
    let guard = ServiceGuard::builder("github")
        .policy(no_backoff())
        .clock(Arc::new(clock))
        .sleeper(Arc::new(sleeper.clone()))
        .build();
    let calls = Cell::new(0);
    let out = guard
        .call("poll_issues")
        .idempotent()
        .classify(|_: &TestError| ErrorClass::RetryAfter(Duration::from_secs(30)))
        .run(|| rate_limited_once(&calls));
    assert_eq!(out, Ok(()));
    assert_eq!(sleeper.delays(), vec![Duration::from_secs(30)]);
}

/// Linked callers retry on their own, so the governor spaces their release times: 20 P0
/// callers told to come back after one block never bunch more than 2 per 100 ms (the 50 ms
/// release spacing), and each stays at or after its own draw in P0's window.
#[test]
fn g6_r12_linked_callers_come_back_paced_not_only_jittered() {
    let (_clock, gov) = governor();
    let core = gov.add_resource("core", ResourceConfig::default()).unwrap();
    let mut delays: Vec<Duration> = (0..20)
        .map(|i| {
            let a = gov.register(&format!("p0-{i}"), Priority::P0).unwrap();
            RetryAfterLink::new(gov.clone(), core, a).retry_after("github", Duration::from_secs(30))
        })
        .collect();
    assert!(delays.iter().all(|&d| d >= Duration::from_secs(30)));
    delays.sort();
    let worst = delays
        .iter()
        .map(|&d| {
            delays
                .iter()
                .filter(|&&e| e >= d && e < d + Duration::from_millis(100))
                .count()
        })
        .max()
        .unwrap();
    assert!(worst <= 2, "{worst} callers within 100 ms: {delays:?}");
    // Spaced, not serialised past reason: 20 callers 50 ms apart fit in about a second.
    assert!(delays[19] < Duration::from_millis(31_500), "{delays:?}");
}
