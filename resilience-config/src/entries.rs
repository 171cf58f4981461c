//! A flat, ordered view of a service's settings, for tools that print or serialise them.

use crate::settings::ServiceSettings;
use crate::source::{Source, Sourced};
use resilience_core::backoff::BackoffStrategy;
use std::fmt;

/// Which part of an override a setting belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Section {
    /// `retry`.
    Retry,
    /// `circuit_breaker`.
    CircuitBreaker,
}

impl Section {
    /// `retry` or `circuit_breaker`, as in the JSON overrides.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Retry => "retry",
            Self::CircuitBreaker => "circuit_breaker",
        }
    }
}

/// A setting's value, typed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SettingValue {
    /// A count (attempts, threshold, probes).
    Count(u32),
    /// A time in seconds.
    Seconds(f64),
    /// A flag.
    Flag(bool),
    /// A wait strategy.
    Strategy(BackoffStrategy),
}

impl fmt::Display for SettingValue {
    /// Counts and flags as is, seconds with at least one decimal and ` s`, strategies by name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Count(n) => write!(f, "{n}"),
            Self::Seconds(s) => write!(f, "{s:?} s"),
            Self::Flag(b) => write!(f, "{b}"),
            Self::Strategy(s) => write!(f, "{s}"),
        }
    }
}

/// One setting of one service: where it lives, its JSON key, its value and its source.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Entry {
    /// `retry` or `circuit_breaker`.
    pub section: Section,
    /// The key, in the JSON overrides' spelling (`max_attempts`, `cooldown_seconds`, …).
    pub key: &'static str,
    /// The effective value.
    pub value: SettingValue,
    /// Where it came from.
    pub source: Source,
}

impl ServiceSettings {
    /// Every setting in a fixed order: the seven retry keys, then `enabled` and the four
    /// breaker keys.
    pub fn entries(&self) -> [Entry; 12] {
        use Section::{CircuitBreaker as B, Retry as R};
        use SettingValue::{Count, Flag, Seconds, Strategy};
        fn e<T: Copy>(
            section: Section,
            key: &'static str,
            v: Sourced<T>,
            f: fn(T) -> SettingValue,
        ) -> Entry {
            Entry {
                section,
                key,
                value: f(v.value),
                source: v.source,
            }
        }
        [
            e(R, "max_attempts", self.max_attempts, Count),
            e(R, "base_delay", self.base_delay, Seconds),
            e(R, "max_delay", self.max_delay, Seconds),
            e(R, "jitter", self.jitter, Flag),
            e(R, "backoff_strategy", self.backoff_strategy, Strategy),
            e(R, "total_timeout", self.total_timeout, Seconds),
            e(
                R,
                "retry_on_idempotent_only",
                self.retry_on_idempotent_only,
                Flag,
            ),
            e(B, "enabled", self.enabled, Flag),
            e(B, "failure_threshold", self.failure_threshold, Count),
            e(B, "recovery_timeout", self.recovery_timeout, Seconds),
            e(B, "cooldown_seconds", self.cooldown_seconds, Seconds),
            e(
                B,
                "half_open_max_successes",
                self.half_open_max_successes,
                Count,
            ),
        ]
    }
}
