//! The injectable source of jitter.

/// Randomness for jitter. Seed it for reproducible schedules in tests.
#[derive(Debug, Clone)]
pub struct JitterRng(fastrand::Rng);

impl JitterRng {
    /// A generator seeded from the thread's entropy.
    pub fn new() -> Self {
        Self(fastrand::Rng::new())
    }

    /// A generator that always yields the same sequence for the same `seed`.
    pub fn seeded(seed: u64) -> Self {
        Self(fastrand::Rng::with_seed(seed))
    }

    /// A uniform value in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        self.0.f64()
    }
}

impl Default for JitterRng {
    fn default() -> Self {
        Self::new()
    }
}
