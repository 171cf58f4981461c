//! Clocks and sleepers for the three ways to run: virtual, scaled real time, real time.
//!
//! - Virtual: a tokio runtime with paused time (`start_paused`), [`TokioClock::new(1.0)`] and
//!   [`ScaledSleeper::new(1.0)`]: tokio jumps its clock to the next timer whenever every task
//!   waits, so an hour of agents runs in milliseconds and, on a current-thread runtime, the
//!   same way every time.
//! - Scaled: a normal runtime with a speed-up factor `k`: the clock reads `k ×` real elapsed
//!   time and sleepers sleep `1/k` of what they are asked, so a 20-minute incident replays in a
//!   minute while every component still sees minutes.
//! - Real: factor 1 on a normal runtime.
//!
//! [`TokioClock::new(1.0)`]: TokioClock::new
//! [`ScaledSleeper::new(1.0)`]: ScaledSleeper::new

use resilience_core::clock::Clock;
use resilience_core::sleep::{AsyncSleeper, SleepFuture};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A [`Clock`] on tokio's clock (so it follows paused time), optionally sped up.
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    origin: tokio::time::Instant,
    unix_origin: Duration,
    factor: f64,
}

impl TokioClock {
    /// A clock starting at zero now, running `factor` times faster than tokio's clock.
    /// A factor that is not a positive finite number is taken as 1.
    pub fn new(factor: f64) -> Self {
        Self {
            origin: tokio::time::Instant::now(),
            unix_origin: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or(Duration::ZERO),
            factor: sane_factor(factor),
        }
    }

    /// The same clock with a fixed wall-clock origin, for runs that must print the same
    /// `x-ratelimit-reset` epochs every time.
    pub fn with_unix_origin(mut self, unix_origin: Duration) -> Self {
        self.unix_origin = unix_origin;
        self
    }
}

impl Clock for TokioClock {
    fn now(&self) -> Duration {
        self.origin.elapsed().mul_f64(self.factor)
    }

    fn unix_time(&self) -> Duration {
        self.unix_origin + self.now()
    }
}

/// An [`AsyncSleeper`] on tokio timers that sleeps `1/factor` of each requested delay.
#[derive(Debug, Clone, Copy)]
pub struct ScaledSleeper {
    factor: f64,
}

impl ScaledSleeper {
    /// A sleeper for a clock running `factor` times faster than tokio's.
    pub fn new(factor: f64) -> Self {
        Self {
            factor: sane_factor(factor),
        }
    }
}

impl AsyncSleeper for ScaledSleeper {
    fn sleep(&self, delay: Duration) -> SleepFuture {
        let real = delay.div_f64(self.factor);
        Box::pin(tokio::time::sleep(real))
    }
}

fn sane_factor(factor: f64) -> f64 {
    if factor.is_finite() && factor > 0.0 {
        factor
    } else {
        1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn scaled_clock_and_sleeper_agree() {
        let clock = TokioClock::new(30.0);
        let sleeper = ScaledSleeper::new(30.0);
        sleeper.sleep(Duration::from_secs(60)).await;
        // 60 s of emulated time is 2 s of (paused) tokio time.
        let now = clock.now();
        assert!(now >= Duration::from_secs(60) && now < Duration::from_millis(60_100));
    }

    #[test]
    fn bad_factors_fall_back_to_one() {
        assert_eq!(sane_factor(f64::NAN), 1.0);
        assert_eq!(sane_factor(-3.0), 1.0);
        assert_eq!(sane_factor(0.0), 1.0);
    }
}
