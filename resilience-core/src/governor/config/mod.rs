//! Governor settings: per resource ([`ResourceConfig`]) and governor-wide
//! ([`GovernorConfig`]). Every threshold is a public field with the article's default;
//! [`ResourceConfig::validate`] names the first bad field.

mod pacing;
mod patterns;
mod share;

pub use pacing::{Measure, Pacing, Selector, SpacingRule, WindowRule};
pub use patterns::{Cascade, Leases, Predictive, RetryWindows, TokenPool, TrafficLight};

use crate::error::PolicyError;
use std::borrow::Cow;
use std::time::Duration;

/// Everything the governor applies to one resource (one quota bucket).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ResourceConfig {
    /// Quota and window assumed until a response tells the real ones.
    pub quota: AssumedQuota,
    /// G1.
    pub traffic_light: TrafficLight,
    /// G2.
    pub token_pool: TokenPool,
    /// G3.
    pub predictive: Predictive,
    /// G4.
    pub cascade: Cascade,
    /// G6.
    pub retry_windows: RetryWindows,
    /// G8.
    pub pacing: Pacing,
    /// The upstream bucket this resource counts, as responses name it in
    /// `x-ratelimit-resource` (GitHub's `core`, `search`, `graphql`, ...). A response naming
    /// another bucket is about that bucket: it goes to the registered resource of that name,
    /// or, if there is none, its quota headers and rate limit are ignored here (the call's
    /// slot and cost are settled, as for a call another bucket paid for). `None`: every
    /// response observed on this resource counts (a header naming a registered resource
    /// still goes to it).
    pub bucket: Option<Cow<'static, str>>,
}

impl ResourceConfig {
    /// GitHub REST `core`: 5 000 requests/hour plus [`Pacing::github`], counting the `core`
    /// bucket only (a `search` or `graphql` response observed on it does not read as `core`'s
    /// quota).
    pub fn github() -> Self {
        Self {
            pacing: Pacing::github(),
            bucket: Some(Cow::Borrowed("core")),
            ..Self::default()
        }
    }

    /// This config, counting the upstream bucket `name` only (see [`bucket`](Self::bucket)).
    pub fn with_bucket(mut self, name: impl Into<Cow<'static, str>>) -> Self {
        self.bucket = Some(name.into());
        self
    }

    /// Checks every field; the error names the first one at fault.
    pub fn validate(&self) -> Result<(), PolicyError> {
        self.quota.validate()?;
        self.traffic_light.validate()?;
        self.token_pool.validate()?;
        self.predictive.validate()?;
        self.cascade.validate()?;
        self.retry_windows.validate()?;
        self.pacing.validate()
    }
}

/// The quota assumed before the first response with headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssumedQuota {
    /// Requests per window. Default 5 000 (GitHub, per user token).
    pub limit: u64,
    /// Window length; the first window is anchored at the first grant. Default 1 h.
    pub window: Duration,
}

impl Default for AssumedQuota {
    fn default() -> Self {
        Self {
            limit: 5000,
            window: Duration::from_secs(3600),
        }
    }
}

impl AssumedQuota {
    fn validate(&self) -> Result<(), PolicyError> {
        if self.limit == 0 {
            return Err(PolicyError::new("quota.limit", 0, "must be at least 1"));
        }
        if self.window.is_zero() {
            return Err(PolicyError::new("quota.window", "0s", "must be positive"));
        }
        Ok(())
    }
}

/// Governor-wide settings.
#[derive(Debug, Clone, PartialEq)]
pub struct GovernorConfig {
    /// G5.
    pub leases: Leases,
    /// Seed for the G6 jitter; `None` seeds from entropy. Seed it for reproducible runs.
    pub seed: Option<u64>,
    /// Most agents the in-process store holds. Default 4 096.
    pub max_agents: u32,
    /// Most resources the in-process store holds. Default 64.
    pub max_resources: u32,
}

impl Default for GovernorConfig {
    fn default() -> Self {
        Self {
            leases: Leases::default(),
            seed: None,
            max_agents: 4096,
            max_resources: 64,
        }
    }
}

impl GovernorConfig {
    /// Checks every field.
    pub fn validate(&self) -> Result<(), PolicyError> {
        self.leases.validate()?;
        if self.max_agents == 0 {
            return Err(PolicyError::new("max_agents", 0, "must be at least 1"));
        }
        if self.max_resources == 0 {
            return Err(PolicyError::new("max_resources", 0, "must be at least 1"));
        }
        Ok(())
    }
}
