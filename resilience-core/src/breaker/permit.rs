//! [`BreakerPermit`]: permission to run one call, reported back by value.

use super::state::Word;
use super::CircuitBreaker;
use std::fmt;
use std::mem;

/// Permission to run one call through a breaker; report the outcome with
/// [`success`](Self::success) or [`failure`](Self::failure).
///
/// A permit is two words (the breaker and the state word it was issued under) and holds no
/// lock, so the protected call never runs under the breaker's lock (B8). Outcomes reported
/// under a state word that is no longer current are ignored (B7, see
/// [`CircuitBreaker`](super::CircuitBreaker#stale-outcomes)).
///
/// Dropping a permit without reporting (its future was cancelled) counts nothing; a half-open
/// probe dropped that way gives its slot back (B5).
#[must_use = "report the call's outcome with success() or failure()"]
pub struct BreakerPermit<'a> {
    breaker: &'a CircuitBreaker,
    word: Word,
}

impl<'a> BreakerPermit<'a> {
    #[inline]
    pub(super) fn new(breaker: &'a CircuitBreaker, word: Word) -> Self {
        Self { breaker, word }
    }

    /// Whether this permit is a half-open probe (it occupies one of the
    /// `half_open_max_successes` slots until reported or dropped).
    #[inline]
    pub fn is_probe(&self) -> bool {
        !self.word.is_closed()
    }

    /// The breaker's epoch when this permit was issued (see [`BreakerSnapshot::epoch`]). Its
    /// outcome counts only while the breaker is still in that epoch; probe slots belong to
    /// one epoch, i.e. one half-open episode.
    ///
    /// [`BreakerSnapshot::epoch`]: super::BreakerSnapshot::epoch
    #[inline]
    pub fn epoch(&self) -> u64 {
        self.word.epoch()
    }

    /// Takes the fields out without running `Drop` (which would count a cancellation).
    #[inline]
    fn into_parts(self) -> (&'a CircuitBreaker, Word) {
        let parts = (self.breaker, self.word);
        // Both fields are `Copy`: forgetting leaks nothing, it only skips the cancel path.
        mem::forget(self);
        parts
    }

    /// The call succeeded.
    #[inline]
    pub fn success(self) {
        let (breaker, word) = self.into_parts();
        breaker.on_success(word);
    }

    /// The call failed. Every error counts (B6): the breaker does not look at the error.
    #[inline]
    pub fn failure(self) {
        let (breaker, word) = self.into_parts();
        breaker.on_failure(word);
    }
}

impl Drop for BreakerPermit<'_> {
    #[inline]
    fn drop(&mut self) {
        // Closed-state permits hold no slot: nothing to give back.
        if !self.word.is_closed() {
            self.breaker.on_cancel(self.word);
        }
    }
}

impl fmt::Debug for BreakerPermit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BreakerPermit")
            .field("service", &&**self.breaker.service())
            .field("probe", &self.is_probe())
            .finish()
    }
}
