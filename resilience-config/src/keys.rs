//! The global configuration keys, their environment variables and defaults (C1).

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};

/// The default environment variable prefix.
pub const DEFAULT_PREFIX: &str = "CLEVERAGENTS";

/// One global configuration key of the seed's table (C1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GlobalKey {
    /// `retry_max_attempts`: attempts in all, the first included.
    MaxAttempts,
    /// `retry_base_delay`: seconds.
    BaseDelay,
    /// `retry_max_delay`: seconds.
    MaxDelay,
    /// `retry_jitter`: add random jitter.
    Jitter,
    /// `retry_backoff_strategy`: exponential, linear, fixed, jitter or none.
    BackoffStrategy,
    /// `circuit_breaker_failure_threshold`: failures before the circuit opens.
    FailureThreshold,
    /// `circuit_breaker_recovery_timeout`: seconds before half-open.
    RecoveryTimeout,
    /// `circuit_breaker_cooldown`: minimum seconds between recovery attempts.
    Cooldown,
    /// `retry_service_overrides`: the JSON per-service overrides (C2).
    ServiceOverrides,
}

impl GlobalKey {
    /// Every key, in the seed's order.
    pub const ALL: [Self; 9] = [
        Self::MaxAttempts,
        Self::BaseDelay,
        Self::MaxDelay,
        Self::Jitter,
        Self::BackoffStrategy,
        Self::FailureThreshold,
        Self::RecoveryTimeout,
        Self::Cooldown,
        Self::ServiceOverrides,
    ];

    /// The key's name, as in the seed (`retry_max_attempts`, …).
    pub fn key(self) -> &'static str {
        self.spec().0
    }

    /// The variable name after the prefix and `_` (`RETRY_MAX_ATTEMPTS`, …).
    pub fn env_suffix(self) -> &'static str {
        self.spec().1
    }

    /// The documented default, as text (`3`, `1.0`, `{}`, …).
    pub fn default_text(self) -> &'static str {
        self.spec().2
    }

    /// One line on what the key does.
    pub fn description(self) -> &'static str {
        self.spec().3
    }

    /// The full variable name under `prefix` (`CLEVERAGENTS_RETRY_MAX_ATTEMPTS` by default).
    ///
    /// Interned: names under a custom prefix are leaked once per distinct name (nine per
    /// prefix), so [`Source::Env`](crate::Source::Env) can hold a `&'static str`.
    pub fn env_var(self, prefix: &str) -> &'static str {
        if prefix == DEFAULT_PREFIX {
            return self.default_env_var();
        }
        intern(env_name(prefix, self.env_suffix()))
    }

    fn default_env_var(self) -> &'static str {
        match self {
            Self::MaxAttempts => "CLEVERAGENTS_RETRY_MAX_ATTEMPTS",
            Self::BaseDelay => "CLEVERAGENTS_RETRY_BASE_DELAY",
            Self::MaxDelay => "CLEVERAGENTS_RETRY_MAX_DELAY",
            Self::Jitter => "CLEVERAGENTS_RETRY_JITTER",
            Self::BackoffStrategy => "CLEVERAGENTS_RETRY_BACKOFF_STRATEGY",
            Self::FailureThreshold => "CLEVERAGENTS_CB_FAILURE_THRESHOLD",
            Self::RecoveryTimeout => "CLEVERAGENTS_CB_RECOVERY_TIMEOUT",
            Self::Cooldown => "CLEVERAGENTS_CB_COOLDOWN",
            Self::ServiceOverrides => "CLEVERAGENTS_RETRY_SERVICE_OVERRIDES",
        }
    }

    fn spec(self) -> (&'static str, &'static str, &'static str, &'static str) {
        match self {
            Self::MaxAttempts => (
                "retry_max_attempts",
                "RETRY_MAX_ATTEMPTS",
                "3",
                "Maximum retry attempts",
            ),
            Self::BaseDelay => (
                "retry_base_delay",
                "RETRY_BASE_DELAY",
                "1.0",
                "Base delay (seconds)",
            ),
            Self::MaxDelay => (
                "retry_max_delay",
                "RETRY_MAX_DELAY",
                "60.0",
                "Max delay (seconds)",
            ),
            Self::Jitter => ("retry_jitter", "RETRY_JITTER", "true", "Add random jitter"),
            Self::BackoffStrategy => (
                "retry_backoff_strategy",
                "RETRY_BACKOFF_STRATEGY",
                "exponential",
                "Backoff: exponential, linear, fixed, jitter, none",
            ),
            Self::FailureThreshold => (
                "circuit_breaker_failure_threshold",
                "CB_FAILURE_THRESHOLD",
                "5",
                "Failures before circuit opens",
            ),
            Self::RecoveryTimeout => (
                "circuit_breaker_recovery_timeout",
                "CB_RECOVERY_TIMEOUT",
                "60.0",
                "Seconds before half-open",
            ),
            Self::Cooldown => (
                "circuit_breaker_cooldown",
                "CB_COOLDOWN",
                "30.0",
                "Min seconds between recovery",
            ),
            Self::ServiceOverrides => (
                "retry_service_overrides",
                "RETRY_SERVICE_OVERRIDES",
                "{}",
                "JSON per-service overrides",
            ),
        }
    }
}

/// `PREFIX_SUFFIX`, or just `SUFFIX` for an empty prefix. A trailing `_` on the prefix is
/// not doubled.
pub(crate) fn env_name(prefix: &str, suffix: &str) -> String {
    let prefix = prefix.trim_end_matches('_');
    if prefix.is_empty() {
        suffix.to_owned()
    } else {
        format!("{prefix}_{suffix}")
    }
}

/// Returns a `'static` copy of `name`, leaking each distinct name at most once.
fn intern(name: String) -> &'static str {
    static NAMES: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut names = NAMES
        .get_or_init(Default::default)
        .lock()
        // The set is only ever inserted into; a panic elsewhere cannot leave it inconsistent.
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(&known) = names.get(name.as_str()) {
        return known;
    }
    let leaked: &'static str = Box::leak(name.into_boxed_str());
    names.insert(leaked);
    leaked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c1_default_env_var_names_match_the_prefixed_suffix() {
        for key in GlobalKey::ALL {
            assert_eq!(
                key.env_var(DEFAULT_PREFIX),
                env_name(DEFAULT_PREFIX, key.env_suffix())
            );
        }
    }

    #[test]
    fn custom_prefix_names_are_interned_once() {
        let a = GlobalKey::Jitter.env_var("MYAPP");
        let b = GlobalKey::Jitter.env_var("MYAPP_");
        assert_eq!(a, "MYAPP_RETRY_JITTER");
        assert!(std::ptr::eq(a, b));
        assert_eq!(GlobalKey::Jitter.env_var(""), "RETRY_JITTER");
    }
}
