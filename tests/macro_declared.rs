//! What the attribute hands the runtime: service, operation, idempotency and the code-declared
//! settings (C13's "code" layer), including `#[service_defaults]` merging (M5) and the
//! `crate = "path"` override.
//!
//! Every fn here uses `crate = "crate::recording"`, a stand-in runtime that records each call
//! site instead of guarding it, so the exact values are asserted without a breaker or a
//! registry. A fn whose expansion ignored `crate` would reach `::resilience` and record
//! nothing.

mod macro_support;

use macro_support::ApiError;
use resilience::backoff::BackoffStrategy;
use resilience::{retry_service_operation, service_defaults};

/// A runtime with the names the expansion uses, which records instead of guarding.
mod recording {
    pub mod __private {
        pub use ::core::future::Future;
        pub use ::core::ops::ControlFlow;
        pub use ::core::option::Option;
        pub use ::core::result::Result;
        pub use ::resilience::backoff::BackoffStrategy;
        pub use ::resilience::retry::{Idempotency, Idempotent, NotIdempotent};
        use std::cell::RefCell;

        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct CodeDeclared {
            pub max_attempts: Option<u32>,
            pub backoff: Option<BackoffStrategy>,
            pub base_delay: Option<f64>,
            pub max_delay: Option<f64>,
            pub jitter: Option<bool>,
            pub total_timeout: Option<f64>,
        }

        impl CodeDeclared {
            pub const EMPTY: Self = Self {
                max_attempts: None,
                backoff: None,
                base_delay: None,
                max_delay: None,
                jitter: None,
                total_timeout: None,
            };
        }

        pub struct CallSite {
            service: &'static str,
            operation: &'static str,
            declared: CodeDeclared,
        }

        impl CallSite {
            pub const fn new(
                service: &'static str,
                operation: &'static str,
                declared: CodeDeclared,
            ) -> Self {
                Self {
                    service,
                    operation,
                    declared,
                }
            }
        }

        /// One guarded call as the runtime saw it.
        #[derive(Clone, Debug, PartialEq)]
        pub struct Seen {
            pub service: &'static str,
            pub operation: &'static str,
            pub declared: CodeDeclared,
            pub idempotent: bool,
        }

        thread_local! {
            static SEEN: RefCell<Vec<Seen>> = const { RefCell::new(Vec::new()) };
        }

        /// The calls recorded on this thread since the last `take`.
        pub fn take() -> Vec<Seen> {
            SEEN.with(|s| s.take())
        }

        fn record<I: Idempotency>(site: &'static CallSite) {
            SEEN.with(|s| {
                s.borrow_mut().push(Seen {
                    service: site.service,
                    operation: site.operation,
                    declared: site.declared,
                    idempotent: I::IDEMPOTENT,
                })
            });
        }

        pub struct AsyncLoop;

        pub fn async_loop(site: &'static CallSite) -> AsyncLoop {
            record::<Idempotent>(site);
            AsyncLoop
        }

        impl AsyncLoop {
            pub async fn step<T, E>(
                &mut self,
                f: impl Future<Output = Result<T, E>>,
            ) -> ControlFlow<Result<T, E>> {
                ControlFlow::Break(f.await)
            }
        }

        pub async fn step<T, E>(
            driver: &mut AsyncLoop,
            f: impl Future<Output = Result<T, E>>,
        ) -> ControlFlow<Result<T, E>> {
            driver.step(f).await
        }

        pub fn unreachable_attempt<R>() -> R {
            unreachable!()
        }

        #[allow(clippy::extra_unused_type_parameters)] // `N` names the argument, as in the real one
        pub fn fresh<T: Clone, N>(original: &T) -> T {
            original.clone()
        }

        pub fn sync_retry<T, E>(
            site: &'static CallSite,
            mut f: impl FnMut() -> Result<T, E>,
        ) -> Result<T, E> {
            record::<Idempotent>(site);
            f()
        }

        pub fn sync_once<T, E>(
            site: &'static CallSite,
            f: impl FnOnce() -> Result<T, E>,
        ) -> Result<T, E> {
            record::<NotIdempotent>(site);
            f()
        }

        pub async fn async_once<T, E>(
            site: &'static CallSite,
            f: impl Future<Output = Result<T, E>>,
        ) -> Result<T, E> {
            record::<NotIdempotent>(site);
            f.await
        }
    }
}

