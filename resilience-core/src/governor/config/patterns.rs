//! Settings of the article's patterns G1–G6, each defaulting to the article's numbers.

use crate::error::PolicyError;
use std::time::Duration;

/// G1 traffic light: zones by `remaining / limit`.
#[derive(Debug, Clone, PartialEq)]
pub struct TrafficLight {
    /// At or above this ratio the light is green: no delay. Default 0.40.
    pub green: f64,
    /// Below this ratio the light is red. Default 0.15.
    pub red: f64,
    /// The amber delay at the red threshold (it grows linearly from 0 at `green`). Default 2 s.
    pub amber_max_delay: Duration,
    /// Ratio at which P1's amber delay starts (P2's starts at `green`, so background agents
    /// are slowed first; P0 is never delayed by the light). Default 0.275, mid-amber.
    pub p1_amber_onset: f64,
    /// Red light: P1 calls are spaced at least this far apart. Default 1 s (≈ 1 req/s).
    pub red_p1_spacing: Duration,
}

impl Default for TrafficLight {
    fn default() -> Self {
        Self {
            green: 0.40,
            red: 0.15,
            amber_max_delay: Duration::from_secs(2),
            p1_amber_onset: 0.275,
            red_p1_spacing: Duration::from_secs(1),
        }
    }
}

impl TrafficLight {
    pub(crate) fn validate(&self) -> Result<(), PolicyError> {
        unit("traffic_light.green", self.green)?;
        unit("traffic_light.red", self.red)?;
        unit("traffic_light.p1_amber_onset", self.p1_amber_onset)?;
        if self.red > self.green {
            return Err(PolicyError::new(
                "traffic_light.red",
                self.red,
                "must not exceed traffic_light.green",
            ));
        }
        if self.p1_amber_onset > self.green || self.p1_amber_onset < self.red {
            return Err(PolicyError::new(
                "traffic_light.p1_amber_onset",
                self.p1_amber_onset,
                "must lie between traffic_light.red and traffic_light.green",
            ));
        }
        Ok(())
    }
}

/// G2 shared token pool: per-agent reservations by priority, a shared pool for the rest.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenPool {
    /// Share of the window's quota each live agent of priority P0, P1, P2 reserves.
    /// Default `[0.10, 0.05, 0.02]` (9 squad agents: 47% reserved, 53% shared).
    pub reservation: [f64; 3],
    /// An agent that has not asked for this long donates its unused reservation to the pool
    /// until it asks again. Default 60 s.
    pub idle_after: Duration,
    /// Background agents may draw on the pool only while its free part is at least this
    /// share of its size. Default 0.30.
    pub p2_yield_below: f64,
    /// A background agent kept waiting or refused this long is served as P1 until its next
    /// grant. Default 5 min.
    pub promote_after: Duration,
}

impl Default for TokenPool {
    fn default() -> Self {
        Self {
            reservation: [0.10, 0.05, 0.02],
            idle_after: Duration::from_secs(60),
            p2_yield_below: 0.30,
            promote_after: Duration::from_secs(300),
        }
    }
}

impl TokenPool {
    pub(crate) fn validate(&self) -> Result<(), PolicyError> {
        for (name, v) in [
            "token_pool.reservation[P0]",
            "token_pool.reservation[P1]",
            "token_pool.reservation[P2]",
        ]
        .into_iter()
        .zip(self.reservation)
        {
            unit(name, v)?;
        }
        unit("token_pool.p2_yield_below", self.p2_yield_below)
    }
}

/// G3 predictive breaker.
#[derive(Debug, Clone, PartialEq)]
pub struct Predictive {
    /// Opens when the observed consumption rate would exhaust the quota within this long
    /// (and before reset). Default 30 s.
    pub horizon: Duration,
    /// Consecutive good observations that close it. Default 3.
    pub close_after: u32,
    /// Observations older than this are not used to estimate the rate. Default 10 s.
    pub rate_window: Duration,
    /// Observations needed before a rate is trusted. Default 3.
    pub min_samples: u32,
    /// Also open on any rate-limited response (the article's reactive path). Default true.
    pub open_on_limit: bool,
}

impl Default for Predictive {
    fn default() -> Self {
        Self {
            horizon: Duration::from_secs(30),
            close_after: 3,
            rate_window: Duration::from_secs(10),
            min_samples: 3,
            open_on_limit: true,
        }
    }
}

impl Predictive {
    pub(crate) fn validate(&self) -> Result<(), PolicyError> {
        if self.close_after == 0 {
            return Err(PolicyError::new(
                "predictive.close_after",
                0,
                "must be at least 1",
            ));
        }
        if self.min_samples < 2 {
            return Err(PolicyError::new(
                "predictive.min_samples",
                self.min_samples,
                "must be at least 2 (a rate needs two points)",
            ));
        }
        Ok(())
    }
}

/// G4 cascade detector.
#[derive(Debug, Clone, PartialEq)]
pub struct Cascade {
    /// Distinct agents limited within `window` that switch on sequential mode. Default 3.
    pub agents: u32,
    /// The detection window; also how long downstream agents stay warned. Default 30 s.
    pub window: Duration,
    /// Consecutive good responses after the block lifts that end sequential mode. Default 3.
    pub clear_after: u32,
}

