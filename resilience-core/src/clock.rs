//! Injected time.
//!
//! Every mechanism reads time through [`Clock`], so tests drive a [`ManualClock`] and assert
//! exact schedules without sleeping. "Now" is kept apart from "wait": waiting goes through the
//! sleepers in [`crate::sleep`].
//!
//! ```
//! use resilience_core::clock::{Clock, ManualClock};
//! use std::time::Duration;
//!
//! let clock = ManualClock::new();
//! let other_handle = clock.clone(); // clones share one timeline
//! clock.advance(Duration::from_secs(5));
//! assert_eq!(other_handle.now(), Duration::from_secs(5));
//! ```

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
#[cfg(not(target_os = "linux"))]
use std::time::Instant;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A source of time.
///
/// `now` is monotonic time since an arbitrary origin fixed when the clock was made;
/// `unix_time` is wall-clock time since the Unix epoch, used only to read headers such as
/// `x-ratelimit-reset` that are given in epoch seconds.
pub trait Clock: Send + Sync + fmt::Debug + 'static {
    /// Monotonic time elapsed since this clock's origin. Never goes backwards.
    fn now(&self) -> Duration;

    /// Wall-clock time since the Unix epoch.
    fn unix_time(&self) -> Duration;

    /// [`now`](Self::now) read cheaply at a coarser resolution (a few milliseconds), on the
    /// same timeline: never ahead of a `now` read after it, and behind it by at most
    /// [`coarse_lag`](Self::coarse_lag). The sync retry loop stamps the start of its first
    /// attempt with it, and the governor's fast path decides with it, so they pay ~3 ns
    /// instead of a precise read (~25 ns on this project's CI machines). Defaults to `now`.
    #[inline]
    fn now_coarse(&self) -> Duration {
        self.now()
    }

    /// How far [`now_coarse`](Self::now_coarse) may lag behind [`now`](Self::now): zero when
    /// it is `now` (the default, and [`ManualClock`]'s). A reader that needs an upper bound
    /// on the true time (the governor, stamping a lease renewal) uses
    /// `now_coarse() + coarse_lag()`.
    #[inline]
    fn coarse_lag(&self) -> Duration {
        Duration::ZERO
    }
}

impl<C: Clock + ?Sized> Clock for Arc<C> {
    #[inline]
    fn now(&self) -> Duration {
        (**self).now()
    }
    #[inline]
    fn unix_time(&self) -> Duration {
        (**self).unix_time()
    }
    #[inline]
    fn now_coarse(&self) -> Duration {
        (**self).now_coarse()
    }
    #[inline]
    fn coarse_lag(&self) -> Duration {
        (**self).coarse_lag()
    }
}

/// The real clock: the OS monotonic clock for `now` (`CLOCK_MONOTONIC` on Linux, as
/// `std::time::Instant`), its coarse variant for `now_coarse` (`CLOCK_MONOTONIC_COARSE` on
/// Linux; elsewhere the precise one), and `SystemTime` for `unix_time`.
///
/// On Linux the coarse clock advances once per kernel tick (`clock_getres` says how often:
/// 4 ms at the common `HZ=250`), so it lags the precise one by up to a tick;
/// [`coarse_lag`](Clock::coarse_lag) reports two ticks, allowing for a late one.
#[derive(Debug, Clone, Copy)]
pub struct MonotonicClock {
    origin: Origin,
    #[cfg(target_os = "linux")]
    coarse_lag: Duration,
}

#[cfg(target_os = "linux")]
type Origin = Duration;
#[cfg(not(target_os = "linux"))]
type Origin = Instant;

#[cfg(target_os = "linux")]
#[inline]
fn os_now(id: rustix::time::ClockId) -> Duration {
    let ts = rustix::time::clock_gettime(id);
    // The monotonic clocks never report negative or out-of-range fields.
    Duration::new(
        u64::try_from(ts.tv_sec).unwrap_or(0),
        u32::try_from(ts.tv_nsec).unwrap_or(0),
    )
}

