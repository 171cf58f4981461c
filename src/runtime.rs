//! The runtime behind annotated fns: config, the per-service registry, and every call site.

use crate::site::CallSite;
use parking_lot::{Mutex, RwLock};
use resilience_config::{CodeDeclared, Config, Diagnostic, DiagnosticKind};
use resilience_core::clock::Clock;
use resilience_core::error::PolicyError;
use resilience_core::registry::{Registry, RegistryBuilder, ServicePolicy};
use resilience_core::retry::{RetryAfterSink, RetryPolicy, ServiceGuard};
use resilience_core::sleep::{AsyncSleeper, Sleeper};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

static GLOBAL: OnceLock<Runtime> = OnceLock::new();

/// Config plus the registry it feeds, and the call sites that resolved through it.
///
/// The process-wide runtime ([`Runtime::global`]) loads from the environment on first use;
/// [`Runtime::install`] replaces it once, at startup, before any guarded call. Tests build
/// independent runtimes with [`Runtime::builder`].
pub struct Runtime {
    config: RwLock<Config>,
    // Bumped with every config a reload installs; written with `config` and `sites` both
    // locked, so reading it under either lock is consistent with what that lock guards.
    config_version: AtomicU64,
    registry: Registry,
    sites: Mutex<Vec<(&'static CallSite, &'static ServiceGuard)>>,
    // Serialises reloads, so two cannot interleave their updates.
    reloading: Mutex<()>,
}

/// Why a [`Runtime::reload`] was refused: every problem in the new config. The running policies
/// were kept.
#[derive(Debug, Clone)]
pub struct ReloadRefused {
    /// The problems, each naming its env var or JSON path.
    pub problems: Vec<Diagnostic>,
}

impl fmt::Display for ReloadRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "config reload refused; the last good policies stay in force:"
        )?;
        for p in &self.problems {
            write!(f, "\n  {}: {}", p.location(), p.message())?;
        }
        Ok(())
    }
}

impl std::error::Error for ReloadRefused {}

/// Whether a diagnostic means a value was rejected (as opposed to a warning such as a typo'd
/// key, which changes nothing).
fn is_rejection(d: &Diagnostic) -> bool {
    matches!(
        d.kind(),
        DiagnosticKind::InvalidValue
            | DiagnosticKind::TooLong
            | DiagnosticKind::InvalidJson
            | DiagnosticKind::NotAnObject
            | DiagnosticKind::MissingService
    )
}

/// The service-level policy from config; an invalid code-declared layer cannot reach here, so
/// an error means a bug in validation: fall back to the seed defaults and say so.
fn service_policy(config: &Config, service: &str) -> ServicePolicy {
    let settings = config.resolve(service, &CodeDeclared::EMPTY);
    let retry = settings.retry_policy();
    let breaker = settings.breaker_config();
    match (retry, breaker) {
        (Ok(retry), Ok(breaker)) => ServicePolicy { retry, breaker },
        (r, b) => {
            let why = r
                .err()
                .or(b.err())
                .map(|e| e.to_string())
                .unwrap_or_default();
            tracing::error!(target: "resilience::config", service, error = %why,
                "invalid effective policy; using the defaults");
            ServicePolicy::default()
        }
    }
}

/// A site's retry policy. If its declared values are invalid with the config in force, the
/// service's policy and the error, which the caller logs once it holds no lock and is in no
/// initialiser: a subscriber that ships logs through a guarded call may re-enter either.
fn site_policy(
    config: &Config,
    site: &CallSite,
    fallback: RetryPolicy,
) -> (RetryPolicy, Option<PolicyError>) {
    match config
        .resolve(site.service(), site.declared())
        .retry_policy()
    {
        Ok(policy) => (policy, None),
        Err(e) => (fallback, Some(e)),
    }
}

/// Logs what [`site_policy`] fell back from.
/// A call site's service is an edit or two from a known one: a typo runs with the default
/// policy and a breaker of its own. Logged once per site, after its initialiser.
pub(crate) fn log_near_miss(site: &CallSite, near: &str) {
    tracing::warn!(target: "resilience::config", service = site.service(),
        operation = site.operation(), did_you_mean = near,
        "service `{}` is neither built in nor overridden; did you mean `{near}`? It runs with \
         the default (database) policy and its own breaker. Give it an override to silence this",
        site.service());
}

pub(crate) fn log_site_problem(site: &CallSite, problem: &PolicyError) {
    tracing::error!(target: "resilience::config", service = site.service(),
        operation = site.operation(), error = %problem,
        "invalid declared policy; using the service's policy");
}

