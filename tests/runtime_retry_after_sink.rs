//! R12 + G6 through the attribute: a sink given to the runtime
//! ([`RuntimeBuilder::retry_after_sink`](resilience::RuntimeBuilder::retry_after_sink)) hears
//! every Retry-After an annotated fn of its service is told (its `classify = …` says which
//! errors carry one) and decides the wait before the next attempt; the governor's
//! [`RetryAfterLink`] as that sink turns the hint into the resource's shared block.
//!
//! Its own test binary: it installs the process-wide runtime, on a manual clock and sleeper
//! (no real sleeps). The tests take turns, as they read the one sleeper's record.

mod config_support;
mod macro_support;

use macro_support::GhError;
use resilience::clock::ManualClock;
use resilience::governor::{
    Decision, Governor, Priority, Request, ResourceConfig, ResourceId, RetryAfterLink, WaitReason,
};
use resilience::retry::{ByHint, RetryAfterSink};
use resilience::sleep::ManualSleeper;
use resilience::{retry_service_operation, service_defaults, Runtime};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

/// Records what it is told and answers a fixed wait.
#[derive(Debug)]
struct RecordingSink {
    heard: Mutex<Vec<(String, Duration)>>,
    answer: Duration,
}

impl RetryAfterSink for RecordingSink {
    fn retry_after(&self, service: &str, hint: Duration) -> Duration {
        self.heard.lock().unwrap().push((service.to_owned(), hint));
        self.answer
    }
}

struct World {
    sleeper: ManualSleeper,
    sink: Arc<RecordingSink>,
    write_sink: Arc<RecordingSink>,
    reload_sink: Arc<RecordingSink>,
    backoff_sink: Arc<RecordingSink>,
    future_sink: Arc<RecordingSink>,
    governor: Arc<Governor>,
    core: ResourceId,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let clock = ManualClock::new();
        let sleeper = ManualSleeper::new(clock.clone());
        let sink = Arc::new(RecordingSink {
            heard: Mutex::default(),
            answer: Duration::from_secs(2),
        });
        let write_sink = Arc::new(RecordingSink {
            heard: Mutex::default(),
            answer: Duration::from_secs(2),
        });
        let reload_sink = Arc::new(RecordingSink {
            heard: Mutex::default(),
            answer: Duration::from_secs(3),
        });
        let backoff_sink = Arc::new(RecordingSink {
            heard: Mutex::default(),
            answer: Duration::from_secs(2),
        });
        let future_sink = Arc::new(RecordingSink {
            heard: Mutex::default(),
            answer: Duration::from_secs(2),
        });
        let governor = Arc::new(
            Governor::builder()
                .clock(clock.clone())
                .seed(7)
                .build()
                .expect("the default governor config is valid"),
        );
        let core = governor
            .add_resource("core", ResourceConfig::github())
            .expect("a new resource");
        let planner = governor
            .register("planner", Priority::P1)
            .expect("a new agent");
        let runtime = Runtime::builder(config_support::config(&[]))
            .clock(Arc::new(clock))
            .sleeper(Arc::new(sleeper.clone()))
            .async_sleeper(Arc::new(sleeper.clone()))
            .retry_after_sink("rt_recorded", sink.clone())
            .retry_after_sink("rt_write", write_sink.clone())
            .retry_after_sink("rt_reloaded", reload_sink.clone())
            .retry_after_sink("rt_backoff", backoff_sink.clone())
            .retry_after_sink("rt_future_write", future_sink.clone())
            .retry_after_sink(
                "rt_governed",
                Arc::new(RetryAfterLink::new(governor.clone(), core, planner)),
            )
            .build();
        assert!(
            Runtime::install(runtime).is_ok(),
            "nothing used the global runtime before"
        );
        World {
            sleeper,
            sink,
            write_sink,
            reload_sink,
            backoff_sink,
            future_sink,
            governor,
            core,
        }
    })
}

/// One test at a time (they read the shared sleeper's record), and the world built.
fn turn() -> (MutexGuard<'static, ()>, &'static World) {
    static TURN: Mutex<()> = Mutex::new(());
    let t = TURN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    (t, world())
}

