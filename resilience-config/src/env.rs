//! Reading the global environment variables (C1): where they come from ([`EnvSource`]) and
//! the strict, validated layer they make.

use crate::diagnostics::{shown, Diagnostic, DiagnosticKind, Diagnostics};
use crate::keys::{env_name, GlobalKey};
use crate::parse::{self, Secs};
use crate::source::{Source, Sourced};
use crate::suggest::{closest, with_words_of};
use resilience_core::backoff::BackoffStrategy;
use std::borrow::Borrow;
use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasher, Hash};

/// Where environment variables are read from: the process ([`ProcessEnv`]) or, in tests, a map.
pub trait EnvSource {
    /// The variable's value, or `None` when it is not set.
    fn var(&self, name: &str) -> Option<String>;

    /// Every variable name this source holds, so misspelt prefixed variables can be reported.
    /// The default lists none (no typo detection).
    fn var_names(&self) -> Vec<String> {
        Vec::new()
    }

    /// Whether the variable is set to bytes that are not valid UTF-8, so [`var`](Self::var)
    /// gave a lossy copy. Such a value is refused: a replaced byte could change its meaning
    /// (a service name no code uses). The default: never.
    fn is_lossy(&self, _name: &str) -> bool {
        false
    }
}

/// The real process environment. A value that is not valid UTF-8 is read lossily and
/// reported as invalid (see [`EnvSource::is_lossy`]), not silently ignored.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessEnv;

impl EnvSource for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var_os(name).map(|v| v.to_string_lossy().into_owned())
    }

    fn is_lossy(&self, name: &str) -> bool {
        std::env::var_os(name).is_some_and(|v| v.to_str().is_none())
    }

    fn var_names(&self) -> Vec<String> {
        std::env::vars_os()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect()
    }
}

impl<K, V, S> EnvSource for HashMap<K, V, S>
where
    K: Borrow<str> + Eq + Hash,
    V: AsRef<str>,
    S: BuildHasher,
{
    fn var(&self, name: &str) -> Option<String> {
        self.get(name).map(|v| v.as_ref().to_owned())
    }

    fn var_names(&self) -> Vec<String> {
        self.keys().map(|k| k.borrow().to_owned()).collect()
    }
}

impl<K, V> EnvSource for BTreeMap<K, V>
where
    K: Borrow<str> + Ord,
    V: AsRef<str>,
{
    fn var(&self, name: &str) -> Option<String> {
        self.get(name).map(|v| v.as_ref().to_owned())
    }

    fn var_names(&self) -> Vec<String> {
        self.keys().map(|k| k.borrow().to_owned()).collect()
    }
}

/// The global keys' effective values: the variable's value when it is set and valid, else the
/// key's documented default with [`Source::BuiltIn`] (C1).
///
/// An unset key does not override anything: each service keeps its own built-in value (C13).
#[derive(Debug, Clone, PartialEq)]
pub struct Globals {
    /// `retry_max_attempts` (default 3).
    pub max_attempts: Sourced<u32>,
    /// `retry_base_delay` in seconds (default 1.0).
    pub base_delay: Sourced<f64>,
    /// `retry_max_delay` in seconds (default 60.0).
    pub max_delay: Sourced<f64>,
    /// `retry_jitter` (default true).
    pub jitter: Sourced<bool>,
    /// `retry_backoff_strategy` (default exponential).
    pub backoff_strategy: Sourced<BackoffStrategy>,
    /// `circuit_breaker_failure_threshold` (default 5).
    pub failure_threshold: Sourced<u32>,
    /// `circuit_breaker_recovery_timeout` in seconds (default 60.0).
    pub recovery_timeout: Sourced<f64>,
    /// `circuit_breaker_cooldown` in seconds (default 30.0).
    pub cooldown: Sourced<f64>,
}

/// The global variables that were set and valid; `None` leaves lower layers in place.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct EnvLayer {
    pub(crate) max_attempts: Option<Sourced<u32>>,
    pub(crate) base_delay: Option<Sourced<f64>>,
    pub(crate) max_delay: Option<Sourced<f64>>,
    pub(crate) jitter: Option<Sourced<bool>>,
    pub(crate) backoff_strategy: Option<Sourced<BackoffStrategy>>,
    pub(crate) failure_threshold: Option<Sourced<u32>>,
    pub(crate) recovery_timeout: Option<Sourced<f64>>,
    pub(crate) cooldown: Option<Sourced<f64>>,
}

impl EnvLayer {
    /// Reads and validates every global variable under `prefix`. A bad value is reported and
    /// left out. Returns the layer and the raw overrides string, if set.
    pub(crate) fn load(
        source: &dyn EnvSource,
        prefix: &str,
        diags: &mut Diagnostics,
    ) -> (Self, Option<String>) {
        let mut read = Reader {
            source,
            prefix,
            diags,
        };
        let layer = Self {
            max_attempts: read.get(GlobalKey::MaxAttempts, |t| parse::count_text(t, 1)),
            base_delay: read.get(GlobalKey::BaseDelay, |t| {
                parse::secs_text(t, Secs::NonNegative)
            }),
            max_delay: read.get(GlobalKey::MaxDelay, |t| {
                parse::secs_text(t, Secs::NonNegative)
            }),
            jitter: read.get(GlobalKey::Jitter, parse::bool_text),
            backoff_strategy: read.get(GlobalKey::BackoffStrategy, parse::strategy_text),
            failure_threshold: read.get(GlobalKey::FailureThreshold, |t| parse::count_text(t, 1)),
            recovery_timeout: read.get(GlobalKey::RecoveryTimeout, |t| {
                parse::secs_text(t, Secs::NonNegative)
            }),
            cooldown: read.get(GlobalKey::Cooldown, |t| {
                parse::secs_text(t, Secs::NonNegative)
            }),
        };
        let overrides = read.raw(GlobalKey::ServiceOverrides);
        read.unknown_prefixed_vars();
        (layer, overrides)
    }

