//! Per-service wiring: one breaker and one prebuilt policy per service (R9, R10), looked up or
//! created under one lock. No parsing here: a [`PolicySource`] says what each service gets.
//!
//! The [`PolicySource`] is user code: it runs with the map of services unlocked (B8), so it
//! may log, or look at this registry (`is_circuit_open`, `services`, even `service` of
//! another name), without deadlocking. Building services and reloading are serialised by a
//! second, reentrant lock, so a service is still built exactly once and a reload never loses
//! a service built while it runs.
//!
//! ```
//! use resilience_core::registry::{Registry, ServicePolicy};
//!
//! let registry = Registry::new(|_service: &str| ServicePolicy::default());
//! let a = registry.service("plan_service");
//! let b = registry.service("plan_service");
//! assert!(std::sync::Arc::ptr_eq(&a, &b)); // built once, reused
//! assert!(!registry.is_circuit_open("plan_service"));
//! ```

mod source;

pub use source::{PolicySource, ServicePolicy};

use crate::clock::{Clock, MonotonicClock};
use crate::retry::{RetryAfterSink, ServiceGuard};
use crate::sleep::{AsyncSleeper, Sleeper};
use parking_lot::{Mutex, ReentrantMutex};
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Services by name, each with its guard (policy + breaker) built on first use.
pub struct Registry {
    source: Mutex<Arc<dyn PolicySource>>,
    services: Mutex<HashMap<Arc<str>, Arc<ServiceGuard>>>,
    // Held while the policy source runs (building a service, reloading), never with
    // `services` held across user code. Reentrant: a source may build another service.
    building: ReentrantMutex<()>,
    // Counts reloads, for callers that want to notice one (guards are updated in place).
    generation: AtomicU64,
    clock: Arc<dyn Clock>,
    sleeper: Option<Arc<dyn Sleeper>>,
    async_sleeper: Option<Arc<dyn AsyncSleeper>>,
    jitter_seed: Option<u64>,
    retry_after_sinks: HashMap<Arc<str>, Arc<dyn RetryAfterSink>>,
}

impl Registry {
    /// A registry on the real clock and sleepers.
    pub fn new(source: impl PolicySource) -> Self {
        Self::builder(source).build()
    }

    /// A registry with injected time (for tests and simulations).
    pub fn builder(source: impl PolicySource) -> RegistryBuilder {
        RegistryBuilder {
            source: Arc::new(source),
            clock: None,
            sleeper: None,
            async_sleeper: None,
            jitter_seed: None,
            retry_after_sinks: HashMap::new(),
        }
    }

    /// The guard of `service`, created on first use (lookup-or-create under one lock, R10).
    ///
    /// The source runs with the map unlocked; creation is serialised by a second lock and
    /// checked again under it, so the source is asked once per service and one guard is ever
    /// published (no TOCTOU).
    pub fn service(&self, service: &str) -> Arc<ServiceGuard> {
        if let Some(g) = self.lookup(service) {
            return g;
        }
        let _building = self.building.lock();
        if let Some(g) = self.lookup(service) {
            return g; // built by another thread while this one waited
        }
        let source = self.source.lock().clone();
        let policy = source.policy(service);
        let guard = Arc::new(self.build_guard(service, &policy));
        let mut services = self.services.lock();
        // `building` is held, so no other guard of this name can have been published; the
        // map keeps its first one regardless. (A source must not call `service` for a service
        // not yet built: `building` is not re-entrant.)
        services
            .entry(guard.service().clone())
            .or_insert(guard)
            .clone()
    }

    fn lookup(&self, service: &str) -> Option<Arc<ServiceGuard>> {
        self.services.lock().get(service).cloned()
    }

    fn build_guard(&self, service: &str, policy: &ServicePolicy) -> ServiceGuard {
        let mut b = ServiceGuard::builder(service)
            .policy(policy.retry)
            .clock(self.clock.clone());
        b = match policy.breaker {
            Some(cfg) => b.breaker(cfg),
            None => b.without_breaker(),
        };
        if let Some(s) = &self.sleeper {
            b = b.sleeper(s.clone());
        }
        if let Some(s) = &self.async_sleeper {
            b = b.async_sleeper(s.clone());
        }
        if let Some(seed) = self.jitter_seed {
            b = b.jitter_seed(seed);
        }
        if let Some(sink) = self.retry_after_sinks.get(service) {
            b = b.retry_after_sink(sink.clone());
        }
        b.build()
    }

    /// Closes `service`'s circuit and clears its counters and timestamps at once (B9).
    /// Returns `false` if the service has no breaker or was never used.
    pub fn reset_circuit(&self, service: &str) -> bool {
        match self.breaker(service) {
            Some(b) => {
                b.reset();
                true
            }
            None => false,
        }
    }

    /// Whether `service`'s circuit is open. Safe from any thread (B10); `false` for a service
    /// without a breaker or never used.
    pub fn is_circuit_open(&self, service: &str) -> bool {
        // Asked with the registry unlocked: the look may move the circuit to half-open and
        // emit that event (B8), and a subscriber may call back into this registry.
        self.breaker(service).is_some_and(|b| b.is_open())
    }

