//! `#[retry_service_operation]` through the facade, one test per fn shape (M1, R3) and per
//! idempotency rule (M2, M4). Counters observe how many attempts really ran.
//!
//! Every retrying fn here uses `backoff = "none"` (no real sleeps) and its own service name (so
//! breakers of different tests never interact).

mod macro_support;

use macro_support::{ApiError, Attempts};
use resilience::retry_service_operation;
use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};

// ===== free fns =====

static FREE: Attempts = Attempts::new();

#[retry_service_operation(
    service = "shapes_free",
    idempotent,
    max_attempts = 5,
    backoff = "none"
)]
fn free_fn(until: u32) -> Result<u32, ApiError> {
    FREE.fail_until(until)
}

#[test]
fn m1_free_fn_retries_until_success() {
    assert_eq!(free_fn(3), Ok(3));
    assert_eq!(FREE.count(), 3);
}

static EXHAUST: Attempts = Attempts::new();

#[retry_service_operation(
    service = "shapes_exhaust",
    idempotent,
    max_attempts = 3,
    backoff = "none"
)]
fn always_fails() -> Result<u32, ApiError> {
    EXHAUST.fail_until(u32::MAX)
}

#[test]
fn m1_exhausted_retries_return_the_last_error_unchanged() {
    assert_eq!(always_fails(), Err(ApiError::Flaky(3)));
    assert_eq!(EXHAUST.count(), 3);
}

// ===== `?` and early `return` =====

static QM: Attempts = Attempts::new();

fn parse_on_third(attempt: u32) -> Result<u32, std::num::ParseIntError> {
    if attempt < 3 {
        "x".parse()
    } else {
        Ok(attempt)
    }
}

impl From<std::num::ParseIntError> for ApiError {
    fn from(_: std::num::ParseIntError) -> Self {
        ApiError::Flaky(0)
    }
}

#[retry_service_operation(service = "shapes_qm", idempotent, max_attempts = 4, backoff = "none")]
fn question_mark() -> Result<u32, ApiError> {
    let attempt = QM.next();
    let parsed = parse_on_third(attempt)?;
    Ok(parsed * 10)
}

#[test]
fn m1_question_mark_ends_the_attempt_only() {
    // The two `?` failures ended attempts 1 and 2, not the call.
    assert_eq!(question_mark(), Ok(30));
    assert_eq!(QM.count(), 3);
}

static RET: Attempts = Attempts::new();

#[retry_service_operation(
    service = "shapes_return",
    idempotent,
    max_attempts = 4,
    backoff = "none"
)]
fn early_return() -> Result<&'static str, ApiError> {
    let attempt = RET.next();
    if attempt < 2 {
        return Err(ApiError::Flaky(attempt));
    }
    if attempt == 2 {
        return Ok("early");
    }
    Ok("late")
}

#[test]
fn m1_early_return_ends_the_attempt_only() {
    assert_eq!(early_return(), Ok("early"));
    assert_eq!(RET.count(), 2);
}

// ===== methods =====

struct PlanClient {
    plans: Vec<String>,
    reads: AtomicU32,
    cursor: u32,
}

impl PlanClient {
    fn new() -> Self {
        PlanClient {
            plans: vec!["alpha".into(), "beta".into()],
            reads: AtomicU32::new(0),
            cursor: 0,
        }
    }

    #[retry_service_operation(service = "shapes_ref_self", idempotent, backoff = "none")]
    fn get_plan(&self, id: usize) -> Result<&str, ApiError> {
        let n = self.reads.fetch_add(1, Ordering::SeqCst) + 1;
        if n < 2 {
            return Err(ApiError::Flaky(n));
        }
        Ok(&self.plans[id])
    }

    #[retry_service_operation(
        service = "shapes_mut_self",
        idempotent,
        max_attempts = 5,
        backoff = "none"
    )]
    fn next_page(&mut self) -> Result<u32, ApiError> {
        self.cursor += 1;
        if self.cursor < 4 {
            Err(ApiError::Flaky(self.cursor))
        } else {
            Ok(self.cursor)
        }
    }
}

