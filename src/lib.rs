//! # resilience
//!
//! Service calls that are safe to retry and safe to share.
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

pub use resilience_core::{backoff, breaker, clock, retry, sleep};
pub use resilience_core::{sanitize, PolicyError, ResilienceError};
pub use resilience_macros::{retry_service_operation, service_defaults};

/// Configuration: env vars, JSON overrides, provenance.
pub use resilience_config as config;

/// Support for the code `#[retry_service_operation]` generates. Not public API.
#[doc(hidden)]
pub mod __private;