impl Default for Cascade {
    fn default() -> Self {
        Self {
            agents: 3,
            window: Duration::from_secs(30),
            clear_after: 3,
        }
    }
}

impl Cascade {
    pub(crate) fn validate(&self) -> Result<(), PolicyError> {
        if self.agents == 0 {
            return Err(PolicyError::new("cascade.agents", 0, "must be at least 1"));
        }
        if self.clear_after == 0 {
            return Err(PolicyError::new(
                "cascade.clear_after",
                0,
                "must be at least 1",
            ));
        }
        Ok(())
    }
}

/// G6 priority retry windows.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryWindows {
    /// Block length after a limit without `retry-after` (and quota left). Default 60 s.
    /// Each such limit that follows another, with no good response in between, doubles it
    /// (GitHub: "wait at least one minute, then back off exponentially"), up to
    /// `max_default_block`.
    pub default_block: Duration,
    /// The longest the doubling of `default_block` goes. Default 16 min (60 s doubled four
    /// times).
    pub max_default_block: Duration,
    /// Added to the reset time when the quota is spent, for clock skew. Default 1 s.
    pub reset_margin: Duration,
    /// Per-priority release windows after the block ends, `[start, end)`: P0 `[0, 0.5 s)`,
    /// P1 `[0.5 s, 3.5 s)`, P2 `[3.5 s, 9.5 s)`.
    pub windows: [(Duration, Duration); 3],
    /// After a block, consecutive grants are at least this far apart, so the released
    /// waiters never go all at once. Default 50 ms (at most 2 calls in any 100 ms).
    pub release_spacing: Duration,
    /// How long after a block grants stay paced by `release_spacing` (at least until the
    /// last priority window closes). Default 60 s.
    pub recovery: Duration,
}

impl Default for RetryWindows {
    fn default() -> Self {
        let ms = Duration::from_millis;
        Self {
            default_block: Duration::from_secs(60),
            max_default_block: Duration::from_secs(16 * 60),
            reset_margin: Duration::from_secs(1),
            windows: [(ms(0), ms(500)), (ms(500), ms(3500)), (ms(3500), ms(9500))],
            release_spacing: ms(50),
            recovery: Duration::from_secs(60),
        }
    }
}

impl RetryWindows {
    pub(crate) fn validate(&self) -> Result<(), PolicyError> {
        let names = [
            "retry_windows[P0]",
            "retry_windows[P1]",
            "retry_windows[P2]",
        ];
        for (name, (a, b)) in names.into_iter().zip(self.windows) {
            if a > b {
                return Err(PolicyError::new(
                    name,
                    format!("[{:?}, {:?})", a, b),
                    "window start must not exceed its end",
                ));
            }
        }
        if self.max_default_block < self.default_block {
            return Err(PolicyError::new(
                "retry_windows.max_default_block",
                format!("{:?}", self.max_default_block),
                "must be at least retry_windows.default_block",
            ));
        }
        for (i, pair) in self.windows.windows(2).enumerate() {
            if pair[1].0 < pair[0].0 {
                return Err(PolicyError::new(
                    names[i + 1],
                    format!("{:?}", pair[1].0),
                    "must not start before the window of a higher priority",
                ));
            }
        }
        Ok(())
    }
}

/// G5 leases, governor-wide (an agent's lease covers all resources).
#[derive(Debug, Clone, PartialEq)]
pub struct Leases {
    /// An agent silent (no acquire, observe or heartbeat) for this long is presumed dead: its
    /// unused reservations return to the pool and its place in line is dropped. Default 2 min.
    /// (The in-process store checks leases at most once a second, on the next decision.)
    pub ttl: Duration,
    /// A waiter that does not come back within this long after its time is dropped from the
    /// line, so a crashed agent cannot hold others back. Default 5 s.
    pub ticket_grace: Duration,
    /// A grant neither observed nor released within this long (dropped, or held by a task
    /// that hangs) is settled as a call made without a reading: its cost counts as spent and
    /// its concurrency slot comes back. Default 30 s (GitHub ends a REST request after 10 s).
    /// An answer that comes later still gives its reading. (The in-process store counts
    /// grants by age in slices of the clock, so it settles one between one and two bounds
    /// after it was made, on a decision at most once a second.)
    pub call_bound: Duration,
}

impl Default for Leases {
    fn default() -> Self {
        Self {
            ttl: Duration::from_secs(120),
            ticket_grace: Duration::from_secs(5),
            call_bound: Duration::from_secs(30),
        }
    }
}

impl Leases {
    pub(crate) fn validate(&self) -> Result<(), PolicyError> {
        if self.ttl.is_zero() {
            return Err(PolicyError::new("leases.ttl", "0s", "must be positive"));
        }
        if self.call_bound.is_zero() {
            return Err(PolicyError::new(
                "leases.call_bound",
                "0s",
                "must be positive",
            ));
        }
        Ok(())
    }
}

/// A share in `[0, 1]`.
pub(crate) fn unit(field: &'static str, v: f64) -> Result<(), PolicyError> {
    if v.is_finite() && (0.0..=1.0).contains(&v) {
        Ok(())
    } else {
        Err(PolicyError::new(
            field,
            v,
            "must be a share between 0 and 1",
        ))
    }
}
