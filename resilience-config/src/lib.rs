//! Configuration of the `resilience` framework: environment variables, JSON per-service
//! overrides, validation, and precedence with provenance (C1–C13, R11).
//!
//! Every service's effective settings are built from four layers, lowest first (C13):
//!
//! 1. the built-in table ([`table`]; unknown services get the database row, C11);
//! 2. the function's `#[retry_service_operation(...)]` arguments ([`CodeDeclared`]);
//! 3. the global variables that are actually set (`CLEVERAGENTS_RETRY_MAX_ATTEMPTS`, …, see
//!    [`GlobalKey`]);
//! 4. the service's entry in `CLEVERAGENTS_RETRY_SERVICE_OVERRIDES` (JSON, C2).
//!
//! Each value carries its [`Source`], and [`ServiceSettings`] builds core's validated
//! [`RetryPolicy`](resilience_core::retry::RetryPolicy) and
//! [`BreakerConfig`](resilience_core::breaker::BreakerConfig).
//!
//! Parsing is strict: `3.5` is not an attempt count, booleans are `true`/`false`/`1`/`0`/
//! `yes`/`no`, times are finite seconds `>= 0`. A bad value never stops loading: it is
//! reported as a [`Diagnostic`] naming the variable or JSON path (values sanitized) and a
//! `tracing` warning, and the lower layer's value is kept. A variable set to an empty string
//! counts as unset.
//!
//! `cooldown_seconds` and `half_open_max_successes` are per-service JSON keys (C4);
//! `half_open_max_successes` has no environment variable at all, while `CLEVERAGENTS_CB_COOLDOWN`
//! (the seed's `circuit_breaker_cooldown`) sets the cooldown of every service at the env layer.

mod config;
mod diagnostics;
mod entries;
mod env;
mod keys;
mod members;
mod missing;
mod overrides;
mod parse;
mod plan;
mod settings;
mod source;
mod suggest;
pub mod table;

pub use config::Config;
pub use diagnostics::{Diagnostic, DiagnosticKind};
pub use entries::{Entry, Section, SettingValue};
pub use env::{EnvSource, Globals, ProcessEnv};
pub use keys::{GlobalKey, DEFAULT_PREFIX};
pub use overrides::{BREAKER_KEYS, MAX_OVERRIDES_LEN, RETRY_KEYS};
pub use plan::{is_read_only_plan_operation, READ_ONLY_PLAN_PHASES};
pub use settings::{CodeDeclared, ServiceSettings};
pub use source::{Source, Sourced};
pub use table::Category;
