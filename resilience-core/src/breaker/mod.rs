//! The per-service circuit breaker (B1–B11).
//!
//! ```text
//! closed ──failure_threshold consecutive failures──▶ open            (B1)
//! open ──recovery_timeout since opening AND cooldown since
//!        the last half-open entry; failure count := 0──▶ half-open   (B2)
//! half-open ──half_open_max_successes probe successes──▶ closed      (B3)
//! half-open ──any probe failure──▶ open                              (B4)
//! ```
//!
//! Half-open admits at most `half_open_max_successes` probes; everyone else is refused with
//! [`ResilienceError::CircuitOpen`] at once (B5). Transitions out of `open` happen lazily, on
//! the first [`acquire`](CircuitBreaker::acquire), [`state`](CircuitBreaker::state) or
//! [`is_open`](CircuitBreaker::is_open) after they are due; there is no timer.
//!
//! ```
//! use resilience_core::breaker::{BreakerConfig, CircuitBreaker, CircuitState};
//! use resilience_core::clock::ManualClock;
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! let clock = ManualClock::new();
//! let config = BreakerConfig::new(2, Duration::from_secs(60), Duration::ZERO, 1)?;
//! let breaker = CircuitBreaker::with_clock("plan_service", config, Arc::new(clock.clone()));
//!
//! breaker.acquire()?.failure();
//! breaker.acquire()?.failure();
//! assert!(breaker.is_open());
//! assert!(breaker.acquire().is_err()); // refused without running anything
//!
//! clock.advance(Duration::from_secs(60));
//! let probe = breaker.acquire()?; // the one half-open probe
//! assert!(probe.is_probe());
//! probe.success();
//! assert_eq!(breaker.state(), CircuitState::Closed);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod config;
mod events;
mod permit;
mod state;

pub use config::BreakerConfig;
pub use events::TARGET as EVENT_TARGET;
pub use permit::BreakerPermit;
pub use state::{BreakerSnapshot, CircuitState};

use crate::clock::{Clock, MonotonicClock};
use crate::error::ResilienceError;
use crate::sync::{lock, AtomicU32, AtomicU64, Mutex, Ordering};
use events::Transition;
use state::{nanos, Locked, Word};
use std::fmt;
use std::sync::Arc;

/// A thread-safe circuit breaker for one service.
///
/// # Cost
///
/// In the closed state, [`acquire`](Self::acquire) and [`BreakerPermit::success`] read no
/// clock, take no lock and, while the failure count is 0, write no shared memory: they are two
/// atomic loads, so callers on many threads do not contend. Failures, half-open probes and
/// transitions take a short internal lock; the protected call never runs under it (B8).
///
/// # Stale outcomes
///
/// A permit remembers the state word (state plus an epoch bumped on every transition and on
/// [`reset`](Self::reset)) it was issued under, and its outcome counts only if that word is
/// still current. So:
/// - a probe success that lands after another probe's failure re-opened the circuit is
///   ignored; the circuit stays open (B7);
/// - an outcome of a call that started before the circuit opened, closed, or was reset is
///   ignored: a call from before a `reset` cannot push the fresh count towards opening, and a
///   late failure cannot re-open a circuit that has since recovered.
///
/// # Probe slots
///
/// A successful probe keeps its slot until the circuit closes, so at most
/// `half_open_max_successes` probes run per half-open episode and all of them must succeed to
/// close; a failing probe cannot be outvoted by later arrivals. A probe dropped unreported
/// gives its slot back (B5).
///
/// Slots belong to one half-open episode ([`BreakerPermit::epoch`]): once a probe's failure
/// re-opens the circuit, its sibling probes are stale, and the next episode (a full recovery
/// time later) starts with every slot free even if a stale probe is still running. A probe
/// that never returns (a hung sync call, a leaked permit) holds its slot until a sibling
/// fails or [`reset`](Self::reset) is called; with one slot, until `reset`. Async calls
/// through the retry executor are cancelled at their total timeout, which frees the slot.
pub struct CircuitBreaker {
    /// Packed state and epoch ([`Word`]); written only under `locked`.
    word: AtomicU64,
    /// Consecutive failures; written only under `locked`.
    failures: AtomicU32,
    /// While open: nanoseconds at which half-open is due, so refusals need no lock. Written
    /// (under `locked`) before the word that publishes it.
    half_open_due: AtomicU64,
    locked: Mutex<Locked>,
    service: Arc<str>,
    config: BreakerConfig,
    clock: Arc<dyn Clock>,
}

impl CircuitBreaker {
    /// A breaker on the real clock.
    pub fn new(service: impl Into<Arc<str>>, config: BreakerConfig) -> Self {
        Self::with_clock(service, config, Arc::new(MonotonicClock::new()))
    }

