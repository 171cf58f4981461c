//! The built-in per-service table (C3) and the defaults of each category.
//!
//! | category | strategy | attempts | base_delay | max_delay | jitter | why |
//! |---|---|---|---|---|---|---|
//! | `provider` | jitter | 3 | 1.0 s | 60.0 s | yes | model providers rate-limit; spread retries over up to a minute |
//! | `database` | fixed | 3 | 0.5 s | 5.0 s | no | local blips (locks, pool churn) clear fast; a short constant wait |
//! | `network` | exponential | 5 | 1.0 s | 30.0 s | yes | remote outages last longer; back off 1, 2, 4, 8 s (+jitter), never over 30 s |
//!
//! Every category shares the rest: total timeout 300 s, `retry_on_idempotent_only` true,
//! breaker enabled with threshold 5, recovery 60 s, cooldown 30 s and one half-open probe.
//! Unknown services get a copy of the `database` row (C11).

use resilience_core::backoff::BackoffStrategy;
use std::fmt;

/// The kind of dependency a service talks to, which decides its default retry shape (C3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Category {
    /// A model provider (LLM API).
    Provider,
    /// The application's database.
    Database,
    /// A remote service over the network.
    Network,
}

impl Category {
    /// The lowercase name: `provider`, `database`, `network`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Provider => "provider",
            Self::Database => "database",
            Self::Network => "network",
        }
    }

    /// The category's retry defaults.
    pub fn retry_defaults(self) -> CategoryDefaults {
        match self {
            Self::Provider => CategoryDefaults {
                max_attempts: 3,
                backoff_strategy: BackoffStrategy::Jitter,
                base_delay: 1.0,
                max_delay: 60.0,
                jitter: true,
            },
            Self::Database => CategoryDefaults {
                max_attempts: 3,
                backoff_strategy: BackoffStrategy::Fixed,
                base_delay: 0.5,
                max_delay: 5.0,
                jitter: false,
            },
            Self::Network => CategoryDefaults {
                max_attempts: 5,
                backoff_strategy: BackoffStrategy::Exponential,
                base_delay: 1.0,
                max_delay: 30.0,
                jitter: true,
            },
        }
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The retry values a category starts from (times in seconds).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CategoryDefaults {
    /// Attempts in all.
    pub max_attempts: u32,
    /// The wait strategy.
    pub backoff_strategy: BackoffStrategy,
    /// Base delay, seconds.
    pub base_delay: f64,
    /// Cap on every delay, seconds.
    pub max_delay: f64,
    /// Extra random jitter.
    pub jitter: bool,
}

/// Shared by every category: total wall-clock cap per call, seconds (R7).
pub const DEFAULT_TOTAL_TIMEOUT: f64 = 300.0;
/// Shared by every category: consecutive failures that open the circuit.
pub const DEFAULT_FAILURE_THRESHOLD: u32 = 5;
/// Shared by every category: seconds an open circuit waits before probing.
pub const DEFAULT_RECOVERY_TIMEOUT: f64 = 60.0;
/// Shared by every category: minimum seconds between half-open entries.
pub const DEFAULT_COOLDOWN: f64 = 30.0;
/// Shared by every category: probes admitted in half-open, and successes needed to close.
pub const DEFAULT_HALF_OPEN_MAX_SUCCESSES: u32 = 1;

/// The 11 built-in services and their categories, in the seed's order (C3).
pub const BUILT_IN_SERVICES: [(&str, Category); 11] = [
    ("plan_service", Category::Provider),
    ("plan_lifecycle_service", Category::Database),
    ("context_service", Category::Database),
    ("session_service", Category::Database),
    ("checkpoint_service", Category::Database),
    ("trace_service", Category::Database),
    ("actor_service", Category::Database),
    ("resource_registry_service", Category::Database),
    ("decision_service", Category::Database),
    ("vector_store_service", Category::Network),
    ("error_recovery_service", Category::Database),
];

/// The category of a built-in service, or `None` for any other name.
pub fn built_in_category(service: &str) -> Option<Category> {
    BUILT_IN_SERVICES
        .iter()
        .find(|(name, _)| *name == service)
        .map(|&(_, c)| c)
}
