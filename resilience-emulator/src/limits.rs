//! Every limit the emulator enforces, with GitHub's documented defaults.

use std::time::Duration;

/// The status code used for a rejection: GitHub answers rate limits with either.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum RejectStatus {
    /// `403 Forbidden`, what the REST API mostly sends.
    Forbidden,
    /// `429 Too Many Requests`.
    TooManyRequests,
}

impl RejectStatus {
    /// The numeric status code.
    pub fn code(self) -> u16 {
        match self {
            Self::Forbidden => 403,
            Self::TooManyRequests => 429,
        }
    }
}

/// The limits of one emulated API, per token.
///
/// [`Limits::github`] (also `Default`) is GitHub's REST API for a user token as documented
/// (DESIGN §6); the fields marked "unknown" are not documented and are settings here.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Limits {
    /// Primary budget per window (`x-ratelimit-limit`): 5 000 for a user token.
    pub primary_limit: u32,
    /// Length of the primary window, anchored at the first request of a window: one hour.
    pub primary_window: Duration,
    /// The `x-ratelimit-resource` name: `core`.
    pub resource: String,
    /// Status sent when the primary budget is exhausted.
    pub primary_status: RejectStatus,
    /// Most requests one token may have in flight: 100.
    pub max_concurrency: u32,
    /// Points allowed per endpoint within [`points_window`](Self::points_window): 900.
    pub points_per_window: u32,
    /// The sliding window for points: one minute.
    pub points_window: Duration,
    /// Points a GET/HEAD/OPTIONS costs: 1.
    pub read_points: u32,
    /// Points a POST/PATCH/PUT/DELETE costs: 5.
    pub write_points: u32,
    /// Content-creating requests allowed per minute: 80.
    pub content_per_minute: u32,
    /// Content-creating requests allowed per hour: 500.
    pub content_per_hour: u32,
    /// How long a secondary-limit breach blocks the token (observed: about 60 s). Unknown.
    pub penalty: Duration,
    /// Whether a request made while blocked restarts the penalty ("continuing to make requests
    /// while rate limited may result in the banning of your integration"). Unknown; on by
    /// default because it is what turns a herd into the incident's long outage.
    pub extend_penalty_on_blocked_request: bool,
    /// Status sent for a secondary-limit rejection.
    pub secondary_status: RejectStatus,
    /// Probability that a secondary rejection carries `retry-after` ("sometimes"). Unknown.
    pub retry_after_probability: f64,
    /// Whether a request rejected by a secondary limit still spends primary quota. Unknown.
    pub rejected_use_primary: bool,
    /// Whether a `304 Not Modified` answer to a conditional request is free of primary quota.
    pub conditional_requests_free: bool,
}

impl Limits {
    /// GitHub's REST limits for a user token.
    pub fn github() -> Self {
        Self {
            primary_limit: 5_000,
            primary_window: Duration::from_secs(3_600),
            resource: "core".to_owned(),
            primary_status: RejectStatus::Forbidden,
            max_concurrency: 100,
            points_per_window: 900,
            points_window: Duration::from_secs(60),
            read_points: 1,
            write_points: 5,
            content_per_minute: 80,
            content_per_hour: 500,
            penalty: Duration::from_secs(60),
            extend_penalty_on_blocked_request: true,
            secondary_status: RejectStatus::Forbidden,
            retry_after_probability: 0.5,
            rejected_use_primary: true,
            conditional_requests_free: true,
        }
    }

    /// Checks the settings; a probability outside `[0, 1]` or a zero window is an error.
    pub fn validate(&self) -> Result<(), LimitsError> {
        if !(0.0..=1.0).contains(&self.retry_after_probability) {
            return Err(LimitsError::new(
                "retry_after_probability",
                "must be within [0, 1]",
            ));
        }
        if self.primary_window.is_zero() {
            return Err(LimitsError::new("primary_window", "must be positive"));
        }
        if self.points_window.is_zero() {
            return Err(LimitsError::new("points_window", "must be positive"));
        }
        Ok(())
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self::github()
    }
}

/// A [`Limits`] setting that makes no sense, naming the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitsError {
    /// The offending field.
    pub field: &'static str,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl LimitsError {
    fn new(field: &'static str, reason: &'static str) -> Self {
        Self { field, reason }
    }
}

impl std::fmt::Display for LimitsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "invalid emulator limit `{}`: {}",
            self.field, self.reason
        )
    }
}

impl std::error::Error for LimitsError {}
