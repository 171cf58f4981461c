//! G8: pacing by the physics of the quota, as configurable rules.

use crate::error::PolicyError;
use std::sync::Arc;
use std::time::Duration;

/// Which requests a rule counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Selector {
    /// Every request.
    All,
    /// Mutations: writes and content-creating writes.
    Writes,
    /// Content-creating writes only.
    Creates,
}

impl Selector {
    /// Whether `kind` is counted.
    #[inline]
    pub fn matches(self, kind: super::super::RequestKind) -> bool {
        use super::super::RequestKind as K;
        match self {
            Self::All => true,
            Self::Writes => kind.is_write(),
            Self::Creates => kind == K::Create,
        }
    }
}

/// What a window rule adds up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Measure {
    /// One per request.
    Requests,
    /// The request's secondary-limit points.
    Points,
    /// The request's primary-quota cost.
    Cost,
}

/// At most `limit` units in any window of `window` (+ `margin`), optionally smoothed.
///
/// The window is exact (a log of grants), so a burst up to `limit` is allowed when nothing
/// else was spent; `smooth_burst` additionally paces grants at `limit / (window + margin)`
/// with that much burst, which keeps the high-priority wait for the next slot short and
/// avoids burst-then-silence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowRule {
    /// Name, reported in [`WaitReason::Rule`](super::super::WaitReason::Rule).
    pub name: Arc<str>,
    /// Which requests count.
    pub selector: Selector,
    /// What counts.
    pub measure: Measure,
    /// Units allowed per window.
    pub limit: u32,
    /// The window length.
    pub window: Duration,
    /// Extra window length for clock skew and network delay between grant and arrival.
    pub margin: Duration,
    /// Smooth grants at the window's average rate with this much burst; `None` allows the
    /// whole window at once.
    pub smooth_burst: Option<u32>,
    /// Units of each window that only P0 may use, so a critical call rarely finds the window
    /// full: P1/P2 see `limit - p0_headroom` (and are smoothed at that rate).
    pub p0_headroom: u32,
    /// Keep a separate window per [`Request::endpoint`](super::super::Request::endpoint)
    /// (requests without one share a window).
    pub per_endpoint: bool,
}

impl WindowRule {
    /// A rule with no margin, no smoothing, shared by all endpoints.
    pub fn new(
        name: &str,
        selector: Selector,
        measure: Measure,
        limit: u32,
        window: Duration,
    ) -> Self {
        Self {
            name: name.into(),
            selector,
            measure,
            limit,
            window,
            margin: Duration::ZERO,
            smooth_burst: None,
            p0_headroom: 0,
            per_endpoint: false,
        }
    }
    /// Sets the margin.
    pub fn with_margin(mut self, margin: Duration) -> Self {
        self.margin = margin;
        self
    }
    /// Smooths with this burst.
    pub fn smoothed(mut self, burst: u32) -> Self {
        self.smooth_burst = Some(burst);
        self
    }
    /// Reserves `units` of each window for P0.
    pub fn with_p0_headroom(mut self, units: u32) -> Self {
        self.p0_headroom = units;
        self
    }
    /// Counts each endpoint separately.
    pub fn per_endpoint(mut self) -> Self {
        self.per_endpoint = true;
        self
    }

    fn validate(&self) -> Result<(), PolicyError> {
        if self.limit == 0 {
            return Err(PolicyError::new(
                "pacing.window.limit",
                0,
                "must be at least 1",
            ));
        }
        if self.window.is_zero() {
            return Err(PolicyError::new(
                "pacing.window.window",
                "0s",
                "must be positive",
            ));
        }
        if self.p0_headroom >= self.limit {
            return Err(PolicyError::new(
                "pacing.window.p0_headroom",
                self.p0_headroom,
                "must be less than the rule's limit",
            ));
        }
        if let Some(b) = self.smooth_burst {
            if b == 0 || b > self.limit - self.p0_headroom {
                return Err(PolicyError::new(
                    "pacing.window.smooth_burst",
                    b,
                    "must be between 1 and the rule's limit less its P0 headroom",
                ));
            }
        }
        Ok(())
    }
}

/// Consecutive selected requests at least `gap` apart (GitHub: ≥ 1 s between mutations).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpacingRule {
    /// Name, reported in [`WaitReason::Rule`](super::super::WaitReason::Rule).
    pub name: Arc<str>,
    /// Which requests are spaced.
    pub selector: Selector,
    /// The minimum gap.
    pub gap: Duration,
}

