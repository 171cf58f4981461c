//! The breaker's state: a lock-free readable word plus the fields only the lock may touch.
//!
//! The hot path (closed-state acquire and success) only loads atomics, so the state and the
//! failure count live outside the lock. Every *write* happens under the lock, so transitions
//! are serialised and the lock-free readers only ever see whole states.

use super::config::BreakerConfig;
use std::time::Duration;

/// Where a breaker stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CircuitState {
    /// Calls pass; consecutive failures are counted.
    Closed,
    /// Calls are refused until recovery.
    Open,
    /// A bounded number of probes decide between closing and re-opening.
    HalfOpen,
}

/// The packed state word: `epoch << 2 | state`.
///
/// The epoch grows by one on every transition and on `reset`, so a permit that remembers the
/// word it was issued under can tell whether its outcome is still about the current state
/// (B7). 62 bits of epoch never wrap in practice; if they did, only an outcome stale by 2^62
/// transitions could be mistaken for a fresh one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Word(pub(crate) u64);

const CLOSED: u64 = 0;
const OPEN: u64 = 1;
const HALF_OPEN: u64 = 2;
const STATE_MASK: u64 = 0b11;

impl Word {
    /// Closed at epoch 0: a new breaker.
    pub(crate) const INITIAL: Self = Self(CLOSED);

    /// Transitions and resets since the breaker was made.
    #[inline]
    pub(crate) fn epoch(self) -> u64 {
        self.0 >> 2
    }

    #[inline]
    pub(crate) fn state(self) -> CircuitState {
        match self.0 & STATE_MASK {
            CLOSED => CircuitState::Closed,
            OPEN => CircuitState::Open,
            _ => CircuitState::HalfOpen,
        }
    }

    #[inline]
    pub(crate) fn is_closed(self) -> bool {
        self.0 & STATE_MASK == CLOSED
    }

    /// The word for `state` one epoch after this one.
    pub(crate) fn next(self, state: CircuitState) -> Self {
        let bits = match state {
            CircuitState::Closed => CLOSED,
            CircuitState::Open => OPEN,
            CircuitState::HalfOpen => HALF_OPEN,
        };
        Self((self.0 & !STATE_MASK).wrapping_add(STATE_MASK + 1) | bits)
    }
}

/// What only the lock guards: timestamps and the half-open bookkeeping.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Locked {
    /// When the circuit last opened (B2's `recovery_timeout` counts from here).
    pub(crate) opened_at: Option<Duration>,
    /// When the circuit last entered half-open (B2's `cooldown` counts from here). Survives
    /// closing, so a flapping service waits out the cooldown; only `reset` clears it (B9).
    pub(crate) last_half_open_at: Option<Duration>,
    /// Probes admitted and not yet reported.
    pub(crate) probes_in_flight: u32,
    /// Probes that reported success in this half-open episode.
    pub(crate) probe_successes: u32,
}

impl Locked {
    /// The earliest time an open circuit may enter half-open (B2): `recovery_timeout` after
    /// opening and `cooldown` after the last half-open entry, whichever is later.
    pub(crate) fn half_open_due(&self, config: &BreakerConfig) -> Duration {
        let after_open = self.opened_at.map_or(Duration::ZERO, |t| {
            t.saturating_add(config.recovery_timeout())
        });
        let after_cooldown = self
            .last_half_open_at
            .map_or(Duration::ZERO, |t| t.saturating_add(config.cooldown()));
        after_open.max(after_cooldown)
    }

    /// Probe slots taken in this half-open episode. A successful probe keeps its slot until
    /// the circuit closes, so the successes that close the circuit are exactly the probes
    /// admitted: a failing probe can never be outvoted by later arrivals (B3, B4, B5).
    pub(crate) fn slots_taken(&self) -> u32 {
        self.probes_in_flight.saturating_add(self.probe_successes)
    }
}

/// Nanoseconds of `d`, saturating at `u64::MAX` (about 584 years: "never").
#[inline]
pub(crate) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// A consistent view of a breaker, read in one step under its lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct BreakerSnapshot {
    /// The state (not advanced by time: an open circuit past its recovery time shows `Open`).
    pub state: CircuitState,
    /// Transitions and resets since the breaker was made; a half-open episode is one epoch.
    pub epoch: u64,
    /// Consecutive failures counted (reset on entry into half-open, B2).
    pub failure_count: u32,
    /// When the circuit last opened, on the breaker's clock.
    pub opened_at: Option<Duration>,
    /// When the circuit last entered half-open, on the breaker's clock.
    pub last_half_open_at: Option<Duration>,
    /// Half-open probes admitted and not yet reported.
    pub probes_in_flight: u32,
    /// Half-open probes that succeeded in the current episode.
    pub probe_successes: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_packs_state_and_bumps_epoch() {
        let w = Word::INITIAL;
        assert_eq!(w.state(), CircuitState::Closed);
        let o = w.next(CircuitState::Open);
        assert_eq!(o.state(), CircuitState::Open);
        let h = o.next(CircuitState::HalfOpen);
        assert_eq!(h.state(), CircuitState::HalfOpen);
        let c = h.next(CircuitState::Closed);
        assert!(c.is_closed());
        // Same state, different epoch: a stale closed permit is told apart (B7).
        assert_ne!(c, w);
        assert_eq!(c.epoch(), 3);
    }

    #[test]
    fn b2_half_open_due_is_the_later_of_recovery_and_cooldown() {
        let cfg = BreakerConfig::new(1, Duration::from_secs(10), Duration::from_secs(30), 1)
            .expect("valid config");
        let mut l = Locked {
            opened_at: Some(Duration::from_secs(5)),
            ..Locked::default()
        };
        assert_eq!(l.half_open_due(&cfg), Duration::from_secs(15));
        l.last_half_open_at = Some(Duration::from_secs(4));
        assert_eq!(l.half_open_due(&cfg), Duration::from_secs(34));
        l.opened_at = Some(Duration::MAX);
        assert_eq!(l.half_open_due(&cfg), Duration::MAX);
        assert_eq!(nanos(Duration::MAX), u64::MAX);
    }
}