/// The sleeper's delays from `from` on.
fn slept_since(w: &World, from: usize) -> Vec<Duration> {
    w.sleeper.delays()[from..].to_vec()
}

static RECORDED_RUNS: AtomicU32 = AtomicU32::new(0);

#[retry_service_operation(service = "rt_recorded", idempotent, max_attempts = 3, backoff = "none", classify = ByHint)]
fn list_recorded() -> Result<u32, GhError> {
    match RECORDED_RUNS.fetch_add(1, Ordering::SeqCst) {
        0 => Err(GhError::Throttled(7)),
        n => Ok(n + 1),
    }
}

#[test]
fn r12_g6_the_runtimes_sink_hears_an_annotated_fns_retry_after_and_sets_its_wait() {
    let (_turn, w) = turn();
    let before = w.sleeper.delays().len();
    assert_eq!(list_recorded(), Ok(2));
    assert_eq!(
        *w.sink.heard.lock().unwrap(),
        [("rt_recorded".to_owned(), Duration::from_secs(7))],
        "the sink heard the server's hint, once, with its service"
    );
    // The sink's answer (2 s), not the raw hint (7 s), is the wait.
    assert_eq!(slept_since(w, before), [Duration::from_secs(2)]);
}

static UNLINKED_RUNS: AtomicU32 = AtomicU32::new(0);

#[retry_service_operation(service = "rt_unlinked", idempotent, max_attempts = 3, backoff = "none", classify = ByHint)]
async fn list_unlinked() -> Result<u32, GhError> {
    match UNLINKED_RUNS.fetch_add(1, Ordering::SeqCst) {
        0 => Err(GhError::Throttled(7)),
        n => Ok(n + 1),
    }
}

#[test]
fn r12_a_service_without_a_sink_waits_the_hint_and_no_sink_hears_it() {
    let (_turn, w) = turn();
    let before = w.sleeper.delays().len();
    let heard_before = w.sink.heard.lock().unwrap().len();
    let out = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime")
        .block_on(list_unlinked());
    assert_eq!(out, Ok(2));
    assert_eq!(slept_since(w, before), [Duration::from_secs(7)]);
    assert_eq!(w.sink.heard.lock().unwrap().len(), heard_before);
}

static GOVERNED_RUNS: AtomicU32 = AtomicU32::new(0);

// One attempt: the hint still reaches the sink (the governor) before the loop gives up.
#[retry_service_operation(service = "rt_governed", idempotent, max_attempts = 1, classify = ByHint)]
fn list_governed() -> Result<u32, GhError> {
    GOVERNED_RUNS.fetch_add(1, Ordering::SeqCst);
    Err(GhError::Throttled(30))
}

#[test]
fn g6_an_annotated_fns_retry_after_becomes_the_governors_block_for_every_agent() {
    let (_turn, w) = turn();
    assert_eq!(
        w.governor
            .snapshot(w.core)
            .expect("the resource")
            .blocked_for,
        None
    );
    assert_eq!(list_governed(), Err(GhError::Throttled(30)));
    assert_eq!(GOVERNED_RUNS.load(Ordering::SeqCst), 1);
    let snapshot = w.governor.snapshot(w.core).expect("the resource");
    assert_eq!(snapshot.blocked_for, Some(Duration::from_secs(30)));
    // Another agent, even at P0, now waits for the block instead of sending into it.
    let urgent = w
        .governor
        .register("urgent", Priority::P0)
        .expect("a new agent");
    match w.governor.decide(urgent, w.core, &Request::read()) {
        Decision::Wait(wait) => {
            assert_eq!(wait.reason, WaitReason::Blocked);
            assert!(wait.delay >= Duration::from_secs(30), "{wait:?}");
            w.governor.cancel(&wait.ticket);
        }
        other => panic!("a P0 read went into the block: {other:?}"),
    }
}

static WRITE_RUNS: AtomicU32 = AtomicU32::new(0);