use recording::__private::{take, CodeDeclared, Seen};

fn only_call() -> Seen {
    let mut seen = take();
    assert_eq!(
        seen.len(),
        1,
        "expected exactly one guarded call, got {seen:?}"
    );
    seen.remove(0)
}

#[retry_service_operation(service = "plan_service", idempotent, crate = "crate::recording")]
fn get_plan(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

#[test]
fn crate_path_override_routes_the_expansion_through_the_given_path() {
    assert_eq!(get_plan(7), Ok(7));
    let seen = only_call();
    assert_eq!(seen.service, "plan_service");
    assert!(seen.idempotent);
}

#[test]
fn c13_undeclared_settings_stay_undeclared_for_the_runtime_to_fill() {
    // No built-in default (not even total_timeout's 300 s) is baked into the expansion: the
    // runtime's precedence decides (C13).
    get_plan(1).unwrap();
    assert_eq!(only_call().declared, CodeDeclared::EMPTY);
}

#[retry_service_operation(
    service = "plan_service",
    idempotent,
    max_attempts = 4,
    backoff = "fixed",
    base_delay = 0.5,
    max_delay = 2,
    jitter = false,
    total_timeout = 30,
    crate = "crate::recording"
)]
fn tuned() -> Result<(), ApiError> {
    Ok(())
}

#[test]
fn c13_attribute_arguments_are_the_code_declared_layer() {
    tuned().unwrap();
    assert_eq!(
        only_call().declared,
        CodeDeclared {
            max_attempts: Some(4),
            backoff: Some(BackoffStrategy::Fixed),
            base_delay: Some(0.5),
            // Integer literals are accepted where seconds are meant.
            max_delay: Some(2.0),
            jitter: Some(false),
            total_timeout: Some(30.0),
        }
    );
}

#[retry_service_operation(
    service = "plan_service",
    idempotent,
    max_attempts = 4u8,
    base_delay = 1u64,
    max_delay = 2.5f64,
    total_timeout = 30f32,
    crate = "crate::recording"
)]
fn tuned_with_type_suffixes() -> Result<(), ApiError> {
    Ok(())
}

#[test]
fn c13_a_number_s_type_suffix_keeps_its_value() {
    // A type suffix is only the literal's type: the value is the digits. A unit-like suffix
    // (`30ms`) is a compile error instead (ui/fail/number-with-unit-suffix.rs).
    tuned_with_type_suffixes().unwrap();
    assert_eq!(
        only_call().declared,
        CodeDeclared {
            max_attempts: Some(4),
            base_delay: Some(1.0),
            max_delay: Some(2.5),
            total_timeout: Some(30.0),
            ..CodeDeclared::EMPTY
        }
    );
}

#[retry_service_operation(service = "plan_service", crate = "crate::recording")]
fn r#type() -> Result<(), ApiError> {
    Ok(())
}

#[retry_service_operation(
    service = "plan_service",
    operation = "plans.apply",
    total_timeout = 2.5,
    crate = "crate::recording"
)]
fn apply_plan() -> Result<(), ApiError> {
    Ok(())
}

#[test]
fn m2_operation_defaults_to_the_fn_name_and_writes_are_not_idempotent() {
    r#type().unwrap();
    let seen = only_call();
    assert_eq!(seen.operation, "type");
    assert!(!seen.idempotent);

    apply_plan().unwrap();
    let seen = only_call();
    assert_eq!(seen.operation, "plans.apply");
    assert!(!seen.idempotent);
    // total_timeout bounds a write's one attempt too (an async one is cancelled at the deadline:
    // `r7_m2_the_attributes_total_timeout_cancels_a_write_still_running_at_the_deadline`), so it
    // is allowed without `idempotent`.
    assert_eq!(seen.declared.total_timeout, Some(2.5));
}

struct PlanClient;

#[service_defaults(
    service = "plan_service",
    total_timeout = 30,
    max_attempts = 4,
    backoff = "fixed",
    crate = "crate::recording"
)]
impl PlanClient {
    #[retry_service_operation(idempotent)]
    fn get(&self) -> Result<(), ApiError> {
        Ok(())
    }

    #[resilience::retry_service_operation(idempotent, max_attempts = 2, service = "plan_cache")]
    async fn get_cached(&self) -> Result<(), ApiError> {
        Ok(())
    }

