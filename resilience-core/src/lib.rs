//! Mechanisms of the `resilience` framework.
//!
//! Most users depend on the `resilience` facade instead, which re-exports this crate and adds
//! configuration and the `#[retry_service_operation]` attribute.
//!
//! Modules, each one job:
//! - [`clock`] and [`sleep`]: injected time, with manual implementations for exact tests;
//! - [`backoff`]: validated wait strategies (R4, R5);
//! - [`breaker`]: the per-service circuit breaker (B1–B11);
//! - [`retry`]: the retry executor with the nesting guard and total deadline (R1, R2, R6–R8, R12);
//! - [`sanitize`](mod@sanitize): redaction of secrets from error text (S1–S5);
//! - [`registry`]: per-service wiring of policies and breakers (R9, R10);
//! - [`error`]: the framework's own refusals, [`ResilienceError`].

pub mod backoff;
pub mod breaker;
pub mod clock;
pub mod error;
pub mod registry;
pub mod retry;
pub mod sanitize;
pub mod sleep;
mod sync;

pub use error::{PolicyError, ResilienceError};
pub use sanitize::sanitize;