// A write: it runs once, and its classifier picks the errors whose Retry-After the sink hears.
#[retry_service_operation(service = "rt_write", classify = ByHint)]
fn create_issue() -> Result<u32, GhError> {
    WRITE_RUNS.fetch_add(1, Ordering::SeqCst);
    Err(GhError::Throttled(60))
}

struct Repo;

static LABEL_RUNS: AtomicU32 = AtomicU32::new(0);

#[service_defaults(service = "rt_write", classify = ByHint)]
impl Repo {
    // An async write inheriting the classifier.
    #[retry_service_operation]
    async fn add_label(&self) -> Result<u32, GhError> {
        LABEL_RUNS.fetch_add(1, Ordering::SeqCst);
        Err(GhError::Throttled(45))
    }
}

#[test]
fn r12_g6_a_write_runs_once_and_its_retry_after_reaches_the_sink_own_or_inherited() {
    let (_turn, w) = turn();
    let before = w.sleeper.delays().len();
    assert_eq!(create_issue(), Err(GhError::Throttled(60)));
    assert_eq!(WRITE_RUNS.load(Ordering::SeqCst), 1, "a write runs once");
    let out = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime")
        .block_on(Repo.add_label());
    assert_eq!(out, Err(GhError::Throttled(45)));
    assert_eq!(LABEL_RUNS.load(Ordering::SeqCst), 1, "a write runs once");
    assert_eq!(
        *w.write_sink.heard.lock().unwrap(),
        [
            ("rt_write".to_owned(), Duration::from_secs(60)),
            ("rt_write".to_owned(), Duration::from_secs(45)),
        ]
    );
    assert_eq!(slept_since(w, before), [], "a write never waits to retry");
}

#[retry_service_operation(service = "rt_future_write", classify = ByHint)]
fn fetch_token() -> Result<u32, GhError> {
    Err(GhError::Throttled(30))
}

// A write returning `impl Future`: its synchronous part runs now, and its nested call's 429
// is what the future returns.
#[retry_service_operation(service = "rt_future_write", classify = ByHint)]
fn post_comment() -> impl std::future::Future<Output = Result<u32, GhError>> {
    let token = fetch_token();
    async move { token }
}

/// A run-once `impl Future` fn's synchronous part is inside its one attempt: a nested call
/// there that gets a 429, returned by the fn's future, reaches the sink once. Before, the
/// synchronous part ran in the caller's attempt (none here), so the fn's own attempt did not
/// know the report and told the sink again: two G6 release slots for one 429.
#[test]
fn r12_a_run_once_impl_future_fns_nested_429_from_its_sync_part_reaches_the_sink_once() {
    let (_turn, w) = turn();
    let out = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime")
        .block_on(post_comment());
    assert_eq!(out, Err(GhError::Throttled(30)));
    assert_eq!(
        *w.future_sink.heard.lock().unwrap(),
        [("rt_future_write".to_owned(), Duration::from_secs(30))],
        "one 429, told once"
    );
}

static RELOADED_SITE_RUNS: AtomicU32 = AtomicU32::new(0);
static RELOADED_SERVICE_RUNS: AtomicU32 = AtomicU32::new(0);
/// How many more attempts of either fn fail before one succeeds (so the circuit, which
/// counts consecutive failures, stays closed).
static RELOADED_FAILS_LEFT: AtomicU32 = AtomicU32::new(0);

fn reloaded_attempt(runs: &AtomicU32, hint: u64) -> Result<u32, GhError> {
    runs.fetch_add(1, Ordering::SeqCst);
    let fails = &RELOADED_FAILS_LEFT;
    match fails.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)) {
        Ok(_) => Err(GhError::Throttled(hint)),
        Err(_) => Ok(1),
    }
}

// A call site with a declared value (its own guard) and one on the service's own guard.
#[retry_service_operation(service = "rt_reloaded", idempotent, max_attempts = 2, backoff = "none", classify = ByHint)]
fn list_reloaded_site() -> Result<u32, GhError> {
    reloaded_attempt(&RELOADED_SITE_RUNS, 5)
}