    #[::resilience::retry_service_operation]
    async fn apply(&self) -> Result<(), ApiError> {
        Ok(())
    }
}

#[tokio::test]
async fn m5_impl_defaults_apply_and_per_fn_arguments_override_them() {
    let c = PlanClient;
    c.get().unwrap();
    let seen = only_call();
    assert_eq!((seen.service, seen.operation), ("plan_service", "get"));
    assert_eq!(
        seen.declared,
        CodeDeclared {
            max_attempts: Some(4),
            backoff: Some(BackoffStrategy::Fixed),
            total_timeout: Some(30.0),
            ..CodeDeclared::EMPTY
        }
    );

    c.get_cached().await.unwrap();
    let seen = only_call();
    assert_eq!(seen.service, "plan_cache");
    assert_eq!(seen.declared.max_attempts, Some(2));
    assert_eq!(seen.declared.backoff, Some(BackoffStrategy::Fixed));

    // A write inherits the service and the deadline, never the retry tuning (M2 holds).
    c.apply().await.unwrap();
    let seen = only_call();
    assert!(!seen.idempotent);
    assert_eq!(seen.service, "plan_service");
    assert_eq!(
        seen.declared,
        CodeDeclared {
            total_timeout: Some(30.0),
            ..CodeDeclared::EMPTY
        }
    );
}

#[service_defaults(service = "plan_service", jitter = false, crate = "crate::recording")]
mod plans {
    use super::ApiError;
    use resilience::retry_service_operation;

    #[retry_service_operation(idempotent)]
    pub fn list() -> Result<(), ApiError> {
        Ok(())
    }

    pub struct Store;

    impl Store {
        #[retry_service_operation(idempotent, jitter = true)]
        pub fn load(&self) -> Result<(), ApiError> {
            Ok(())
        }
    }

    #[resilience::service_defaults(service = "audit_service", max_attempts = 6)]
    pub mod audit {
        use super::ApiError;

        #[resilience::retry_service_operation(idempotent)]
        pub fn read() -> Result<(), ApiError> {
            Ok(())
        }
    }
}

#[test]
fn m5_inline_mod_defaults_reach_fns_and_impls_inside_and_nest() {
    plans::list().unwrap();
    let seen = only_call();
    assert_eq!(seen.service, "plan_service");
    assert_eq!(seen.declared.jitter, Some(false));

    plans::Store.load().unwrap();
    assert_eq!(only_call().declared.jitter, Some(true));

    // The inner defaults win over the outer ones; the outer ones fill the rest (here the
    // crate path, which is why this call is recorded at all).
    plans::audit::read().unwrap();
    let seen = only_call();
    assert_eq!(seen.service, "audit_service");
    assert_eq!(seen.declared.max_attempts, Some(6));
    assert_eq!(seen.declared.jitter, Some(false));
}

#[service_defaults(service = "plan_service", jitter = false, crate = "crate::recording")]
mod renamed {
    use super::ApiError;
    use resilience::service_defaults as defaults_for;

    // The outer #[service_defaults] does not know this name, so both append their defaults
    // to the fn's attribute; they used to replace each other, the outer ones lost.
    #[defaults_for(max_attempts = 6)]
    pub mod audit {
        use super::ApiError;

        #[resilience::retry_service_operation(idempotent)]
        pub fn read() -> Result<(), ApiError> {
            Ok(())
        }
    }

    #[defaults_for(service = "audit_service")]
    pub mod billing {
        use super::ApiError;

        #[resilience::retry_service_operation(idempotent)]
        pub fn read() -> Result<(), ApiError> {
            Ok(())
        }
    }

    #[resilience::retry_service_operation(idempotent)]
    pub fn list() -> Result<(), ApiError> {
        Ok(())
    }
}

#[test]
fn m5_nested_defaults_under_another_name_merge_with_the_outer_ones() {
    renamed::audit::read().unwrap();
    let seen = only_call();
    assert_eq!(seen.service, "plan_service", "the outer service fills in");
    assert_eq!(seen.declared.max_attempts, Some(6));
    assert_eq!(seen.declared.jitter, Some(false));

    renamed::billing::read().unwrap();
    assert_eq!(
        only_call().service,
        "audit_service",
        "the inner service wins"
    );

    renamed::list().unwrap();
    assert_eq!(only_call().service, "plan_service");
}
