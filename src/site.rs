//! Call sites of annotated fns: each resolves its guard once and caches it, so a guarded call
//! does no registry lookup on its hot path.

use crate::runtime::Runtime;
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
        self.guard
            .get_or_init(|| Runtime::global().register_site(self))
    }
}
