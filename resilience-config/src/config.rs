//! The loaded configuration and per-service resolution with provenance (C11, C13).

use crate::diagnostics::{Diagnostic, Diagnostics, Note};
use crate::env::{EnvLayer, EnvSource, Globals, ProcessEnv};
use crate::keys::{GlobalKey, DEFAULT_PREFIX};
use crate::overrides::{self, ServiceOverride};
use crate::settings::{CodeDeclared, ServiceSettings};
use crate::table::BUILT_IN_SERVICES;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The configuration read from the environment once: validated global variables, validated
/// per-service JSON overrides, and every problem found on the way.
///
/// Cheap to clone (one `Arc`). Loading never fails: a bad value is reported in
/// [`diagnostics`](Self::diagnostics) (and as a `tracing` warning) and the lower layer's value
/// is kept.
///
/// ```
/// use resilience_config::{CodeDeclared, Config, Source};
/// use std::collections::HashMap;
///
/// let env = HashMap::from([(
///     "CLEVERAGENTS_RETRY_SERVICE_OVERRIDES",
///     r#"{"plan_service": {"retry": {"max_attempts": 5}}}"#,
/// )]);
/// let config = Config::from_source(&env);
/// let plan = config.resolve("plan_service", &CodeDeclared::EMPTY);
/// assert_eq!((plan.max_attempts.value, plan.max_attempts.source), (5, Source::Json));
/// assert!(config.diagnostics().is_empty());
/// ```
#[derive(Debug, Clone)]
pub struct Config {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    prefix: String,
    env: EnvLayer,
    overrides: BTreeMap<String, ServiceOverride>,
    diagnostics: Vec<Diagnostic>,
    /// Debug-level notes, logged with the diagnostics (never while loading).
    notes: Vec<Note>,
}

impl Config {
    /// Reads the real process environment under the `CLEVERAGENTS` prefix.
    pub fn from_env() -> Self {
        Self::from_source(&ProcessEnv)
    }

    /// As [`from_env`](Self::from_env), but logs nothing: the caller logs the diagnostics
    /// later with [`log_diagnostics`](Self::log_diagnostics). For a loader that runs inside a
    /// one-time initialiser (the process-wide runtime), where a `tracing` subscriber that
    /// makes a guarded call from its event handler would re-enter the initialiser.
    pub fn from_env_unlogged() -> Self {
        Self::load(DEFAULT_PREFIX, &ProcessEnv)
    }

    /// Emits one `tracing` warning (target `resilience_config`) per
    /// [diagnostic](Self::diagnostics), and one debug event per ignored `service_name` key
    /// (C7), in the order they were found. The constructors other than
    /// [`from_env_unlogged`](Self::from_env_unlogged) call it themselves.
    pub fn log_diagnostics(&self) {
        crate::diagnostics::log(&self.inner.diagnostics, &self.inner.notes);
    }

    /// Reads `source` under the `CLEVERAGENTS` prefix.
    pub fn from_source(source: &dyn EnvSource) -> Self {
        Self::with_prefix(DEFAULT_PREFIX, source)
    }

    /// Reads `source` under another prefix: `with_prefix("MYAPP", &ProcessEnv)` reads
    /// `MYAPP_RETRY_MAX_ATTEMPTS` and so on. An empty prefix reads `RETRY_MAX_ATTEMPTS`.
    pub fn with_prefix(prefix: &str, source: &dyn EnvSource) -> Self {
        let config = Self::load(prefix, source);
        config.log_diagnostics();
        config
    }

    fn load(prefix: &str, source: &dyn EnvSource) -> Self {
        let mut diags = Diagnostics::default();
        let (env, raw_overrides) = EnvLayer::load(source, prefix, &mut diags);
        let overrides = match raw_overrides {
            Some(raw) => overrides::parse(
                &raw,
                GlobalKey::ServiceOverrides.env_var(prefix),
                &mut diags,
            ),
            None => BTreeMap::new(),
        };
        let (diagnostics, notes) = diags.into_parts();
        Self {
            inner: Arc::new(Inner {
                prefix: prefix.to_owned(),
                env,
                overrides,
                diagnostics,
                notes,
            }),
        }
    }

    /// The environment variable prefix this configuration was read with.
    pub fn prefix(&self) -> &str {
        &self.inner.prefix
    }

    /// The effective settings of `service` for a function that declared `declared`:
    /// built-in table (or database defaults for an unknown service) < code-declared < global
    /// variables that were set < the service's JSON override (C13). Each value carries its
    /// [`Source`](crate::Source); the result is a fresh value the caller owns (C11).
    pub fn resolve(&self, service: &str, declared: &CodeDeclared) -> ServiceSettings {
        let mut s = ServiceSettings::defaults(service);
        s.apply_code_declared(declared);
        let env = &self.inner.env;
        if let Some(v) = env.max_attempts {
            s.max_attempts = v;
        }
        if let Some(v) = env.base_delay {
            s.base_delay = v;
        }
        if let Some(v) = env.max_delay {
            s.max_delay = v;
        }
        if let Some(v) = env.jitter {
            s.jitter = v;
        }
        if let Some(v) = env.backoff_strategy {
            s.backoff_strategy = v;
        }
        if let Some(v) = env.failure_threshold {
            s.failure_threshold = v;
        }
        if let Some(v) = env.recovery_timeout {
            s.recovery_timeout = v;
        }
        if let Some(v) = env.cooldown {
            s.cooldown_seconds = v;
        }
        if let Some(ov) = self.inner.overrides.get(service) {
            ov.apply(&mut s);
        }
        s
    }

    /// The built-in 11 services in table order, then every other service named in an applied
    /// override, sorted.
    pub fn service_names(&self) -> Vec<String> {
        let mut names: Vec<String> = BUILT_IN_SERVICES
            .iter()
            .map(|(n, _)| (*n).to_owned())
            .collect();
        for name in self.inner.overrides.keys() {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
        names
    }

    /// For a service that is neither built in nor given an override, the known name it is an
    /// edit or two from, if any: a typo in an attribute's `service` would otherwise run with
    /// the database row (C11) and a breaker of its own, and nothing would say so.
    ///
    /// ```
    /// let config = resilience_config::Config::default();
    /// assert_eq!(config.near_miss_service("plan_servce").as_deref(), Some("plan_service"));
    /// assert_eq!(config.near_miss_service("plan_service"), None);
    /// assert_eq!(config.near_miss_service("user_service"), None);
    /// ```
    pub fn near_miss_service(&self, service: &str) -> Option<String> {
        let names = self.service_names();
        if names.iter().any(|n| n == service) {
            return None;
        }
        let options: Vec<&str> = names.iter().map(String::as_str).collect();
        // An edit or two, as for a name in an override (`user_service` is 4 from `plan_service`).
        crate::suggest::closest_within(service, &options, |_| 2).map(str::to_owned)
    }

    /// Whether a (valid) JSON override applies to `service`.
    pub fn has_override(&self, service: &str) -> bool {
        self.inner.overrides.contains_key(service)
    }

    /// The global keys' effective values and sources (C1).
    pub fn globals(&self) -> Globals {
        self.inner.env.globals()
    }

    /// Every problem found while loading, in the order found. Empty when all is well.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.inner.diagnostics
    }
}

impl Default for Config {
    /// No variables set: the built-in table only.
    fn default() -> Self {
        Self::from_source(&BTreeMap::<String, String>::new())
    }
}