impl MonotonicClock {
    /// A clock whose origin is the moment of this call.
    pub fn new() -> Self {
        #[cfg(target_os = "linux")]
        {
            let res = rustix::time::clock_getres(rustix::time::ClockId::MonotonicCoarse);
            let tick = Duration::new(
                u64::try_from(res.tv_sec).unwrap_or(0),
                u32::try_from(res.tv_nsec).unwrap_or(0),
            );
            Self {
                origin: os_now(rustix::time::ClockId::Monotonic),
                // A late tick is still a tick late; the kernel's timekeeping may run a little
                // behind its timer interrupt.
                coarse_lag: tick.saturating_mul(2),
            }
        }
        #[cfg(not(target_os = "linux"))]
        Self {
            origin: Instant::now(),
        }
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for MonotonicClock {
    #[cfg(target_os = "linux")]
    #[inline]
    fn now(&self) -> Duration {
        os_now(rustix::time::ClockId::Monotonic).saturating_sub(self.origin)
    }

    #[cfg(not(target_os = "linux"))]
    #[inline]
    fn now(&self) -> Duration {
        self.origin.elapsed()
    }

    #[cfg(target_os = "linux")]
    #[inline]
    fn now_coarse(&self) -> Duration {
        os_now(rustix::time::ClockId::MonotonicCoarse).saturating_sub(self.origin)
    }

    #[cfg(target_os = "linux")]
    #[inline]
    fn coarse_lag(&self) -> Duration {
        self.coarse_lag
    }

    fn unix_time(&self) -> Duration {
        // A clock set before 1970 is a broken host; report the epoch rather than panic.
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO)
    }
}

/// A monotonic clock that keeps counting while the host is suspended: `CLOCK_BOOTTIME` on
/// Linux (elsewhere the same as [`MonotonicClock::now`]), `SystemTime` for `unix_time`.
///
/// `CLOCK_MONOTONIC` stops during a suspend, so a deadline measured on it ("the lease ends
/// 2 min after the last renewal") would still look open to a laptop or VM resumed an hour
/// later. Use this clock where a deadline bounds what a process may do on its own (the
/// Redis quota's offline spending); the hot paths keep [`MonotonicClock`], whose coarse
/// reading is cheaper.
///
/// ```
/// use resilience_core::clock::{BootClock, Clock};
/// let c = BootClock::new();
/// assert!(c.now() < std::time::Duration::from_secs(1));
/// ```
#[derive(Debug, Clone, Copy)]
pub struct BootClock {
    origin: Origin,
}

impl BootClock {
    /// A clock whose origin is the moment of this call.
    pub fn new() -> Self {
        #[cfg(target_os = "linux")]
        {
            Self {
                origin: os_now(rustix::time::ClockId::Boottime),
            }
        }
        #[cfg(not(target_os = "linux"))]
        Self {
            origin: Instant::now(),
        }
    }
}

impl Default for BootClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for BootClock {
    #[cfg(target_os = "linux")]
    #[inline]
    fn now(&self) -> Duration {
        os_now(rustix::time::ClockId::Boottime).saturating_sub(self.origin)
    }

    #[cfg(not(target_os = "linux"))]
    #[inline]
    fn now(&self) -> Duration {
        self.origin.elapsed()
    }

    fn unix_time(&self) -> Duration {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO)
    }
}

/// A clock that moves only when told to. Clones share one timeline.
///
/// `unix_time` is `unix_origin + now`, so header arithmetic stays consistent with `now`.
#[derive(Clone)]
pub struct ManualClock {
    inner: Arc<ManualInner>,
}

struct ManualInner {
    nanos: AtomicU64,
    unix_origin: Duration,
}

impl ManualClock {
    /// A manual clock at time zero whose wall clock starts at 2026-01-01T00:00:00Z.
    pub fn new() -> Self {
        Self::with_unix_origin(Duration::from_secs(1_767_225_600))
    }