    /// The layer over the keys' documented defaults.
    pub(crate) fn globals(&self) -> Globals {
        fn or<T: Copy>(set: Option<Sourced<T>>, default: T) -> Sourced<T> {
            set.unwrap_or(Sourced::new(default, Source::BuiltIn))
        }
        Globals {
            max_attempts: or(self.max_attempts, 3),
            base_delay: or(self.base_delay, 1.0),
            max_delay: or(self.max_delay, 60.0),
            jitter: or(self.jitter, true),
            backoff_strategy: or(self.backoff_strategy, BackoffStrategy::Exponential),
            failure_threshold: or(self.failure_threshold, 5),
            recovery_timeout: or(self.recovery_timeout, 60.0),
            cooldown: or(self.cooldown, 30.0),
        }
    }
}

struct Reader<'a> {
    source: &'a dyn EnvSource,
    prefix: &'a str,
    diags: &'a mut Diagnostics,
}

impl Reader<'_> {
    /// The variable's raw value; empty or blank counts as unset (`VAR=` is a common way to
    /// clear a variable in shells and compose files). A value that is not valid UTF-8 is
    /// reported and left out.
    fn raw(&mut self, key: GlobalKey) -> Option<String> {
        let name = key.env_var(self.prefix);
        let value = self.source.var(name).filter(|v| !v.trim().is_empty())?;
        if !self.source.is_lossy(name) {
            return Some(value);
        }
        let outcome = match key {
            GlobalKey::ServiceOverrides => "all overrides ignored",
            _ => "ignored, each service keeps its own value",
        };
        self.diags.push(Diagnostic::env(
            DiagnosticKind::InvalidValue,
            name,
            format!("is not valid UTF-8, got {}; {outcome}", shown(&value)),
        ));
        None
    }

    fn get<T>(
        &mut self,
        key: GlobalKey,
        parse: impl FnOnce(&str) -> Result<T, String>,
    ) -> Option<Sourced<T>> {
        let name = key.env_var(self.prefix);
        let text = self.raw(key)?;
        match parse(&text) {
            Ok(value) => Some(Sourced::new(value, Source::Env(name))),
            Err(why) => {
                self.diags.push(Diagnostic::env(
                    DiagnosticKind::InvalidValue,
                    name,
                    format!("{why}; ignored, each service keeps its own value"),
                ));
                None
            }
        }
    }

    /// Reports set variables in the `PREFIX_RETRY_` / `PREFIX_CB_` families that are not keys.
    fn unknown_prefixed_vars(&mut self) {
        let known: Vec<&str> = GlobalKey::ALL
            .iter()
            .map(|k| k.env_var(self.prefix))
            .collect();
        let families = [
            env_name(self.prefix, "RETRY_"),
            env_name(self.prefix, "CB_"),
        ];
        let mut names = self.source.var_names();
        names.sort();
        for name in names {
            let Some(family) = families.iter().find(|f| name.starts_with(f.as_str())) else {
                continue;
            };
            if known.contains(&name.as_str()) {
                continue;
            }
            let overrides = GlobalKey::ServiceOverrides.env_var(self.prefix);
            // Only the part after the family counts: a prefix may hold any word
            // (`COOLDOWN_SVC_RETRY_MAX_ATTEMPS` is a typo of `…_MAX_ATTEMPTS`, not a cooldown).
            let typed = &name[family.len()..];
            let hint = if typed.contains("HALF_OPEN") {
                format!(
                    "; it is set per service in {overrides} (circuit_breaker.half_open_max_successes)"
                )
            } else if typed.contains("COOLDOWN") {
                // The cooldown has a global variable (C4), just not under this name.
                let cooldown = GlobalKey::Cooldown.env_var(self.prefix);
                format!(
                    "; did you mean {cooldown} (every service)? Per service, set circuit_breaker.cooldown_seconds in {overrides}"
                )
            } else if typed.ends_with("TOTAL_TIMEOUT") {
                format!(
                    "; the total timeout is set per service in {overrides} (retry.total_timeout)"
                )
            } else {
                // The shared prefix would make any two names of a family look alike
                // (`…_RETRY_API_TOKEN` is not a typo of `…_JITTER`).
                let suffixes: Vec<&str> = known
                    .iter()
                    .filter_map(|k| k.strip_prefix(family.as_str()))
                    .collect();
                closest(typed, &suffixes)
                    .or_else(|| with_words_of(typed, &suffixes))
                    .map(|k| format!("; did you mean {family}{k}?"))
                    .unwrap_or_default()
            };
            let message = format!("not a configuration variable; ignored{hint}");
            self.diags.push(Diagnostic::env(
                DiagnosticKind::UnknownKey,
                resilience_core::sanitize(&name),
                message,
            ));
        }
    }
}
