//! A plan service client guarded by `#[retry_service_operation]`.
//!
//! ```sh
//! cargo run --example plan_service
//! # operators retune a deployed service without a rebuild:
//! CLEVERAGENTS_RETRY_SERVICE_OVERRIDES='{"audit_service": {"retry": {"max_attempts": 3}}}' \
//!     cargo run --example plan_service
//! ```
//!
//! Shows: sync and async reads retried (declared `idempotent`), defaults declared once for the
//! whole client with `#[service_defaults]`, errors the client calls permanent not retried
//! (`classify = ByHint`, R12), a write that is never retried, and the env
//! override of the code-declared attempt count (C13: env and JSON beat attribute arguments).
//! When `CLEVERAGENTS_RETRY_SERVICE_OVERRIDES` is unset, the example sets it for
//! `audit_service` itself before the first guarded call, so the effect is visible.

use resilience::retry::{ByHint, ErrorClass, RetryHint};
use resilience::{retry_service_operation, service_defaults, ResilienceError};
use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

/// The client's error: the backend's own failures, or a refusal of the framework.
#[derive(Debug)]
enum PlanError {
    /// The backend was briefly unavailable (worth retrying, if the operation allows it).
    Unavailable { attempt: u32 },
    /// No such plan.
    NotFound(u64),
    /// The framework refused or stopped the call (open circuit, total timeout).
    Refused(ResilienceError),
}

impl From<ResilienceError> for PlanError {
    fn from(e: ResilienceError) -> Self {
        PlanError::Refused(e)
    }
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlanError::Unavailable { attempt } => {
                write!(f, "backend unavailable (attempt {attempt})")
            }
            PlanError::NotFound(id) => write!(f, "plan {id} not found"),
            PlanError::Refused(e) => write!(f, "refused: {e}"),
        }
    }
}

/// Which failures are worth another attempt, read by `classify = ByHint` below: a missing
/// plan will still be missing on the next attempt.
impl RetryHint for PlanError {
    fn retry_hint(&self) -> ErrorClass {
        match self {
            PlanError::Unavailable { .. } => ErrorClass::Transient,
            PlanError::NotFound(_) | PlanError::Refused(_) => ErrorClass::Permanent,
        }
    }
}

/// A stand-in for the remote plan store: fails the first `flaky` requests of each kind.
struct Backend {
    plans: Mutex<Vec<String>>,
    requests: AtomicU32,
    flaky: u32,
}

impl Backend {
    fn request(&self) -> Result<u32, PlanError> {
        let n = self.requests.fetch_add(1, Ordering::SeqCst) + 1;
        if n <= self.flaky {
            Err(PlanError::Unavailable { attempt: n })
        } else {
            Ok(n)
        }
    }

    fn reset(&self) {
        self.requests.store(0, Ordering::SeqCst);
    }

    fn attempts(&self) -> u32 {
        self.requests.load(Ordering::SeqCst)
    }
}

struct PlanClient {
    reads: Backend,
    writes: Backend,
}

// Declared once for every guarded method below: service, deadline, retry tuning and which
// errors are worth retrying. The tuning applies only to methods marked `idempotent`.
#[service_defaults(
    service = "plan_service",
    total_timeout = 30,
    max_attempts = 4,
    backoff = "fixed",
    base_delay = 0.1,
    classify = ByHint
)]
impl PlanClient {
    /// A read: safe to repeat, so transient failures are retried (up to 4 attempts).
    #[retry_service_operation(idempotent)]
    fn get_plan(&self, id: u64) -> Result<String, PlanError> {
        self.reads.request()?;
        let plans = self.reads.plans.lock().expect("plans lock");
        let index = usize::try_from(id).map_err(|_| PlanError::NotFound(id))?;
        plans.get(index).cloned().ok_or(PlanError::NotFound(id))
    }