#[retry_service_operation(service = "rt_reloaded", idempotent, classify = ByHint)]
fn list_reloaded_service() -> Result<u32, GhError> {
    reloaded_attempt(&RELOADED_SERVICE_RUNS, 6)
}

#[test]
fn r12_c13_a_reload_keeps_the_sink_of_every_guard_of_its_service() {
    let (_turn, w) = turn();
    let runs = |n: &AtomicU32| n.load(Ordering::SeqCst);
    // Before: the site's declared 2 attempts are all it gets.
    RELOADED_FAILS_LEFT.store(3, Ordering::SeqCst);
    assert_eq!(list_reloaded_site(), Err(GhError::Throttled(5)));
    assert_eq!(runs(&RELOADED_SITE_RUNS), 2);
    RELOADED_FAILS_LEFT.store(0, Ordering::SeqCst);
    assert_eq!(
        list_reloaded_service(),
        Ok(1),
        "a success closes the failure run"
    );
    // The reload's JSON (the top layer, C13) gives the service 4 attempts, its site too;
    // only this test's service is named, so the other tests' services keep their policies.
    let overrides =
        r#"{"rt_reloaded": {"retry": {"max_attempts": 4, "backoff_strategy": "none"}}}"#;
    Runtime::global()
        .reload(config_support::config(&[(
            "CLEVERAGENTS_RETRY_SERVICE_OVERRIDES",
            overrides,
        )]))
        .expect("a valid config");
    let (site_before, service_before) = (runs(&RELOADED_SITE_RUNS), runs(&RELOADED_SERVICE_RUNS));
    let heard_before = w.reload_sink.heard.lock().unwrap().len();
    let before = w.sleeper.delays().len();
    // Three failures, then the fourth attempt (which the reload allowed) succeeds.
    RELOADED_FAILS_LEFT.store(3, Ordering::SeqCst);
    assert_eq!(list_reloaded_site(), Ok(1));
    RELOADED_FAILS_LEFT.store(3, Ordering::SeqCst);
    assert_eq!(list_reloaded_service(), Ok(1));
    assert_eq!(
        runs(&RELOADED_SITE_RUNS) - site_before,
        4,
        "the reload applied"
    );
    assert_eq!(
        runs(&RELOADED_SERVICE_RUNS) - service_before,
        4,
        "the reload applied"
    );
    // Both guards still hand every hint to the sink, and wait its answer (3 s), not the
    // hints (5 s and 6 s).
    let heard = w.reload_sink.heard.lock().unwrap()[heard_before..].to_vec();
    let five = ("rt_reloaded".to_owned(), Duration::from_secs(5));
    let six = ("rt_reloaded".to_owned(), Duration::from_secs(6));
    assert_eq!(
        heard,
        [
            five.clone(),
            five.clone(),
            five,
            six.clone(),
            six.clone(),
            six
        ]
    );
    assert_eq!(slept_since(w, before), [Duration::from_secs(3); 6]);
}

static BACKOFF_RUNS: AtomicU32 = AtomicU32::new(0);

// A backoff (4 s) longer than the sink's answer (2 s).
#[retry_service_operation(service = "rt_backoff", idempotent, max_attempts = 2, backoff = "fixed", base_delay = 4, jitter = false, classify = ByHint)]
fn list_backed_off() -> Result<u32, GhError> {
    match BACKOFF_RUNS.fetch_add(1, Ordering::SeqCst) {
        0 => Err(GhError::Throttled(1)),
        n => Ok(n + 1),
    }
}

#[test]
fn r12_g6_the_sinks_answer_is_the_wait_even_when_the_backoff_is_longer() {
    let (_turn, w) = turn();
    let before = w.sleeper.delays().len();
    assert_eq!(list_backed_off(), Ok(2));
    assert_eq!(
        *w.backoff_sink.heard.lock().unwrap(),
        [("rt_backoff".to_owned(), Duration::from_secs(1))]
    );
    // The governor's slot (the sink's answer) keeps priority order: a longer backoff would
    // bring a P0 caller back after lower priorities' windows.
    assert_eq!(slept_since(w, before), [Duration::from_secs(2)]);
}
