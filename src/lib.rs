//! # resilience
//!
//! Service calls that are safe to retry and safe to share.
//!
//! Entry points:
//! - [`retry_service_operation`] on a fn or method, and [`service_defaults`] on an `impl` block
//!   or inline `mod`: the usual way, with per-service policy from config;
//! - [`Runtime`]: the process-wide config + registry ([`Runtime::global`], loaded from the
//!   environment on first use; [`Runtime::install`] once at startup; [`Runtime::reload`]);
//!   [`Runtime::service`] gives a service's [`retry::ServiceGuard`] for calls written by hand;
//! - [`retry::ServiceGuard`] built directly, for code that manages its own policies (below);
//! - [`governor`]: the Rate Governor for agents sharing one rate-limited API;
//! - [`sanitize()`]: what every error text goes through before a log line;
//! - [`config`]: env vars and JSON overrides with provenance (also the `resilience-config`
//!   binary).
//!
//! Time is injected everywhere ([`clock`], [`sleep`]): tests drive a manual clock and assert
//! exact schedules.
//!
//! ```
//! use resilience::retry::ServiceGuard;
//! use resilience::ResilienceError;
//!
//! #[derive(Debug)]
//! struct ApiError(String);
//! impl From<ResilienceError> for ApiError {
//!     fn from(e: ResilienceError) -> Self { ApiError(e.to_string()) }
//! }
//! impl std::fmt::Display for ApiError {
//!     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { f.write_str(&self.0) }
//! }
//!
//! let guard = ServiceGuard::builder("vector_store_service").build();
//! let hits: Result<Vec<u32>, ApiError> =
//!     guard.call("search").idempotent().run(|| Ok(vec![1, 2, 3]));
//! assert_eq!(hits.unwrap(), [1, 2, 3]);
//! ```

