//! The strategy names and their floors.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// How the wait between attempts grows. Names match config: `exponential`, `linear`, `fixed`,
/// `jitter`, `none`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BackoffStrategy {
    /// `base · 2^(n-1)`.
    Exponential,
    /// A constant `base` (floor 2.0 s), as the seed defines it.
    Linear,
    /// A constant `base` (floor 0.1 s).
    Fixed,
    /// Full jitter over an exponentially growing range.
    Jitter,
    /// No wait at all.
    None,
}

impl BackoffStrategy {
    /// Every strategy, in documentation order.
    pub const ALL: [Self; 5] = [
        Self::Exponential,
        Self::Linear,
        Self::Fixed,
        Self::Jitter,
        Self::None,
    ];

    /// The config spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Exponential => "exponential",
            Self::Linear => "linear",
            Self::Fixed => "fixed",
            Self::Jitter => "jitter",
            Self::None => "none",
        }
    }

    /// The smallest base delay this strategy will use (R5).
    pub fn floor(self) -> Duration {
        match self {
            Self::Exponential | Self::Fixed | Self::Jitter => Duration::from_millis(100),
            Self::Linear => Duration::from_secs(2),
            Self::None => Duration::ZERO,
        }
    }
}

impl fmt::Display for BackoffStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A strategy name that is not one of the five.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownStrategy(pub String);

impl fmt::Display for UnknownStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown backoff strategy `{}`: expected one of exponential, linear, fixed, jitter, none",
            self.0
        )
    }
}

impl std::error::Error for UnknownStrategy {}

impl FromStr for BackoffStrategy {
    type Err = UnknownStrategy;

    /// Parses the config spelling, ignoring ASCII case and surrounding spaces.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        Self::ALL
            .into_iter()
            .find(|k| k.as_str().eq_ignore_ascii_case(t))
            .ok_or_else(|| UnknownStrategy(s.to_owned()))
    }
}
