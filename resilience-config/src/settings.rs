//! One service's effective settings, each with its source, and the core policies they build.

use crate::source::{Source, Sourced};
use crate::table::{self, built_in_category, Category};
use resilience_core::backoff::{Backoff, BackoffStrategy};
use resilience_core::breaker::BreakerConfig;
use resilience_core::retry::RetryPolicy;
use resilience_core::PolicyError;

/// Per-function values from `#[retry_service_operation(...)]` arguments: the "code-declared"
/// layer (C13). Times are in seconds. `None` leaves the lower layer in place.
///
/// Built by macro output in a `static`, hence public fields, `Copy` and [`EMPTY`](Self::EMPTY).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CodeDeclared {
    /// `max_attempts = n`.
    pub max_attempts: Option<u32>,
    /// `backoff = "…"`.
    pub backoff: Option<BackoffStrategy>,
    /// `base_delay = secs`.
    pub base_delay: Option<f64>,
    /// `max_delay = secs`.
    pub max_delay: Option<f64>,
    /// `jitter = bool`.
    pub jitter: Option<bool>,
    /// `total_timeout = secs`.
    pub total_timeout: Option<f64>,
}

impl CodeDeclared {
    /// Nothing declared. (A field added here needs the attribute's `expand::FIELDS` count
    /// and `Declared` in `resilience-macros` to follow.)
    pub const EMPTY: Self = Self {
        max_attempts: None,
        backoff: None,
        base_delay: None,
        max_delay: None,
        jitter: None,
        total_timeout: None,
    };
}

/// One service's effective settings, each value paired with its [`Source`] (C13).
///
/// Each call to [`Config::resolve`](crate::Config::resolve) returns a fresh value the caller
/// owns: changing it changes no other service and no default (C11).
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceSettings {
    /// The service's name.
    pub service: String,
    /// Its category (from the built-in table; `database` for unknown services).
    pub category: Category,
    /// Attempts in all, the first included.
    pub max_attempts: Sourced<u32>,
    /// Base delay, seconds (the strategy's floor applies when the policy is built, R5).
    pub base_delay: Sourced<f64>,
    /// Cap on every delay, seconds.
    pub max_delay: Sourced<f64>,
    /// Extra random jitter.
    pub jitter: Sourced<bool>,
    /// The wait strategy.
    pub backoff_strategy: Sourced<BackoffStrategy>,
    /// Wall-clock cap on one call with all its retries, seconds (R7).
    pub total_timeout: Sourced<f64>,
    /// Only idempotent operations retry (C12, default true).
    pub retry_on_idempotent_only: Sourced<bool>,
    /// Consecutive failures that open the circuit.
    pub failure_threshold: Sourced<u32>,
    /// Seconds an open circuit waits before probing.
    pub recovery_timeout: Sourced<f64>,
    /// Minimum seconds between half-open entries.
    pub cooldown_seconds: Sourced<f64>,
    /// Probes admitted in half-open, and successes needed to close.
    pub half_open_max_successes: Sourced<u32>,
    /// Whether the service has a circuit breaker at all (C5).
    pub enabled: Sourced<bool>,
}

impl ServiceSettings {
    /// The bottom layer for `service`: its built-in row ([`Source::BuiltIn`]), or for an
    /// unknown service a fresh copy of the database defaults ([`Source::Default`], C11).
    pub fn defaults(service: &str) -> Self {
        let (category, source) = match built_in_category(service) {
            Some(c) => (c, Source::BuiltIn),
            None => (Category::Database, Source::Default),
        };
        let d = category.retry_defaults();
        let s = |v| Sourced::new(v, source);
        Self {
            service: service.to_owned(),
            category,
            max_attempts: s(d.max_attempts),
            base_delay: Sourced::new(d.base_delay, source),
            max_delay: Sourced::new(d.max_delay, source),
            jitter: Sourced::new(d.jitter, source),
            backoff_strategy: Sourced::new(d.backoff_strategy, source),
            total_timeout: Sourced::new(table::DEFAULT_TOTAL_TIMEOUT, source),
            retry_on_idempotent_only: Sourced::new(true, source),
            failure_threshold: s(table::DEFAULT_FAILURE_THRESHOLD),
            recovery_timeout: Sourced::new(table::DEFAULT_RECOVERY_TIMEOUT, source),
            cooldown_seconds: Sourced::new(table::DEFAULT_COOLDOWN, source),
            half_open_max_successes: s(table::DEFAULT_HALF_OPEN_MAX_SUCCESSES),
            enabled: Sourced::new(true, source),
        }
    }

    /// Lays the code-declared values over these settings.
    pub fn apply_code_declared(&mut self, d: &CodeDeclared) {
        let src = Source::CodeDeclared;
        self.max_attempts.overlay(d.max_attempts, src);
        self.backoff_strategy.overlay(d.backoff, src);
        self.base_delay.overlay(d.base_delay, src);
        self.max_delay.overlay(d.max_delay, src);
        self.jitter.overlay(d.jitter, src);
        self.total_timeout.overlay(d.total_timeout, src);
    }

    /// The validated retry policy. Fails, naming the field, only for a code-declared value
    /// that cannot be meant (config values are validated when loaded).
    pub fn retry_policy(&self) -> Result<RetryPolicy, PolicyError> {
        let backoff = Backoff::from_secs(
            self.backoff_strategy.value,
            self.base_delay.value,
            self.max_delay.value,
            self.jitter.value,
        )?;
        Ok(
            RetryPolicy::from_secs(self.max_attempts.value, backoff, self.total_timeout.value)?
                .with_retry_on_idempotent_only(self.retry_on_idempotent_only.value),
        )
    }

    /// The validated breaker settings, or `None` when the breaker is disabled (C5).
    pub fn breaker_config(&self) -> Result<Option<BreakerConfig>, PolicyError> {
        if !self.enabled.value {
            return Ok(None);
        }
        BreakerConfig::from_secs(
            self.failure_threshold.value,
            self.recovery_timeout.value,
            self.cooldown_seconds.value,
            self.half_open_max_successes.value,
        )
        .map(Some)
    }
}