    /// A manual clock at time zero whose wall clock starts at `unix_origin` after the epoch.
    pub fn with_unix_origin(unix_origin: Duration) -> Self {
        Self {
            inner: Arc::new(ManualInner {
                nanos: AtomicU64::new(0),
                unix_origin,
            }),
        }
    }

    /// Moves time forward by `by` (saturating at about 584 years).
    pub fn advance(&self, by: Duration) {
        let by = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        let _ = self
            .inner
            .nanos
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                Some(n.saturating_add(by))
            });
    }

    /// Sets the time to `to` if that is later than now; time never goes backwards.
    pub fn advance_to(&self, to: Duration) {
        let to = u64::try_from(to.as_nanos()).unwrap_or(u64::MAX);
        self.inner.nanos.fetch_max(to, Ordering::AcqRel);
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManualClock")
            .field("now", &self.now())
            .finish()
    }
}

impl Clock for ManualClock {
    #[inline]
    fn now(&self) -> Duration {
        Duration::from_nanos(self.inner.nanos.load(Ordering::Acquire))
    }

    fn unix_time(&self) -> Duration {
        self.inner.unix_origin + self.now()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_clones_share_time_and_never_go_back() {
        let a = ManualClock::new();
        let b = a.clone();
        a.advance(Duration::from_millis(1500));
        assert_eq!(b.now(), Duration::from_millis(1500));
        b.advance_to(Duration::from_secs(1));
        assert_eq!(a.now(), Duration::from_millis(1500));
        b.advance_to(Duration::from_secs(3));
        assert_eq!(a.now(), Duration::from_secs(3));
        assert_eq!(a.unix_time(), Duration::from_secs(1_767_225_603));
    }

    #[test]
    fn monotonic_clock_moves_forward_and_coarse_stays_on_its_timeline() {
        let c = MonotonicClock::new();
        let t1 = c.now();
        std::thread::sleep(Duration::from_millis(20));
        let coarse = c.now_coarse();
        let t2 = c.now();
        assert!(t2 >= t1 + Duration::from_millis(20));
        // Coarse lags by at most a tick (4 ms at HZ=250; allow 20 ms) and never leads.
        assert!(coarse <= t2, "{coarse:?} > {t2:?}");
        assert!(
            t2 - coarse < Duration::from_millis(20),
            "{coarse:?} vs {t2:?}"
        );
        // Its stated lag is a few ticks at most (zero where coarse is precise).
        assert!(
            c.coarse_lag() <= Duration::from_millis(50),
            "{:?}",
            c.coarse_lag()
        );
        #[cfg(target_os = "linux")]
        assert!(c.coarse_lag() > Duration::ZERO);
        assert!(c.unix_time() > Duration::from_secs(1_700_000_000));
    }

    /// It reads the boot timeline, which `/proc/uptime` also reads (both count suspended
    /// time); a CI host that never suspends cannot tell it from `CLOCK_MONOTONIC`.
    #[cfg(target_os = "linux")]
    #[test]
    fn boot_clock_moves_forward_on_the_timeline_of_proc_uptime() {
        let c = BootClock::new();
        let t1 = c.now();
        std::thread::sleep(Duration::from_millis(20));
        assert!(c.now() >= t1 + Duration::from_millis(20));
        let boot = os_now(rustix::time::ClockId::Boottime);
        let uptime: f64 = std::fs::read_to_string("/proc/uptime")
            .expect("/proc/uptime")
            .split_whitespace()
            .next()
            .and_then(|s| s.parse().ok())
            .expect("uptime seconds");
        assert!(
            (boot.as_secs_f64() - uptime).abs() < 1.0,
            "{boot:?} vs {uptime} s"
        );
        assert!(c.unix_time() > Duration::from_secs(1_700_000_000));
    }
}