#[test]
fn m1_ref_self_method_borrows_self_per_attempt() {
    let c = PlanClient::new();
    assert_eq!(c.get_plan(1), Ok("beta"));
    assert_eq!(c.reads.load(Ordering::SeqCst), 2);
}

#[test]
fn m1_mut_self_method_sees_state_from_earlier_attempts() {
    let mut c = PlanClient::new();
    assert_eq!(c.next_page(), Ok(4));
    assert_eq!(c.cursor, 4);
}

// ===== trait impl methods, generics, lifetimes, impl Trait =====

trait Store {
    fn load(&self, key: &str) -> Result<String, ApiError>;
}

struct FlakyStore(Attempts);

impl Store for FlakyStore {
    #[retry_service_operation(service = "shapes_trait", idempotent, backoff = "none")]
    fn load(&self, key: &str) -> Result<String, ApiError> {
        let a = self.0.fail_until(3)?;
        Ok(format!("{key}@{a}"))
    }
}

#[test]
fn m1_trait_impl_method_retries() {
    let s = FlakyStore(Attempts::new());
    let dyn_store: &dyn Store = &s;
    assert_eq!(dyn_store.load("k"), Ok("k@3".to_string()));
    assert_eq!(s.0.count(), 3);
}

static GENERIC: Attempts = Attempts::new();

#[retry_service_operation(service = "shapes_generic", idempotent, backoff = "none")]
fn first_matching<'a, T, F>(items: &'a [T], pred: F) -> Result<&'a T, ApiError>
where
    T: PartialEq + std::fmt::Debug,
    // Each attempt starts from its own clone of `pred` (M4).
    F: Fn(&T) -> bool + Clone,
{
    GENERIC.fail_until(2)?;
    items.iter().find(|x| pred(x)).ok_or(ApiError::Flaky(0))
}

#[test]
fn m1_generic_fn_with_where_clause_and_lifetime_retries() {
    let items = [1, 5, 9];
    assert_eq!(first_matching(&items, |x| *x > 4), Ok(&5));
    assert_eq!(GENERIC.count(), 2);
}

static IMPL_ARG: Attempts = Attempts::new();

#[retry_service_operation(service = "shapes_impl_arg", idempotent, backoff = "none")]
fn joined(
    parts: impl IntoIterator<Item = u32> + Clone,
) -> Result<impl std::fmt::Display, ApiError> {
    IMPL_ARG.fail_until(2)?;
    Ok(parts
        .clone()
        .into_iter()
        .map(|p| p.to_string())
        .collect::<Vec<_>>()
        .join(","))
}

#[test]
fn m1_impl_trait_argument_and_result_retry() {
    assert_eq!(
        joined(vec![1, 2]).map(|d| d.to_string()),
        Ok("1,2".to_string())
    );
    assert_eq!(IMPL_ARG.count(), 2);
}

// ===== async (R3) =====

static ASYNC_FREE: Attempts = Attempts::new();

#[retry_service_operation(
    service = "shapes_async",
    idempotent,
    max_attempts = 4,
    backoff = "none"
)]
async fn async_free(until: u32) -> Result<u32, ApiError> {
    tokio::task::yield_now().await;
    let a = ASYNC_FREE.fail_until(until)?;
    Ok(a)
}

#[tokio::test]
async fn r3_async_fn_is_detected_and_retried() {
    assert_eq!(async_free(3).await, Ok(3));
    assert_eq!(ASYNC_FREE.count(), 3);
}

struct AsyncClient {
    seen: Vec<u32>,
}

