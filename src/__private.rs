//! What macro expansions name, by absolute path. Not public API: may change in any release.

pub use ::core::future::Future;
pub use ::core::result::Result;
pub use resilience_core::retry::{Idempotent, NotIdempotent};
pub use resilience_core::ResilienceError;