    /// An async read with its own attempt limit and a faster backoff.
    #[retry_service_operation(idempotent, max_attempts = 3, base_delay = 0.05)]
    async fn list_plans(&self) -> Result<Vec<String>, PlanError> {
        tokio::task::yield_now().await;
        self.reads.request()?;
        Ok(self.reads.plans.lock().expect("plans lock").clone())
    }

    /// A write: applying a plan twice could apply it twice, so it is never retried. It still
    /// goes through the breaker, and it may consume its argument.
    #[retry_service_operation(not_idempotent)]
    async fn apply_plan(&self, plan: String) -> Result<u64, PlanError> {
        self.writes.request()?;
        let mut plans = self.writes.plans.lock().expect("plans lock");
        plans.push(plan);
        Ok(plans.len() as u64 - 1)
    }
}

static AUDIT_REQUESTS: AtomicU32 = AtomicU32::new(0);

/// The code says 5 attempts; the env override (if any) has the last word.
#[retry_service_operation(
    service = "audit_service",
    idempotent,
    max_attempts = 5,
    backoff = "none"
)]
fn fetch_audit_log() -> Result<Vec<String>, PlanError> {
    let attempt = AUDIT_REQUESTS.fetch_add(1, Ordering::SeqCst) + 1;
    Err(PlanError::Unavailable { attempt })
}

const OVERRIDES: &str = "CLEVERAGENTS_RETRY_SERVICE_OVERRIDES";

#[tokio::main(flavor = "current_thread")]
async fn main() {
    if std::env::var_os(OVERRIDES).is_none() {
        // Before the first guarded call: services read their policy once, on first use.
        std::env::set_var(
            OVERRIDES,
            r#"{"audit_service": {"retry": {"max_attempts": 2}}}"#,
        );
    }
    let overrides = std::env::var(OVERRIDES).unwrap_or_default();

    let client = PlanClient {
        reads: Backend {
            plans: Mutex::new(vec!["migrate-db".into(), "rotate-keys".into()]),
            requests: AtomicU32::new(0),
            flaky: 2,
        },
        writes: Backend {
            plans: Mutex::new(Vec::new()),
            requests: AtomicU32::new(0),
            flaky: 1,
        },
    };

    println!("1. sync read, idempotent (backend fails twice first)");
    client.reads.reset();
    match client.get_plan(1) {
        Ok(plan) => println!(
            "   get_plan(1) = {plan:?} after {} attempts",
            client.reads.attempts()
        ),
        Err(e) => println!("   get_plan(1) failed: {e}"),
    }

    println!("   then a missing plan: permanent by its RetryHint (classify = ByHint), not retried");
    let before = client.reads.attempts();
    match client.get_plan(9) {
        Ok(plan) => println!("   get_plan(9) = {plan:?}"),
        Err(e) => println!(
            "   get_plan(9) failed: {e}, after {} attempt(s)",
            client.reads.attempts() - before
        ),
    }

    println!("2. async read, idempotent, its own max_attempts = 3");
    client.reads.reset();
    match client.list_plans().await {
        Ok(plans) => println!(
            "   list_plans() = {plans:?} after {} attempts",
            client.reads.attempts()
        ),
        Err(e) => println!("   list_plans() failed: {e}"),
    }

    println!("3. async write, not idempotent (backend fails once first)");
    client.writes.reset();
    match client.apply_plan("scale-out".into()).await {
        Ok(id) => println!("   apply_plan = {id}"),
        Err(e) => println!(
            "   apply_plan failed: {e}; attempts made: {} (a write is never retried)",
            client.writes.attempts()
        ),
    }

    println!("4. env override of code-declared settings");
    println!("   {OVERRIDES}={overrides}");
    let result = fetch_audit_log();
    println!(
        "   fetch_audit_log declared max_attempts = 5, made {} attempts: {}",
        AUDIT_REQUESTS.load(Ordering::SeqCst),
        match result {
            Ok(_) => "ok".to_string(),
            Err(e) => e.to_string(),
        }
    );
}
