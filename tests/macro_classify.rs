//! R12 through the attribute: `classify = …` decides which errors an annotated fn retries and
//! how long a Retry-After its error carries holds the next attempt (capped by the total
//! timeout); without it every error is transient.
//!
//! No real sleeps: the waits that happen, or must not, run on tokio's paused clock; the sync
//! tests stop before any backoff. Each test has its own service, so breakers never interact.

use resilience::retry::{ByHint, ErrorClass};
use resilience::{retry_service_operation, service_defaults};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

mod macro_support;

use macro_support::GhError;

/// Returns the scripted errors in order, then `Ok(attempt number)`.
struct Script {
    runs: AtomicU32,
    errors: &'static [GhError],
}

impl Script {
    const fn new(errors: &'static [GhError]) -> Self {
        Script {
            runs: AtomicU32::new(0),
            errors,
        }
    }

    fn next(&self) -> Result<u32, GhError> {
        let n = self.runs.fetch_add(1, Ordering::SeqCst);
        match self.errors.get(n as usize) {
            Some(e) => Err(e.clone()),
            None => Ok(n + 1),
        }
    }

    fn runs(&self) -> u32 {
        self.runs.load(Ordering::SeqCst)
    }
}

static NOT_FOUND: Script = Script::new(&[GhError::NotFound, GhError::NotFound]);

#[retry_service_operation(service = "cl_permanent", idempotent, max_attempts = 3, backoff = "none", classify = ByHint)]
fn get_missing_repo() -> Result<u32, GhError> {
    NOT_FOUND.next()
}

#[test]
fn r12_classify_by_hint_returns_a_permanent_error_after_one_attempt() {
    assert_eq!(get_missing_repo(), Err(GhError::NotFound));
    assert_eq!(NOT_FOUND.runs(), 1);
}

static UNCLASSIFIED: Script = Script::new(&[GhError::NotFound, GhError::NotFound]);

// The same fn without `classify`: implementing `RetryHint` alone changes nothing.
#[retry_service_operation(
    service = "cl_unclassified",
    idempotent,
    max_attempts = 3,
    backoff = "none"
)]
fn get_missing_repo_unclassified() -> Result<u32, GhError> {
    UNCLASSIFIED.next()
}

#[test]
fn r12_without_classify_every_error_is_transient() {
    assert_eq!(get_missing_repo_unclassified(), Ok(3));
    assert_eq!(UNCLASSIFIED.runs(), 3);
}

static THROTTLED: Script = Script::new(&[GhError::Throttled(7), GhError::Reset]);

#[retry_service_operation(service = "cl_retry_after", idempotent, max_attempts = 3, backoff = "fixed", base_delay = 1, jitter = false, classify = ByHint)]
async fn list_issues() -> Result<u32, GhError> {
    THROTTLED.next()
}

// Paused clock: each wait is exactly its length. The Retry-After (7 s) is a floor over the
// 1 s fixed backoff; the plain transient failure after it waits the backoff.
#[tokio::test(start_paused = true)]
async fn r12_classify_by_hint_waits_out_the_retry_after_then_the_backoff() {
    let started = tokio::time::Instant::now();
    assert_eq!(list_issues().await, Ok(3));
    assert_eq!(started.elapsed(), Duration::from_secs(7 + 1));
    assert_eq!(THROTTLED.runs(), 3);
}

static THROTTLED_LONG: Script = Script::new(&[GhError::Throttled(60)]);

#[retry_service_operation(service = "cl_capped", idempotent, max_attempts = 3, backoff = "none", total_timeout = 5, classify = ByHint)]
async fn create_branch_ref() -> Result<u32, GhError> {
    THROTTLED_LONG.next()
}

// A Retry-After past the total timeout is not waited for (R7, R12): the call ends at once
// with the error, instead of sleeping 60 s to be cut off at 5 s. Paused clock: no time passes.
#[tokio::test(start_paused = true)]
async fn r12_a_retry_after_past_the_total_timeout_ends_the_call_without_waiting() {
    let started = tokio::time::Instant::now();
    assert_eq!(create_branch_ref().await, Err(GhError::Throttled(60)));
    assert_eq!(THROTTLED_LONG.runs(), 1);
    assert_eq!(started.elapsed(), Duration::ZERO, "it waited");
}

/// Only resets are worth another attempt.
fn resets_only(e: &GhError) -> ErrorClass {
    match e {
        GhError::Reset => ErrorClass::Transient,
        _ => ErrorClass::Permanent,
    }
}

static MIXED: Script = Script::new(&[GhError::Reset, GhError::Throttled(1)]);

#[retry_service_operation(service = "cl_fn", idempotent, max_attempts = 5, backoff = "none", classify = resets_only)]
fn get_tree() -> Result<u32, GhError> {
    MIXED.next()
}

#[test]
fn r12_classify_takes_a_classifier_fn() {
    // The reset is retried; the fn calls the throttle permanent, so it ends the call.
    assert_eq!(get_tree(), Err(GhError::Throttled(1)));
    assert_eq!(MIXED.runs(), 2);
}

static INHERITED: Script = Script::new(&[GhError::NotFound]);
static OVERRIDDEN: Script = Script::new(&[GhError::NotFound, GhError::NotFound]);
static WRITES: Script = Script::new(&[GhError::Reset]);

struct Repo;

#[service_defaults(service = "cl_defaults", max_attempts = 3, backoff = "none", classify = ByHint)]
impl Repo {
    #[retry_service_operation(idempotent)]
    fn get_inherited(&self) -> Result<u32, GhError> {
        INHERITED.next()
    }

    // The fn's own classifier wins over the inherited one (M5).
    #[retry_service_operation(idempotent, classify = resets_only_but_not_found_too)]
    fn get_overridden(&self) -> Result<u32, GhError> {
        OVERRIDDEN.next()
    }

    // A write ignores the inherited classifier as it ignores retry tuning: it runs once.
    #[retry_service_operation]
    fn write(&self) -> Result<u32, GhError> {
        WRITES.next()
    }
}

fn resets_only_but_not_found_too(e: &GhError) -> ErrorClass {
    match e {
        GhError::Reset | GhError::NotFound => ErrorClass::Transient,
        _ => ErrorClass::Permanent,
    }
}

#[test]
fn r12_m5_classify_is_inherited_from_service_defaults_and_overridden_per_fn() {
    let repo = Repo;
    assert_eq!(repo.get_inherited(), Err(GhError::NotFound));
    assert_eq!(
        INHERITED.runs(),
        1,
        "the inherited ByHint calls NotFound permanent"
    );
    assert_eq!(repo.get_overridden(), Ok(3));
    assert_eq!(
        OVERRIDDEN.runs(),
        3,
        "the fn's own classifier retries NotFound"
    );
    assert_eq!(repo.write(), Err(GhError::Reset));
    assert_eq!(WRITES.runs(), 1);
}
