//! The squad targets are reachable: a plain pacing scheduler written here (sliding windows
//! for points per endpoint and content creation, one shared block after a rejection), with
//! no priorities at all, already finishes the incident workload near its lower bound with
//! only the scripted rejection. So the workload and the lower bound ask nothing impossible of
//! the rate governor (G8 goodput target).

use parking_lot::Mutex;
use resilience_core::clock::Clock;
use resilience_core::sleep::AsyncSleeper;
use resilience_emulator::squad::{self, CallInfo, Refusal, Scheduler};
use resilience_emulator::{Kind, Limits, Response};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

#[derive(Default)]
struct Window(VecDeque<(Duration, u32)>);

impl Window {
    /// Earliest instant ≥ now at which `amount` more fits under `limit` per `len`.
    fn earliest(&mut self, now: Duration, amount: u32, limit: u32, len: Duration) -> Duration {
        while self.0.front().is_some_and(|(t, _)| *t + len <= now) {
            self.0.pop_front();
        }
        let mut used: u32 = self.0.iter().map(|(_, a)| a).sum();
        let mut at = now;
        for (t, a) in &self.0 {
            if used + amount <= limit {
                break;
            }
            used -= a;
            at = *t + len;
        }
        at
    }
}

struct State {
    block_until: Duration,
    points: BTreeMap<String, Window>,
    content: Window,
}

struct Paced {
    clock: Arc<dyn Clock>,
    sleeper: Arc<dyn AsyncSleeper>,
    state: Mutex<State>,
}

const MARGIN: Duration = Duration::from_millis(500);
const MINUTE: Duration = Duration::from_secs(60);

fn template(path: &str) -> String {
    path.split('/')
        .map(|s| {
            if s.len() >= 7 || s.bytes().all(|b| b.is_ascii_digit()) {
                "{id}"
            } else {
                s
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

impl Scheduler for Paced {
    type Permit = ();

    async fn acquire(&self, call: CallInfo<'_>) -> Result<(), Refusal> {
        loop {
            let now = self.clock.now();
            let at = {
                let mut s = self.state.lock();
                let points = if call.kind.is_write() { 5 } else { 1 };
                let mut at = s.block_until.max(now);
                let w = s.points.entry(template(call.path)).or_default();
                at = at.max(w.earliest(now, points, 900, MINUTE + MARGIN));
                if call.kind == Kind::ContentCreating {
                    at = at.max(s.content.earliest(now, 1, 80, MINUTE + MARGIN));
                }
                if at <= now {
                    s.points
                        .entry(template(call.path))
                        .or_default()
                        .0
                        .push_back((now, points));
                    if call.kind == Kind::ContentCreating {
                        s.content.0.push_back((now, 1));
                    }
                    return Ok(());
                }
                at
            };
            self.sleeper.sleep(at - now).await;
        }
    }

    fn complete(&self, _: (), _: CallInfo<'_>, response: &Response) {
        if response.is_rate_limited() {
            let wait = response
                .header_u64("retry-after")
                .map_or(MINUTE, Duration::from_secs);
            let mut s = self.state.lock();
            s.block_until = s.block_until.max(self.clock.now() + wait);
        }
    }

    fn retry_delay(&self, _: CallInfo<'_>, attempt: u32, _: &Response) -> Option<Duration> {
        (attempt < 20).then_some(Duration::ZERO)
    }
}

#[test]
fn g8_a_plain_pacer_reaches_the_goodput_target_on_the_incident() {
    for seed in [7, 1, 2026] {
        let w = squad::incident(seed);
        let run = squad::run_virtual(&w, &Limits::github(), seed, |env| {
            Ok(Paced {
                clock: env.clock.clone(),
                sleeper: env.sleeper.clone(),
                state: Mutex::new(State {
                    block_until: Duration::ZERO,
                    points: BTreeMap::new(),
                    content: Window::default(),
                }),
            })
        })
        .unwrap();
        let m = run.metrics;
        eprintln!("seed {seed}: {m:?}");
        assert!(m.rate_limited_responses <= 1, "seed {seed}: {m:#?}");
        assert_eq!(m.unfinished_tasks, 0, "seed {seed}: {m:#?}");
        assert!(m.goodput_ratio >= 0.95, "seed {seed}: {m:#?}");
    }
}
