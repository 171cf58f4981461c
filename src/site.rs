//! Call sites of annotated fns: each resolves its guard once and caches it, so a guarded call
//! does no registry lookup on its hot path.

use crate::runtime::{log_near_miss, log_site_problem, Runtime};
use resilience_config::CodeDeclared;
use resilience_core::retry::ServiceGuard;
use std::sync::OnceLock;

/// One annotated fn: its service, operation name and declared values, and its cached guard.
#[derive(Debug)]
pub struct CallSite {
    service: &'static str,
    operation: &'static str,
    declared: CodeDeclared,
    // A plain reference, not an `Arc`: the `Sync` check of every expansion's `static` then
    // proves `ServiceGuard: Sync` only, not `Send` as well (~0.1 M rustc instructions per
    // annotated fn, issue 4).
    guard: OnceLock<&'static ServiceGuard>,
}

impl CallSite {
    /// A call site; `const` so expansions can put it in a `static`.
    pub const fn new(
        service: &'static str,
        operation: &'static str,
        declared: CodeDeclared,
    ) -> Self {
        Self {
            service,
            operation,
            declared,
            guard: OnceLock::new(),
        }
    }

    /// The service name.
    pub fn service(&self) -> &'static str {
        self.service
    }

    /// The operation name (the fn name unless `operation = "…"` was given).
    #[inline]
    pub fn operation(&self) -> &'static str {
        self.operation
    }

    /// The values declared in code.
    pub fn declared(&self) -> &CodeDeclared {
        &self.declared
    }

    /// This site's guard: the service's breaker with this site's retry policy. Resolved on
    /// first use against the default runtime, then a single atomic load.
    #[inline]
    pub fn guard(&'static self) -> &'static ServiceGuard {
        match self.guard.get() {
            Some(guard) => guard,
            None => self.resolve(),
        }
    }

    /// The first use: nothing that may log runs inside this site's initialiser. A `tracing`
    /// subscriber that ships logs through a guarded call would re-enter it, and a re-entered
    /// `OnceLock` initialiser blocks forever. So the runtime's first load (which logs bad env
    /// values, C8) happens before it, and an invalid declared policy is logged after it.
    #[cold]
    #[inline(never)]
    fn resolve(&'static self) -> &'static ServiceGuard {
        let runtime = Runtime::global();
        let mut problem = None;
        let guard = *self.guard.get_or_init(|| {
            let (guard, found) = runtime.register_site(self);
            problem = found;
            guard
        });
        if let Some(problem) = problem {
            log_site_problem(self, &problem);
        }
        if let Some(near) = runtime.near_miss_service(self.service()) {
            log_near_miss(self, &near);
        }
        guard
    }
}