impl Runtime {
    /// A runtime on the real clock and sleepers, with this config.
    pub fn new(config: Config) -> Self {
        Self::builder(config).build()
    }

    /// A runtime loaded from the process environment.
    pub fn from_env() -> Self {
        Self::new(Config::from_env())
    }

    /// Starts building a runtime with injected time.
    pub fn builder(config: Config) -> RuntimeBuilder {
        let source = config.clone();
        RuntimeBuilder {
            config,
            registry: Registry::builder(move |service: &str| service_policy(&source, service)),
        }
    }

    /// The process-wide runtime, loaded from the environment on first use.
    pub fn global() -> &'static Runtime {
        let mut loaded = false;
        let runtime = GLOBAL.get_or_init(|| {
            loaded = true;
            Runtime::new(Config::from_env_unlogged())
        });
        // Logged once the runtime is in place, not inside its initialiser: a subscriber that
        // ships warnings through a guarded call would re-enter it and hang the process.
        if loaded {
            runtime.config().log_diagnostics();
        }
        runtime
    }

    /// Makes `runtime` the process-wide one. Works once, before anything used the global
    /// runtime; otherwise hands `runtime` back (boxed).
    pub fn install(runtime: Runtime) -> Result<&'static Runtime, Box<Runtime>> {
        let mut slot = Some(runtime);
        let installed = GLOBAL.get_or_init(|| slot.take().unwrap_or_else(Runtime::from_env));
        match slot {
            None => Ok(installed),
            Some(rejected) => Err(Box::new(rejected)),
        }
    }

    /// The registry of services.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The config in force.
    pub fn config(&self) -> Config {
        self.config.read().clone()
    }

    /// Closes `service`'s circuit and clears its counters (B9). `false` if it has no breaker or
    /// was never used.
    pub fn reset_circuit(&self, service: &str) -> bool {
        self.registry.reset_circuit(service)
    }

    /// Whether `service`'s circuit is open (B10).
    pub fn is_circuit_open(&self, service: &str) -> bool {
        self.registry.is_circuit_open(service)
    }

    /// [`Config::near_miss_service`] of the config in force.
    pub(crate) fn near_miss_service(&self, service: &str) -> Option<String> {
        self.config.read().near_miss_service(service)
    }

    /// The guard of `service` (for calls written by hand rather than through the attribute).
    pub fn service(&self, service: &str) -> Arc<ServiceGuard> {
        self.registry.service(service)
    }

    /// Resolves a call site's guard: the service's breaker with the site's retry policy. The
    /// guard lives as long as the site (a `static`), so it is leaked, once per site.
    ///
    /// The site is published only if no reload installed a config since its policy was
    /// resolved; otherwise it is resolved again, from the config now in force. So a reload
    /// either finds the site in its walk or the site was resolved from the reload's config:
    /// never a lost update. Logs nothing: an invalid declared policy is handed back for the
    /// caller to log once the site's initialiser has returned.
    pub(crate) fn register_site(
        &self,
        site: &'static CallSite,
    ) -> (&'static ServiceGuard, Option<PolicyError>) {
        let service = self.registry.service(site.service());
        let (mut config, mut version) = self.config_and_version();
        let (policy, mut problem) = site_policy(&config, site, service.policy());
        let guard: &'static ServiceGuard = Box::leak(Box::new(service.with_policy(policy)));
        loop {
            {
                let mut sites = self.sites.lock();
                if self.config_version.load(Ordering::Acquire) == version {
                    sites.push((site, guard));
                    return (guard, problem);
                }
            }
            // A reload landed in between and did not see this site: resolve it again.
            (config, version) = self.config_and_version();
            let policy;
            (policy, problem) = site_policy(&config, site, service.policy());
            guard.set_policy(policy);
        }
    }

    /// The config in force and its version, read together.
    fn config_and_version(&self) -> (Config, u64) {
        let config = self.config.read();
        (config.clone(), self.config_version.load(Ordering::Acquire))
    }

    /// Applies a new config to every service and call site already in use. All or nothing: if
    /// the new config rejected any value, nothing changes and the error lists why. On success,
    /// returns the services whose breaker settings changed (those apply after a restart).
    pub fn reload(&self, config: Config) -> Result<Vec<Arc<str>>, ReloadRefused> {
        let problems: Vec<Diagnostic> = config
            .diagnostics()
            .iter()
            .filter(|d| is_rejection(d))
            .cloned()
            .collect();
        if !problems.is_empty() {
            let refused = ReloadRefused { problems };
            tracing::warn!(target: "resilience::config", reason = %refused, "config reload refused");
            return Err(refused);
        }
        let _reloading = self.reloading.lock();
        let source = config.clone();
        let breaker_changed = self
            .registry
            .reload(move |service: &str| service_policy(&source, service));
        // Installed before the walk, with the sites locked: a site registering concurrently
        // is either in this walk or sees the new version and resolves itself again.
        let sites = {
            let sites = self.sites.lock();
            *self.config.write() = config.clone();
            self.config_version.fetch_add(1, Ordering::AcqRel);
            sites.clone()
        };
        for (site, guard) in &sites {
            // A site whose declared values are invalid falls back to its service's policy,
            // the reloaded one (as at registration), not to its own from before the reload.
            let service = self.registry.service(site.service());
            let (policy, problem) = site_policy(&config, site, service.policy());
            guard.set_policy(policy);
            if let Some(problem) = problem {
                log_site_problem(site, &problem);
            }
        }
        Ok(breaker_changed)
    }
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("registry", &self.registry)
            .field("call_sites", &self.sites.lock().len())
            .finish_non_exhaustive()
    }
}