pub use resilience_core::{backoff, breaker, clock, governor, retry, sleep};
pub use resilience_core::{sanitize, PolicyError, ResilienceError};
/// Guards a fn with its service's circuit breaker and, for idempotent operations, retries
/// with backoff.
///
/// ```
/// use resilience::{retry_service_operation, ResilienceError};
///
/// #[derive(Debug)]
/// enum PlanError {
///     NotFound,
///     Refused(ResilienceError),
/// }
/// impl From<ResilienceError> for PlanError {
///     fn from(e: ResilienceError) -> Self { PlanError::Refused(e) }
/// }
/// impl std::fmt::Display for PlanError {
///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { write!(f, "{self:?}") }
/// }
///
/// struct PlanClient { plans: Vec<String> }
///
/// impl PlanClient {
///     /// A read: safe to run twice, so it may be retried.
///     #[retry_service_operation(service = "plan_service", idempotent, max_attempts = 5)]
///     fn get_plan(&self, id: usize) -> Result<&str, PlanError> {
///         let plan = self.plans.get(id).ok_or(PlanError::NotFound)?; // ends this attempt only
///         Ok(plan)
///     }
///
///     /// A write: no `idempotent`, so it runs exactly once (still through the breaker).
///     #[retry_service_operation(service = "plan_service")]
///     async fn apply_plan(&mut self, plan: String) -> Result<usize, PlanError> {
///         self.plans.push(plan); // consuming an argument is fine: there is one attempt
///         Ok(self.plans.len() - 1)
///     }
/// }
///
/// let mut client = PlanClient { plans: vec!["alpha".into()] };
/// assert_eq!(client.get_plan(0).unwrap(), "alpha");
/// let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
/// assert_eq!(rt.block_on(client.apply_plan("beta".into())).unwrap(), 1);
/// ```
///
/// # What it does
///
/// The fn keeps its exact signature; only its body is wrapped. Each call goes through
/// `service`'s circuit breaker. An `idempotent` operation that fails is run again after the
/// service's backoff, up to its attempt limit and total deadline; without `idempotent` the
/// operation runs exactly once (M2). Inside another guarded call it runs once, whatever its
/// settings (R6). Exhausted retries return the operation's last error unchanged; the
/// framework's own refusals (open circuit, total timeout) reach the caller as
/// `E::from(ResilienceError)`.
///
/// Every error the fn returns counts as transient unless the fn names a classifier (R12):
/// `classify = resilience::retry::ByHint` asks the error type's [`retry::RetryHint`], so an
/// error it calls permanent ends the call at once and one carrying a server's Retry-After
/// holds the next attempt at least that long (never past the total timeout); `classify =
/// my_fn` takes any `fn(&E) -> retry::ErrorClass`. Implementing `RetryHint` alone changes
/// nothing. See *Classifying errors* below.
///
/// Within the body, `?` and `return` end the current attempt, not the call: the next attempt
/// (if any) runs the whole body again, borrowing `self` afresh and starting from fresh clones
/// of the by-value arguments (M4).
///
/// Works on free fns, `&self` and `&mut self` methods, trait impl methods and trait default
/// methods, generic fns with where clauses, fns with lifetimes and `impl Trait` arguments
/// (M1). It detects by itself whether the fn is sync, `async fn`, or returns
/// `impl Future<Output = Result<..>>` (R3).
///
/// # Every form
///
/// ```
/// use resilience::{retry_service_operation, service_defaults, ResilienceError};
/// use std::future::Future;
///
/// #[derive(Debug)]
/// pub struct ApiError(String);
/// impl From<ResilienceError> for ApiError {
///     fn from(e: ResilienceError) -> Self { ApiError(e.to_string()) }
/// }
/// impl std::fmt::Display for ApiError {
///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { f.write_str(&self.0) }
/// }
///
/// // A free fn, every argument given (seconds as integer or float literals).
/// #[retry_service_operation(
///     service = "plan_service",
///     idempotent,
///     operation = "plans.count",
///     total_timeout = 20,
///     max_attempts = 3,
///     backoff = "exponential",
///     base_delay = 0.5,
///     max_delay = 4,
///     jitter = true
/// )]
/// fn count_plans() -> Result<usize, ApiError> { Ok(3) }
///
/// // A write, said explicitly: runs once (the same as leaving `idempotent` out).
/// #[retry_service_operation(service = "plan_service", not_idempotent)]
/// fn delete_plan(id: u64) -> Result<u64, ApiError> { Ok(id) }
///
/// // Generic, with lifetimes, a where clause and an `impl Trait` argument (by value, so a
/// // retried attempt clones it: it must be `Clone`, M4).
/// #[retry_service_operation(service = "plan_service", idempotent)]
/// fn find<'a, T>(plans: &'a [T], key: impl AsRef<str> + Clone) -> Result<Option<&'a T>, ApiError>
/// where
///     T: AsRef<str>,
/// {
///     Ok(plans.iter().find(|p| p.as_ref() == key.as_ref()))
/// }
///
/// // A fn returning `impl Future`: each attempt runs the body again for a fresh future.
/// #[retry_service_operation(service = "plan_service", idempotent)]
/// fn fetch(id: u64) -> impl Future<Output = Result<u64, ApiError>> {
///     async move { Ok(id) }
/// }
///
/// // A trait impl method, sync or async.
/// pub trait Plans {
///     fn size(&self) -> Result<usize, ApiError>;
/// }
/// pub struct Client(Vec<String>);
/// impl Plans for Client {
///     #[retry_service_operation(service = "plan_service", idempotent)]
///     fn size(&self) -> Result<usize, ApiError> { Ok(self.0.len()) }
/// }
///
/// // A trait default method, here with the trait's defaults: every implementor that keeps it
/// // gets the guarded body.
/// #[service_defaults(service = "plan_service")]
/// pub trait Describe {
///     fn name(&self) -> String;
///     #[retry_service_operation(idempotent)]
///     fn describe(&self) -> Result<String, ApiError> { Ok(format!("plan {}", self.name())) }
/// }
/// impl Describe for Client {
///     fn name(&self) -> String { self.0.join(",") }
/// }
///
/// // Defaults for an `impl` block: each method inherits them and declares only what differs.
/// pub struct Store { rows: Vec<u64> }
/// #[service_defaults(service = "vector_store_service", total_timeout = 10, max_attempts = 4)]
/// impl Store {
///     #[retry_service_operation(idempotent, backoff = "jitter")] // 4 attempts, 10 s, jittered
///     pub fn count(&self) -> Result<usize, ApiError> { Ok(self.rows.len()) }
///
///     #[retry_service_operation] // a write: vector_store_service, 10 s, runs once
///     pub async fn push(&mut self, row: u64) -> Result<usize, ApiError> {
///         self.rows.push(row);
///         Ok(self.rows.len())
///     }
/// }
///
/// // Defaults for a whole inline `mod`, and a facade reached through a re-export
/// // (`crate = "…"`).
/// mod platform {
///     pub(crate) use ::resilience as guarded;
/// }
/// #[service_defaults(service = "audit_service", max_attempts = 2, crate = "crate::platform::guarded")]
/// mod audit {
///     use super::ApiError;
///     use resilience::retry_service_operation;
///
///     #[retry_service_operation(idempotent)] // audit_service, 2 attempts
///     pub async fn last_entry() -> Result<u64, ApiError> { Ok(7) }
/// }
///
/// fn main() {
///     assert_eq!(count_plans().unwrap(), 3);
///     assert_eq!(delete_plan(9).unwrap(), 9);
///     assert_eq!(find(&["a", "b"], "b").unwrap(), Some(&"b"));
///     assert_eq!(Client(vec!["a".into()]).size().unwrap(), 1);
///     assert_eq!(Client(vec!["a".into()]).describe().unwrap(), "plan a");
///     let mut store = Store { rows: vec![] };
///     assert_eq!(store.count().unwrap(), 0);
///     let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
///     assert_eq!(rt.block_on(fetch(4)).unwrap(), 4);
///     assert_eq!(rt.block_on(audit::last_entry()).unwrap(), 7);
///     assert_eq!(rt.block_on(store.push(5)).unwrap(), 1);
/// }
/// ```
///
/// # Arguments
///
/// | argument | meaning |
/// |---|---|
/// | `service = "name"` | required (or inherited from [`service_defaults`]): the service whose policy and breaker apply |
/// | `idempotent` | running the operation twice has the same effect as once: it may be retried |
/// | `not_idempotent` | says explicitly that the operation is a write (the default: it runs once) |
/// | `operation = "name"` | the name in events and logs; defaults to the fn's name |
/// | `total_timeout = secs` | wall-clock cap on the whole call, from the first attempt (default 300): no backoff sleep or new attempt past it, and an async attempt still running then is cancelled (a sync one cannot be interrupted); bounds a fn without `idempotent` too |
/// | `max_attempts = n` | attempts including the first (≥ 1) |
/// | `backoff = "…"` | `"exponential"`, `"linear"`, `"fixed"`, `"jitter"` or `"none"` |
/// | `base_delay = secs`, `max_delay = secs` | the backoff's base and cap |
/// | `jitter = bool` | randomise delays |
/// | `classify = path` | which errors are retried, and Retry-After hints (R12): `resilience::retry::ByHint`, or a `fn(&E) -> ErrorClass`; on a write, only which errors report a Retry-After to the service's sink |
/// | `crate = "path"` | where the facade is, if not `::resilience` (re-exporting crates) |
///
/// Seconds are integer or float literals. `max_attempts`, `backoff`, `base_delay`,
/// `max_delay` and `jitter` tune retries, so they require `idempotent`.
///
/// These values are the *code-declared* layer of the configuration (C13): they override the
/// built-in table, and are themselves overridden by the global env vars
/// (`CLEVERAGENTS_RETRY_MAX_ATTEMPTS`, …) and the per-service JSON in
/// `CLEVERAGENTS_RETRY_SERVICE_OVERRIDES`, so operators can retune a deployed service without
/// a rebuild. What is not declared is left to those layers (no default is baked in).
///
/// # Requirements, checked at compile time
///
/// Each mistake below is a compile error on the offending token, with the fix in the message;
/// the fn itself is still emitted, so the rest of the crate keeps compiling (M3).
///
/// - The return type is a `Result` (any path whose last segment is `Result`, such as
///   `app::Result<T>`), or `impl Future<Output = Result<..>>` for a non-async fn, or
///   `Pin<Box<dyn Future<Output = Result<..>> + ..>>` (what `#[async_trait]` makes of an
///   `async fn`: put `#[async_trait]` on the impl, the attribute on the method).
/// - The error type `E` implements `From<resilience::ResilienceError>` and `Display`.
/// - Not a `const fn` nor an `extern` fn; a retried fn takes `&self` or `&mut self`, not
///   `self` by value nor through a smart pointer (`Box<Self>`, `Rc<Self>`, `Arc<Self>`, `Pin<…>`).
/// - A retried fn's by-value arguments are `Clone` (M4, below).
/// - A retried fn does not return a borrow of a `&mut` input (`&mut self` returning
///   `Result<&str, E>`): each attempt borrows it again, and the borrow checker does not let
///   one attempt's borrow leave the retry loop. Return an owned value, or drop `idempotent`.
///   Borrows of `&self` are fine.
/// - Arguments are known, given once, literal, and in range (`max_attempts ≥ 1`, seconds
///   finite and not negative, a known backoff name, a non-empty service).
///
/// # Arguments consumed by the body (M4)
///
/// A retried body runs once per attempt, so each attempt starts from its own clone of every
/// argument whose type is not a reference (each binding of a pattern argument such as
/// `(a, b): (String, u8)`, `mut` ones included): the body may move or mutate them, and the
/// next attempt still sees the values the caller passed.
///
/// Such arguments must be `Clone` (an `impl Trait` argument says so: `impl AsRef<str> + Clone`),
/// even if the body only borrows them. One that is not is a compile error on that argument,
/// naming it and its type: "the argument `payload` of a retried fn is taken by value, but
/// `Payload` is not `Clone`", with the fixes: take it by reference, make its type `Clone`, or
/// drop `idempotent`. (rustc qualifies the name when another item of the crate has the same
/// one: `upload::{closure#0}::body`. The name reaches the message as a type parameter of one
/// shared check, a fraction of the cost of a check per argument.) An argument that holds a `&mut` by value
/// (`Option<&mut T>`, `(String, &mut Vec<u8>)`) can never be cloned; that error names the
/// argument and points at its `&mut`: take it as `&mut Option<&mut T>` and reborrow with
/// `.as_deref_mut()`, or drop `idempotent`.
///
/// The cost is one clone per by-value argument per attempt, including the first: nothing for
/// `Copy` types, a copy of the data for an owned `String` or `Vec`. Take `&str` or `&[T]` to
/// avoid it. A fn that is not retried runs its body once, with no clone and no `Clone` bound:
/// it may consume its arguments as written.
///
/// # Classifying errors (R12)
///
/// ```
/// use resilience::retry::{ByHint, ErrorClass, RetryHint};
/// use resilience::{retry_service_operation, ResilienceError};
/// use std::time::Duration;
///
/// #[derive(Debug)]
/// enum GhError { NotFound, Throttled { retry_after: Duration }, Refused(ResilienceError) }
/// impl From<ResilienceError> for GhError {
///     fn from(e: ResilienceError) -> Self { GhError::Refused(e) }
/// }
/// impl std::fmt::Display for GhError {
///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { write!(f, "{self:?}") }
/// }
/// impl RetryHint for GhError {
///     fn retry_hint(&self) -> ErrorClass {
///         match self {
///             GhError::NotFound | GhError::Refused(_) => ErrorClass::Permanent,
///             GhError::Throttled { retry_after } => ErrorClass::RetryAfter(*retry_after),
///         }
///     }
/// }
///
/// // A 404 is returned after one attempt; a throttle waits its Retry-After (or the backoff,
/// // if longer), within the total timeout.
/// #[retry_service_operation(service = "github", idempotent, classify = ByHint)]
/// fn get_repo(name: &str) -> Result<String, GhError> {
///     if name.is_empty() { return Err(GhError::NotFound); }
///     Ok(name.to_owned())
/// }
///
/// // Or a fn: here only throttles are retried, whatever the error type's hint says.
/// fn throttles_only(e: &GhError) -> ErrorClass {
///     match e {
///         GhError::Throttled { .. } => ErrorClass::Transient,
///         _ => ErrorClass::Permanent,
///     }
/// }
///
/// #[retry_service_operation(service = "github", idempotent, classify = throttles_only)]
/// async fn list_issues(repo: &str) -> Result<Vec<u64>, GhError> {
///     Ok(vec![1, 2])
/// }
///
/// assert!(matches!(get_repo(""), Err(GhError::NotFound)));
/// assert_eq!(get_repo("octo").unwrap(), "octo");
/// ```
///
/// The value is a path, checked by the compiler against the fn's error type: a unit struct
/// (`ByHint`), a `const` or `static` classifier, or a fn. A closure is refused (write it as a
/// named fn). A classifier that does not fit the error type is one error on the value:
/// "`ByHint` cannot classify errors of type `ApiError`", with the fix. It is called only
/// after a failed attempt, so it costs nothing on the success path. On
/// [`service_defaults`] it applies to every annotated fn inside.
///
/// A Retry-After the classifier finds goes to the service's sink, if the installed runtime
/// has one ([`RuntimeBuilder::retry_after_sink`], then [`Runtime::install`]); the sink's
/// answer is the wait. With the rate
/// governor's [`RetryAfterLink`](governor::RetryAfterLink) as the sink, an annotated fn's
/// 429 becomes the resource's shared block (G6), and every agent comes back in priority
/// order instead of all at once. A write (no `idempotent`) may name a classifier for that
/// alone: it still runs once, but its Retry-After reaches the sink, since writes are what
/// trip secondary rate limits.
///
/// # `impl Future` fns
///
/// A retried fn returning `impl Future` runs its body again for each attempt, so the future
/// it returns owns the fn's arguments: with a `&self` receiver, say so in the return type
/// (`impl Future<Output = ..> + '_`), or write an `async fn`. Each run of the body, its
/// synchronous part included, happens inside its attempt, when the returned future is
/// polled: once the circuit is open, none of it runs. A fn that is not retried runs its body
/// once at call time, as before (its synchronous part runs even if the breaker then refuses
/// the future), and its future captures no more than the original did.
pub use resilience_macros::retry_service_operation;

