//! The lower bound against schedulers built for the purpose: no scheduler may beat it
//! (DESIGN §7: goodput is a share of the quota's physical limit, so at most 1).

use resilience_emulator::squad::Call;
use resilience_emulator::squad::{
    self, AgentScript, CallInfo, Refusal, Scheduler, Step, Task, Workload,
};
use resilience_emulator::{Kind, Limits, Priority, Response};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Lets at most `max_concurrency` calls be in flight, in the order they ask; never retries.
struct Capped(Arc<Semaphore>);

impl Scheduler for Capped {
    type Permit = OwnedSemaphorePermit;

    async fn acquire(&self, _call: CallInfo<'_>) -> Result<OwnedSemaphorePermit, Refusal> {
        self.0
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| Refusal::GiveUp)
    }

    fn complete(&self, permit: OwnedSemaphorePermit, _call: CallInfo<'_>, _response: &Response) {
        drop(permit);
    }

    fn retry_delay(
        &self,
        _call: CallInfo<'_>,
        _attempt: u32,
        _response: &Response,
    ) -> Option<Duration> {
        None
    }
}

fn one_step(calls: Vec<Call>) -> Workload {
    Workload {
        agents: vec![AgentScript {
            name: "a".into(),
            priority: Priority::P1,
            tasks: vec![Task {
                name: "t".into(),
                not_before: Duration::ZERO,
                steps: vec![Step {
                    think: Duration::ZERO,
                    calls,
                }],
            }],
        }],
        latency: Default::default(),
        scripted_blocks: vec![],
        horizon: Duration::from_secs(3_600),
        reconcile_every: None,
    }
}

#[test]
fn squad_lower_bound_is_not_beaten_by_a_step_of_mixed_latencies_over_the_concurrency_cap() {
    // One content-creating call (800 ms) and 100 reads (200 ms): 101 calls, 100 at a time.
    // Sending the slow call first, the 101st read goes when the first read is answered and
    // the step is done at 800 ms; "slowest latency x rounds" claimed 1 600 ms.
    let mut calls = vec![Call::new("POST", "/repos/a/b/pulls", Kind::ContentCreating)];
    calls.extend((0..100).map(|i| Call::get(format!("/repos/a/b/issues/{i}"))));
    let w = one_step(calls);
    let limits = Limits::github();
    let run = squad::run_virtual(&w, &limits, 1, |_| {
        Ok(Capped(Arc::new(Semaphore::new(
            limits.max_concurrency as usize,
        ))))
    })
    .expect("runs");
    let m = run.metrics;
    assert_eq!(m.rate_limited_responses, 0, "{m:#?}");
    assert_eq!(m.unfinished_tasks, 0, "{m:#?}");
    assert_eq!(m.completion_s, 0.8, "{m:#?}");
    assert!(
        m.lower_bound_s <= m.completion_s,
        "the bound was beaten: {m:#?}"
    );
    assert!(m.goodput_ratio <= 1.0, "{m:#?}");
}