/// G8 settings for one resource.
#[derive(Debug, Clone, PartialEq)]
pub struct Pacing {
    /// Below the green threshold, space P1/P2 grants so the remaining quota lasts until
    /// reset (`time to reset / remaining`). P0 is exempt. Default true.
    pub even_spend: bool,
    /// Even spend may run ahead of the even schedule by this share of the window's quota
    /// (a burst of background polling is not worth pacing). Default 0.05.
    pub even_spend_burst: f64,
    /// At most this many granted calls in flight (GitHub: fewer than 100). Default none.
    pub max_concurrent: Option<u32>,
    /// Sliding-window rules.
    pub windows: Vec<WindowRule>,
    /// Spacing rules.
    pub spacings: Vec<SpacingRule>,
    /// How often a waiter re-asks when it waits for something with no known end (a call in
    /// flight to finish). Default 50 ms.
    pub poll_interval: Duration,
    /// A waiter holds back lower-priority requests that do not compete with it (a read,
    /// behind a create waiting on a creation rule) only while its wait ends within this.
    /// Within it priority is strict; a longer wait lets them through, so one agent waiting
    /// an hour on a rule is not head-of-line blocking for everyone. Requests that do
    /// compete (the same rule, or a quota-wide wait) are always held back. Default 10 s.
    pub unrelated_hold: Duration,
}

impl Default for Pacing {
    fn default() -> Self {
        Self {
            even_spend: true,
            even_spend_burst: 0.05,
            max_concurrent: None,
            windows: Vec::new(),
            spacings: Vec::new(),
            poll_interval: Duration::from_millis(50),
            unrelated_hold: Duration::from_secs(10),
        }
    }
}

impl Pacing {
    /// GitHub's documented secondary limits as hard rules: 80 content-creating requests per
    /// minute and 500 per hour, 900 points per minute per endpoint (GET 1, writes 5; pass
    /// [`Request::with_endpoint`](super::super::Request::with_endpoint) with the route
    /// template), fewer than 100 concurrent requests. The per-minute rules are smoothed
    /// (burst 8 creations, 90 points) and keep 10% headroom for P0; windows carry a 0.5 s
    /// margin (1 s for the hour). GitHub's advice of ≥ 1 s between mutations is not
    /// included, as it caps creation below the 80/min limit: add it with
    /// [`with_write_spacing`](Self::with_write_spacing).
    pub fn github() -> Self {
        let ms = Duration::from_millis;
        Self {
            max_concurrent: Some(99),
            windows: vec![
                WindowRule::new(
                    "content_creating_per_minute",
                    Selector::Creates,
                    Measure::Requests,
                    80,
                    Duration::from_secs(60),
                )
                .with_margin(ms(500))
                .with_p0_headroom(8)
                .smoothed(8),
                WindowRule::new(
                    "content_creating_per_hour",
                    Selector::Creates,
                    Measure::Requests,
                    500,
                    Duration::from_secs(3600),
                )
                .with_margin(ms(1000)),
                WindowRule::new(
                    "points_per_minute",
                    Selector::All,
                    Measure::Points,
                    900,
                    Duration::from_secs(60),
                )
                .with_margin(ms(500))
                .with_p0_headroom(90)
                .smoothed(90)
                .per_endpoint(),
            ],
            ..Self::default()
        }
    }

    /// Adds a spacing rule named `write_spacing` for all mutations.
    pub fn with_write_spacing(mut self, gap: Duration) -> Self {
        self.spacings.push(SpacingRule {
            name: "write_spacing".into(),
            selector: Selector::Writes,
            gap,
        });
        self
    }

    pub(crate) fn validate(&self) -> Result<(), PolicyError> {
        for w in &self.windows {
            w.validate()?;
        }
        super::patterns::unit("pacing.even_spend_burst", self.even_spend_burst)?;
        if self.max_concurrent == Some(0) {
            return Err(PolicyError::new(
                "pacing.max_concurrent",
                0,
                "must be at least 1",
            ));
        }
        if self.poll_interval.is_zero() {
            return Err(PolicyError::new(
                "pacing.poll_interval",
                "0s",
                "must be positive",
            ));
        }
        Ok(())
    }
}