/// Declares [`retry_service_operation`] arguments once for every annotated fn in an `impl`
/// block, an inline `mod` or a trait (M5).
///
/// ```
/// use resilience::{retry_service_operation, service_defaults, ResilienceError};
///
/// #[derive(Debug)]
/// struct PlanError(String);
/// impl From<ResilienceError> for PlanError {
///     fn from(e: ResilienceError) -> Self { PlanError(e.to_string()) }
/// }
/// impl std::fmt::Display for PlanError {
///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { f.write_str(&self.0) }
/// }
///
/// struct PlanClient;
///
/// #[service_defaults(service = "plan_service", total_timeout = 30, max_attempts = 4)]
/// impl PlanClient {
///     #[retry_service_operation(idempotent)] // plan_service, 30 s, 4 attempts
///     fn get_plan(&self, id: u64) -> Result<u64, PlanError> { Ok(id) }
///
///     #[retry_service_operation(idempotent, max_attempts = 2)] // its own value wins
///     fn list_plans(&self) -> Result<Vec<u64>, PlanError> { Ok(vec![]) }
///
///     #[retry_service_operation] // a write: plan_service, 30 s, runs once
///     fn apply_plan(&self, id: u64) -> Result<u64, PlanError> { Ok(id) }
/// }
///
/// assert_eq!(PlanClient.get_plan(1).unwrap(), 1);
/// ```
///
/// Takes the same arguments as [`retry_service_operation`] except the per-fn decisions
/// `idempotent`, `not_idempotent` and `operation`. It rewrites each
/// `#[retry_service_operation]` (spelt `retry_service_operation`, `resilience::…` or
/// `::resilience::…`) among the block's items, including those of impl blocks and mods nested
/// in an inline `mod`, so that the fn's own arguments win and the defaults fill the rest.
/// Retry tuning among the defaults applies to `idempotent` fns only; a write inherits the
/// service, `total_timeout`, `classify` (a write may name a classifier to report a
/// Retry-After) and `crate`, and still runs once. A write whose error type the inherited
/// classifier cannot read needs its own: `classify = resilience::retry::AllTransient`. A nested `#[service_defaults]`
/// overrides the outer one for its own block. Fn bodies are never entered, and neither are
/// macro invocations among the items (a `macro_rules!` call that writes annotated fns): the
/// attributes such a call produces do not exist yet when the defaults are applied, so give
/// them their arguments in full. An attribute inside `#[cfg_attr(…)]` is reached.
pub use resilience_macros::service_defaults;

/// Configuration: env vars, JSON overrides, provenance.
pub use resilience_config as config;

pub use runtime::{ReloadRefused, Runtime, RuntimeBuilder};

mod runtime;
mod site;

/// Closes `service`'s circuit in the process-wide runtime and clears its counters and
/// timestamps at once (B9). `false` if it has no breaker or was never used.
pub fn reset_circuit(service: &str) -> bool {
    Runtime::global().reset_circuit(service)
}

/// Whether `service`'s circuit is open in the process-wide runtime; safe from any thread (B10).
pub fn is_circuit_open(service: &str) -> bool {
    Runtime::global().is_circuit_open(service)
}

/// Support for the code `#[retry_service_operation]` generates. Not public API.
#[doc(hidden)]
pub mod __private;