    /// A breaker reading time from `clock`.
    pub fn with_clock(
        service: impl Into<Arc<str>>,
        config: BreakerConfig,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            word: AtomicU64::new(Word::INITIAL.0),
            failures: AtomicU32::new(0),
            half_open_due: AtomicU64::new(0),
            locked: Mutex::new(Locked::default()),
            service: service.into(),
            config,
            clock,
        }
    }

    /// The service this breaker protects.
    pub fn service(&self) -> &Arc<str> {
        &self.service
    }

    /// The settings.
    pub fn config(&self) -> &BreakerConfig {
        &self.config
    }

    /// Asks to run one call. The permit must be told the outcome; dropping it untold (a
    /// cancelled future) gives a half-open probe slot back and counts nothing.
    ///
    /// Refuses with [`ResilienceError::CircuitOpen`] while open, and in half-open once every
    /// probe slot is taken (B5).
    #[inline]
    pub fn acquire(&self) -> Result<BreakerPermit<'_>, ResilienceError> {
        let word = self.load_word();
        if word.is_closed() {
            return Ok(BreakerPermit::new(self, word));
        }
        self.acquire_slow(word)
    }

    #[cold]
    #[inline(never)]
    fn acquire_slow(&self, seen: Word) -> Result<BreakerPermit<'_>, ResilienceError> {
        if seen.state() == CircuitState::Open && self.still_open(seen) {
            return Err(self.refusal());
        }
        let (admitted, transition) = {
            let mut locked = lock(&self.locked);
            let (word, transition) = self.advance(&mut locked);
            let admitted = match word.state() {
                CircuitState::Closed => Some(word),
                CircuitState::Open => None,
                CircuitState::HalfOpen => {
                    if locked.slots_taken() < self.config.half_open_max_successes() {
                        locked.probes_in_flight += 1;
                        Some(word)
                    } else {
                        None
                    }
                }
            };
            (admitted, transition)
        };
        if let Some(t) = transition {
            t.emit(&self.service);
        }
        match admitted {
            Some(word) => Ok(BreakerPermit::new(self, word)),
            None => Err(self.refusal()),
        }
    }

    /// The current state, entering half-open first if that is due (B2).
    pub fn state(&self) -> CircuitState {
        let seen = self.load_word();
        if seen.state() != CircuitState::Open || self.still_open(seen) {
            return seen.state();
        }
        let (word, transition) = self.advance(&mut lock(&self.locked));
        if let Some(t) = transition {
            t.emit(&self.service);
        }
        word.state()
    }

    /// Whether the circuit is open (refusing without probing). Safe from any thread (B10).
    pub fn is_open(&self) -> bool {
        self.state() == CircuitState::Open
    }

    /// How much longer an open circuit refuses every call before half-open is due (B2);
    /// `None` if it would consider a call now (closed, half-open, or due). Lock-free.
    pub fn open_for(&self) -> Option<std::time::Duration> {
        let seen = self.load_word();
        if seen.state() != CircuitState::Open {
            return None;
        }
        let due = self.half_open_due.load(Ordering::Acquire);
        if self.load_word() != seen {
            return None;
        }
        let now = nanos(self.clock.now());
        (now < due).then(|| std::time::Duration::from_nanos(due - now))
    }

    /// Consecutive failures counted so far (reset to 0 on entry into half-open, B2).
    pub fn failure_count(&self) -> u32 {
        self.failures.load(Ordering::Acquire)
    }

    /// Every counter and timestamp, read in one step under the lock.
    pub fn snapshot(&self) -> BreakerSnapshot {
        let locked = lock(&self.locked);
        let word = Word(self.word.load(Ordering::Relaxed));
        BreakerSnapshot {
            state: word.state(),
            epoch: word.epoch(),
            failure_count: self.failures.load(Ordering::Relaxed),
            opened_at: locked.opened_at,
            last_half_open_at: locked.last_half_open_at,
            probes_in_flight: locked.probes_in_flight,
            probe_successes: locked.probe_successes,
        }
    }

    /// Closes the circuit and clears every counter and timestamp at once, under the lock (B9).
    /// Outcomes of permits issued before the reset are ignored.
    pub fn reset(&self) {
        let mut locked = lock(&self.locked);
        *locked = Locked::default();
        self.failures.store(0, Ordering::Relaxed);
        self.half_open_due.store(0, Ordering::Relaxed);
        let word = Word(self.word.load(Ordering::Relaxed)).next(CircuitState::Closed);
        self.word.store(word.0, Ordering::Release);
    }

    #[inline]
    fn load_word(&self) -> Word {
        Word(self.word.load(Ordering::Acquire))
    }

    fn refusal(&self) -> ResilienceError {
        ResilienceError::CircuitOpen {
            service: Arc::clone(&self.service),
        }
    }

    /// Lock-free check that the circuit seen as `seen` (open) is still open and not yet due
    /// for half-open. `false` means "take the lock and look again".
    fn still_open(&self, seen: Word) -> bool {
        let due = self.half_open_due.load(Ordering::Acquire);
        // `due` is published before the word; if the word moved on, `due` may belong to a
        // later episode, so only a word that is still `seen` vouches for it.
        if self.load_word() != seen {
            return false;
        }
        nanos(self.clock.now()) < due
    }

    /// Under the lock: moves an open circuit to half-open if that is due (B2) and returns the
    /// current word.
    fn advance(&self, locked: &mut Locked) -> (Word, Option<Transition>) {
        // Every write to the atomics happens under the lock we hold: relaxed loads suffice.
        let word = Word(self.word.load(Ordering::Relaxed));
        if word.state() != CircuitState::Open {
            return (word, None);
        }
        let now = self.clock.now();
        if now < locked.half_open_due(&self.config) {
            return (word, None);
        }
        locked.last_half_open_at = Some(now);
        locked.probes_in_flight = 0;
        locked.probe_successes = 0;
        // Stale counts must not re-open the circuit the moment it half-opens (B2).
        self.failures.store(0, Ordering::Relaxed);
        let next = word.next(CircuitState::HalfOpen);
        self.word.store(next.0, Ordering::Release);
        (next, Some(Transition::HalfOpened))
    }

    /// Under the lock: opens the circuit now (B1, B4) after `failure_count` failures.
    fn open(&self, locked: &mut Locked, word: Word, failure_count: u32) -> Transition {
        locked.opened_at = Some(self.clock.now());
        locked.probes_in_flight = 0;
        locked.probe_successes = 0;
        self.failures.store(failure_count, Ordering::Relaxed);
        let due = nanos(locked.half_open_due(&self.config));
        self.half_open_due.store(due, Ordering::Release);
        self.word
            .store(word.next(CircuitState::Open).0, Ordering::Release);
        Transition::Opened { failure_count }
    }

    #[inline]
    fn on_success(&self, word: Word) {
        // The hot path: closed with nothing to forgive writes nothing.
        if word.is_closed() && self.failures.load(Ordering::Relaxed) == 0 {
            return;
        }
        self.on_success_slow(word);
    }

    #[cold]
    #[inline(never)]
    fn on_success_slow(&self, word: Word) {
        let transition = {
            let mut locked = lock(&self.locked);
            if self.word.load(Ordering::Relaxed) != word.0 {
                return; // stale (B7)
            }
            match word.state() {
                CircuitState::Closed => {
                    // A success ends the run of consecutive failures (B1).
                    self.failures.store(0, Ordering::Relaxed);
                    None
                }
                CircuitState::HalfOpen => {
                    locked.probes_in_flight = locked.probes_in_flight.saturating_sub(1);
                    locked.probe_successes += 1;
                    let successes = locked.probe_successes;
                    if successes < self.config.half_open_max_successes() {
                        None
                    } else {
                        // B3: every admitted probe succeeded (so none is still in flight).
                        locked.probe_successes = 0;
                        locked.probes_in_flight = 0;
                        self.failures.store(0, Ordering::Relaxed);
                        self.word
                            .store(word.next(CircuitState::Closed).0, Ordering::Release);
                        Some(Transition::Closed { successes })
                    }
                }
                CircuitState::Open => None,
            }
        };
        if let Some(t) = transition {
            t.emit(&self.service);
        }
    }

    #[cold]
    #[inline(never)]
    fn on_failure(&self, word: Word) {
        let transition = {
            let mut locked = lock(&self.locked);
            if self.word.load(Ordering::Relaxed) != word.0 {
                return; // stale: the circuit moved on since this call started
            }
            match word.state() {
                CircuitState::Closed => {
                    let count = self.failures.load(Ordering::Relaxed).saturating_add(1);
                    if count >= self.config.failure_threshold() {
                        Some(self.open(&mut locked, word, count)) // B1
                    } else {
                        self.failures.store(count, Ordering::Relaxed);
                        None
                    }
                }
                // B4: any probe failure re-opens; the count restarted at 0 on entry (B2).
                CircuitState::HalfOpen => Some(self.open(&mut locked, word, 1)),
                CircuitState::Open => None,
            }
        };
        // B8: logged only once the lock is released.
        if let Some(t) = transition {
            t.emit(&self.service);
        }
    }

    /// A probe dropped without an outcome gives its slot back and counts nothing (B5).
    #[cold]
    #[inline(never)]
    fn on_cancel(&self, word: Word) {
        let mut locked = lock(&self.locked);
        if self.word.load(Ordering::Relaxed) == word.0 {
            locked.probes_in_flight = locked.probes_in_flight.saturating_sub(1);
        }
    }
}

impl fmt::Debug for CircuitBreaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreaker")
            .field("service", &&*self.service)
            .field("config", &self.config)
            .field("state", &self.load_word().state())
            .field("failure_count", &self.failure_count())
            .finish_non_exhaustive()
    }
}