impl AsyncClient {
    #[retry_service_operation(service = "shapes_async_mut", idempotent, backoff = "none")]
    async fn poll(&mut self) -> Result<usize, ApiError> {
        self.seen.push(self.seen.len() as u32);
        tokio::task::yield_now().await;
        if self.seen.len() < 3 {
            return Err(ApiError::Flaky(self.seen.len() as u32));
        }
        Ok(self.seen.len())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r3_async_mut_self_method_retries_and_its_future_is_send() {
    let handle = tokio::spawn(async {
        let mut c = AsyncClient { seen: Vec::new() };
        let n = c.poll().await;
        (n, c.seen)
    });
    let (n, seen) = handle.await.expect("task");
    assert_eq!(n, Ok(3));
    assert_eq!(seen, [0, 1, 2]);
}

struct FutClient {
    bodies: AtomicU32,
    polls: std::sync::Arc<AtomicU32>,
}

impl FutClient {
    // Not `async fn`: returns `impl Future`. Each attempt must run the body again (a future
    // cannot be polled again after it completed).
    #[retry_service_operation(service = "shapes_impl_future", idempotent, backoff = "none")]
    fn fetch(&self, id: u32) -> impl Future<Output = Result<u32, ApiError>> + '_ {
        let body_runs = self.bodies.fetch_add(1, Ordering::SeqCst) + 1;
        let polls = self.polls.clone();
        async move {
            polls.fetch_add(1, Ordering::SeqCst);
            if body_runs < 3 {
                Err(ApiError::Flaky(body_runs))
            } else {
                Ok(id)
            }
        }
    }
}

#[tokio::test]
async fn r3_impl_future_fn_gets_a_fresh_future_per_attempt() {
    let c = FutClient {
        bodies: AtomicU32::new(0),
        polls: Default::default(),
    };
    assert_eq!(c.fetch(7).await, Ok(7));
    assert_eq!(c.bodies.load(Ordering::SeqCst), 3);
    assert_eq!(c.polls.load(Ordering::SeqCst), 3);
}

// ===== `Pin<Box<dyn Future>>`: what `#[async_trait]` makes of an `async fn` (M1, R3) =====

/// A trait usable as `dyn Store`, written as `#[async_trait]` expands it: the method attribute
/// sees this signature, since the impl's `#[async_trait]` runs first.
trait BoxedStore: Sync {
    fn load<'life0, 'async_trait>(
        &'life0 self,
        key: String,
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<String, ApiError>> + Send + 'async_trait>>
    where
        'life0: 'async_trait,
        Self: 'async_trait;
}

struct BoxedClient {
    reads: Attempts,
    writes: Attempts,
}

impl BoxedStore for BoxedClient {
    #[retry_service_operation(
        service = "shapes_boxed",
        idempotent,
        max_attempts = 4,
        backoff = "none"
    )]
    fn load<'life0, 'async_trait>(
        &'life0 self,
        key: String,
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<String, ApiError>> + Send + 'async_trait>>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move {
            let __self = self;
            let key = key;
            let __ret: Result<String, ApiError> = {
                __self.reads.fail_until(3)?;
                Ok(key + "!")
            };
            __ret
        })
    }
}

impl BoxedClient {
    #[retry_service_operation(service = "shapes_boxed_write")]
    fn store<'a>(
        &'a self,
        value: String,
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<usize, ApiError>> + Send + 'a>> {
        Box::pin(async move {
            self.writes.fail_until(u32::MAX)?;
            Ok(value.len())
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r3_m1_boxed_future_method_as_async_trait_writes_it_retries_and_stays_send() {
    let client: &'static BoxedClient = Box::leak(Box::new(BoxedClient {
        reads: Attempts::new(),
        writes: Attempts::new(),
    }));
    let store: &'static dyn BoxedStore = client;
    // Spawned: the boxed future is still `Send`.
    let loaded = tokio::spawn(store.load("k".to_string())).await.unwrap();
    assert_eq!(loaded, Ok("k!".to_string()));
    assert_eq!(client.reads.count(), 3);
    // Not idempotent: one attempt (M2).
    assert_eq!(client.store("v".to_string()).await, Err(ApiError::Flaky(1)));
    assert_eq!(client.writes.count(), 1);
}