    /// `service`'s breaker, if it was built with one; the registry's lock is released on
    /// return, so nothing the breaker does (or logs) runs under it.
    fn breaker(&self, service: &str) -> Option<Arc<crate::breaker::CircuitBreaker>> {
        let services = self.services.lock();
        services.get(service).and_then(|g| g.breaker().cloned())
    }

    /// Names of the services built so far.
    pub fn services(&self) -> Vec<Arc<str>> {
        let mut names: Vec<_> = self.services.lock().keys().cloned().collect();
        names.sort();
        names
    }

    /// Replaces the policy source. Retry policies of services already built change in place
    /// (every holder of their guard sees it on its next call). A breaker keeps its settings
    /// and state: the names of services whose new breaker settings differ are returned, as
    /// those settings take effect only for a new registry (at restart).
    ///
    /// The source runs with the map unlocked (a service it builds meanwhile gets the new
    /// source); reloads and service creation are serialised, so none is lost.
    pub fn reload(&self, source: impl PolicySource) -> Vec<Arc<str>> {
        let source: Arc<dyn PolicySource> = Arc::new(source);
        let _building = self.building.lock();
        // Swapped first: any service built from here on, even by the source itself, gets it.
        *self.source.lock() = source.clone();
        let services: Vec<_> = self
            .services
            .lock()
            .iter()
            .map(|(n, g)| (n.clone(), g.clone()))
            .collect();
        let mut breaker_changed = Vec::new();
        for (name, guard) in &services {
            let policy = source.policy(name);
            guard.set_policy(policy.retry);
            let same_breaker = match (guard.breaker(), policy.breaker) {
                (Some(b), Some(cfg)) => *b.config() == cfg,
                (None, None) => true,
                _ => false,
            };
            if !same_breaker {
                breaker_changed.push(name.clone());
            }
        }
        self.generation.fetch_add(1, Ordering::Release);
        breaker_changed.sort();
        breaker_changed
    }

    /// Changes on every [`reload`](Self::reload).
    #[inline]
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("services", &self.services())
            .field("generation", &self.generation())
            .finish_non_exhaustive()
    }
}

/// Builds a [`Registry`] with injected time.
pub struct RegistryBuilder {
    source: Arc<dyn PolicySource>,
    clock: Option<Arc<dyn Clock>>,
    sleeper: Option<Arc<dyn Sleeper>>,
    async_sleeper: Option<Arc<dyn AsyncSleeper>>,
    jitter_seed: Option<u64>,
    retry_after_sinks: HashMap<Arc<str>, Arc<dyn RetryAfterSink>>,
}

impl RegistryBuilder {
    /// The clock every service's breaker and deadline read.
    #[must_use]
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }
    /// The sleeper for sync backoff.
    #[must_use]
    pub fn sleeper(mut self, sleeper: Arc<dyn Sleeper>) -> Self {
        self.sleeper = Some(sleeper);
        self
    }
    /// The sleeper for async backoff and deadlines.
    #[must_use]
    pub fn async_sleeper(mut self, sleeper: Arc<dyn AsyncSleeper>) -> Self {
        self.async_sleeper = Some(sleeper);
        self
    }
    /// Seeds every service's jitter.
    #[must_use]
    pub fn jitter_seed(mut self, seed: u64) -> Self {
        self.jitter_seed = Some(seed);
        self
    }
    /// Where `service`'s retry loop reports every server Retry-After it sees, and asks how
    /// long to wait: for example a [`RetryAfterLink`](crate::governor::RetryAfterLink), so
    /// that the hint becomes the rate governor's shared block (G6). Only errors that a
    /// classifier calls [`RetryAfter`](crate::retry::ErrorClass::RetryAfter) reach it.
    /// Setting a second sink for the same service replaces the first.
    ///
    /// ```
    /// use resilience_core::governor::{Governor, Priority, ResourceConfig, RetryAfterLink};
    /// use resilience_core::registry::{Registry, ServicePolicy};
    /// use std::sync::Arc;
    ///
    /// let governor = Arc::new(Governor::builder().build().expect("default config is valid"));
    /// let core = governor.add_resource("core", ResourceConfig::github()).unwrap();
    /// let agent = governor.register("planner", Priority::P1).unwrap();
    /// let registry = Registry::builder(|_: &str| ServicePolicy::default())
    ///     .retry_after_sink("github", Arc::new(RetryAfterLink::new(governor, core, agent)))
    ///     .build();
    /// # let _ = registry.service("github");
    /// ```
    #[must_use]
    pub fn retry_after_sink(mut self, service: &str, sink: Arc<dyn RetryAfterSink>) -> Self {
        self.retry_after_sinks.insert(Arc::from(service), sink);
        self
    }
    /// Builds the registry.
    pub fn build(self) -> Registry {
        Registry {
            source: Mutex::new(self.source),
            services: Mutex::default(),
            building: ReentrantMutex::new(()),
            generation: AtomicU64::new(0),
            clock: self
                .clock
                .unwrap_or_else(|| Arc::new(MonotonicClock::new())),
            sleeper: self.sleeper,
            async_sleeper: self.async_sleeper,
            jitter_seed: self.jitter_seed,
            retry_after_sinks: self.retry_after_sinks,
        }
    }
}
