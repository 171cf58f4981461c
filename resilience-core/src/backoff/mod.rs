//! Wait strategies between attempts (R4, R5).
//!
//! A [`Backoff`] is validated when built and then only computes delays; it holds no state, so
//! one value is built per service and shared (R9).
//!
//! | strategy | delay before retry *n* (n = 1, 2, …) | floor on `base_delay` |
//! |---|---|---|
//! | `exponential` | `base · 2^(n-1)` | 0.1 s |
//! | `linear` | `base`, every time (the seed's "linear" is a constant wait) | 2.0 s |
//! | `fixed` | `base` | 0.1 s |
//! | `jitter` | full jitter: uniform in `[0.1 s, base · 2^(n-1))` | 0.1 s |
//! | `none` | zero | — |
//!
//! `jitter = true` on `exponential`, `linear` or `fixed` adds a uniform random extra of up to
//! one (floored) base delay, so callers that failed together do not retry together. On
//! `jitter` it changes nothing (that strategy is random already); on `none` it adds nothing.
//! `max_delay` is a hard cap applied last, after any jitter: no delay ever exceeds it.
//!
//! ```
//! use resilience_core::backoff::{Backoff, BackoffStrategy, JitterRng};
//! use std::time::Duration;
//!
//! let b = Backoff::from_secs(BackoffStrategy::Exponential, 1.0, 5.0, false)?;
//! let mut rng = JitterRng::seeded(7);
//! let delays: Vec<_> = (1..=4).map(|n| b.delay(n, &mut rng)).collect();
//! assert_eq!(delays, [1.0, 2.0, 4.0, 5.0].map(Duration::from_secs_f64));
//! # Ok::<(), resilience_core::PolicyError>(())
//! ```

mod rng;
mod strategy;

pub use rng::JitterRng;
pub use strategy::{BackoffStrategy, UnknownStrategy};

use crate::error::{secs_to_duration, PolicyError};
use std::time::Duration;

/// A validated wait strategy. See the [module docs](self) for the formulas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    strategy: BackoffStrategy,
    // Already raised to the strategy's floor.
    base_delay: Duration,
    max_delay: Duration,
    jitter: bool,
}

impl Backoff {
    /// Builds a strategy. `base_delay` below the strategy's floor is raised to it (R5);
    /// `max_delay` is kept as given and caps every delay.
    pub fn new(
        strategy: BackoffStrategy,
        base_delay: Duration,
        max_delay: Duration,
        jitter: bool,
    ) -> Self {
        Self {
            strategy,
            base_delay: base_delay.max(strategy.floor()),
            max_delay,
            jitter,
        }
    }

    /// Builds a strategy from seconds, as config gives them. Rejects a NaN, infinite or
    /// negative value with an error naming `base_delay` or `max_delay`.
    pub fn from_secs(
        strategy: BackoffStrategy,
        base_delay: f64,
        max_delay: f64,
        jitter: bool,
    ) -> Result<Self, PolicyError> {
        let base = secs_to_duration("base_delay", base_delay)?;
        let max = secs_to_duration("max_delay", max_delay)?;
        Ok(Self::new(strategy, base, max, jitter))
    }

    /// The strategy.
    pub fn strategy(&self) -> BackoffStrategy {
        self.strategy
    }

    /// The effective base delay, after the strategy's floor.
    pub fn base_delay(&self) -> Duration {
        self.base_delay
    }

    /// The hard cap on every delay.
    pub fn max_delay(&self) -> Duration {
        self.max_delay
    }

    /// Whether extra jitter is added (see the module docs).
    pub fn jitter(&self) -> bool {
        self.jitter
    }

    /// The delay before retry number `retry` (1 for the wait after the first failure).
    /// `retry = 0` is treated as 1.
    pub fn delay(&self, retry: u32, rng: &mut JitterRng) -> Duration {
        let base = self.base_delay;
        let grown = || doubled(base, retry);
        let raw = match self.strategy {
            BackoffStrategy::None => return Duration::ZERO,
            BackoffStrategy::Fixed | BackoffStrategy::Linear => base,
            BackoffStrategy::Exponential => grown(),
            BackoffStrategy::Jitter => {
                // Full jitter over [floor, min(grown, cap)).
                let floor = BackoffStrategy::Jitter.floor();
                let top = grown().min(self.max_delay).max(floor);
                floor + (top - floor).mul_f64(rng.unit())
            }
        };
        let with_jitter = if self.jitter && self.strategy != BackoffStrategy::Jitter {
            raw.saturating_add(base.mul_f64(rng.unit()))
        } else {
            raw
        };
        with_jitter.min(self.max_delay)
    }
}

/// `base · 2^(retry-1)`, saturating at `Duration::MAX` instead of overflowing (the cap brings
/// it back). Exact up to saturation: a multiplier clamped to `u32::MAX` made the schedule stop
/// growing from retry 33 on.
fn doubled(base: Duration, retry: u32) -> Duration {
    const NANOS_PER_SEC: u128 = 1_000_000_000;
    let shift = retry.saturating_sub(1);
    let nanos = base.as_nanos();
    if nanos == 0 {
        return Duration::ZERO;
    }
    if shift >= nanos.leading_zeros() {
        return Duration::MAX;
    }
    let grown = nanos << shift;
    u64::try_from(grown / NANOS_PER_SEC).map_or(Duration::MAX, |secs| {
        Duration::new(secs, (grown % NANOS_PER_SEC) as u32)
    })
}