// ===== by-value arguments of retried fns (M4) =====

static FRESH: Attempts = Attempts::new();

/// Each attempt mutates and consumes its `items` and `label`; the lengths it saw on entry.
#[retry_service_operation(
    service = "shapes_fresh",
    idempotent,
    max_attempts = 3,
    backoff = "none"
)]
fn consume_args(mut items: Vec<u32>, (label, n): (String, u8)) -> Result<Vec<usize>, ApiError> {
    let seen = vec![items.len(), label.len(), usize::from(n)];
    items.push(FRESH.next());
    drop(items);
    let owned: String = label;
    if FRESH.count() < 3 {
        return Err(ApiError::Flaky(owned.len() as u32));
    }
    Ok(seen)
}

#[test]
fn m4_each_attempt_gets_the_original_value_of_a_consumed_argument() {
    // Attempts 1 and 2 pushed to and dropped their `items`; attempt 3 still saw 2 items.
    assert_eq!(
        consume_args(vec![7, 8], ("ab".into(), 5)),
        Ok(vec![2, 2, 5])
    );
    assert_eq!(FRESH.count(), 3);
}

static FRESH_ASYNC: Attempts = Attempts::new();

#[retry_service_operation(
    service = "shapes_fresh_async",
    idempotent,
    max_attempts = 3,
    backoff = "none"
)]
async fn consume_args_async(mut items: Vec<u32>) -> Result<usize, ApiError> {
    let seen = items.len();
    items.push(0);
    tokio::task::yield_now().await;
    drop(items);
    let a = FRESH_ASYNC.fail_until(3)?;
    Ok(seen * 10 + a as usize)
}

#[tokio::test]
async fn m4_each_async_attempt_gets_the_original_value_of_a_consumed_argument() {
    assert_eq!(consume_args_async(vec![1]).await, Ok(13));
    assert_eq!(FRESH_ASYNC.count(), 3);
}

// ===== not idempotent (M2, M4) =====

static WRITE: Attempts = Attempts::new();

#[retry_service_operation(service = "shapes_write")]
fn apply_plan(plan: String) -> Result<usize, ApiError> {
    WRITE.next();
    // Consumes its argument: fine, a write runs exactly once (M4).
    let owned: String = plan;
    Err(ApiError::Flaky(owned.len() as u32))
}

#[test]
fn m2_not_idempotent_fails_after_exactly_one_attempt() {
    assert_eq!(apply_plan("abcd".into()), Err(ApiError::Flaky(4)));
    assert_eq!(WRITE.count(), 1);
}

static WRITE_ASYNC: Attempts = Attempts::new();

#[retry_service_operation(service = "shapes_write_async", not_idempotent)]
async fn apply_plan_async(plan: Vec<u8>) -> Result<usize, ApiError> {
    WRITE_ASYNC.next();
    drop(plan);
    Err(ApiError::Flaky(0))
}

#[tokio::test]
async fn m2_not_idempotent_async_fails_after_exactly_one_attempt() {
    assert_eq!(apply_plan_async(vec![1]).await, Err(ApiError::Flaky(0)));
    assert_eq!(WRITE_ASYNC.count(), 1);
}

static WRITE_FUT: Attempts = Attempts::new();

#[retry_service_operation(service = "shapes_write_future")]
fn apply_plan_future(plan: String) -> impl Future<Output = Result<usize, ApiError>> + 'static {
    WRITE_FUT.next();
    async move { Err(ApiError::Flaky(plan.len() as u32)) }
}

#[tokio::test]
async fn m2_not_idempotent_impl_future_runs_its_body_once() {
    assert_eq!(
        apply_plan_future("ab".into()).await,
        Err(ApiError::Flaky(2))
    );
    assert_eq!(WRITE_FUT.count(), 1);
}