/// Builds a [`Runtime`] with injected time; the settings go to its [`Registry`].
pub struct RuntimeBuilder {
    config: Config,
    registry: RegistryBuilder,
}

impl RuntimeBuilder {
    /// The clock for breakers and deadlines.
    #[must_use]
    pub fn clock(self, clock: Arc<dyn Clock>) -> Self {
        self.map(|r| r.clock(clock))
    }
    /// The sleeper for sync backoff.
    #[must_use]
    pub fn sleeper(self, sleeper: Arc<dyn Sleeper>) -> Self {
        self.map(|r| r.sleeper(sleeper))
    }
    /// The sleeper for async backoff and deadlines.
    #[must_use]
    pub fn async_sleeper(self, sleeper: Arc<dyn AsyncSleeper>) -> Self {
        self.map(|r| r.async_sleeper(sleeper))
    }
    /// Seeds jitter everywhere.
    #[must_use]
    pub fn jitter_seed(self, seed: u64) -> Self {
        self.map(|r| r.jitter_seed(seed))
    }
    /// Where `service`'s retry loops (every annotated fn and hand-written call of that
    /// service) report a server's Retry-After, and ask how long to wait: typically a
    /// [`RetryAfterLink`](crate::governor::RetryAfterLink), which turns the hint into the
    /// rate governor's shared block (G6) and paces the comeback by priority. Only an error
    /// that the call's classifier (the attribute's `classify = …`) calls
    /// [`RetryAfter`](crate::retry::ErrorClass::RetryAfter) reaches it. The sink's answer is
    /// the wait before the next attempt (the backoff does not lengthen it), still capped by
    /// the total timeout.
    ///
    /// Annotated fns use the process-wide runtime, so a runtime built with a sink reaches
    /// them only once [installed](Runtime::install) before anything used
    /// [`Runtime::global`]; calls made through the built runtime's own
    /// [`service`](Runtime::service) use it either way.
    ///
    /// ```
    /// use resilience::governor::{Governor, Priority, ResourceConfig, RetryAfterLink};
    /// use resilience::config::Config;
    /// use resilience::Runtime;
    /// use std::sync::Arc;
    ///
    /// let governor = Arc::new(Governor::builder().build().expect("default config is valid"));
    /// let core = governor.add_resource("core", ResourceConfig::github()).unwrap();
    /// let agent = governor.register("planner", Priority::P1).unwrap();
    /// let runtime = Runtime::builder(Config::from_env())
    ///     .retry_after_sink("github", Arc::new(RetryAfterLink::new(governor, core, agent)))
    ///     .build();
    /// // Annotated fns of "github" now report to the governor. `install` hands the runtime
    /// // back if the global one was already in use.
    /// assert!(Runtime::install(runtime).is_ok());
    /// ```
    #[must_use]
    pub fn retry_after_sink(self, service: &str, sink: Arc<dyn RetryAfterSink>) -> Self {
        self.map(|r| r.retry_after_sink(service, sink))
    }

    fn map(self, f: impl FnOnce(RegistryBuilder) -> RegistryBuilder) -> Self {
        Self {
            config: self.config,
            registry: f(self.registry),
        }
    }

    /// Builds the runtime.
    pub fn build(self) -> Runtime {
        Runtime {
            config: RwLock::new(self.config),
            config_version: AtomicU64::new(0),
            registry: self.registry.build(),
            sites: Mutex::default(),
            reloading: Mutex::new(()),
        }
    }
}
