//! How long a waiter sleeps before asking again.

use crate::config::WaitPolicy;
use crate::grant::{QuotaWait, QuotaWaitReason};
use resilience_core::governor::Priority;
use std::time::Duration;

/// A sleep, and whether a pub/sub wake-up may cut it short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Plan {
    pub sleep: Duration,
    pub wakeable: bool,
}

/// G6: after a block, the block's end plus a uniform draw in the priority's window (so the
/// waiters of every process come back in priority order, spread out). While the quota is
/// spent, at most the poll bound × [0.5, 1) (a lost pub/sub message costs at most that),
/// cut short by a wake-up; once the reset may come before that (`round_trip`: how much
/// earlier than the reply says it may be), the reset plus a draw in the priority's window,
/// as after a block: every waiter paused until the reset would otherwise come back at its
/// first instant.
pub(crate) fn plan(
    wait: &QuotaWait,
    priority: Priority,
    policy: &WaitPolicy,
    round_trip: Duration,
) -> Plan {
    let released = |after: Duration| Plan {
        sleep: after + window_draw(priority, policy),
        wakeable: false,
    };
    match wait.reason {
        QuotaWaitReason::Blocked => released(wait.delay),
        QuotaWaitReason::Exhausted => {
            let poll = policy.poll.mul_f64(0.5 + fastrand::f64() / 2.0);
            if wait.delay.saturating_sub(round_trip) <= poll {
                released(wait.delay)
            } else {
                Plan {
                    sleep: poll,
                    wakeable: true,
                }
            }
        }
        // A rule's unit frees at a known time: sleep until then, P0 first (its wake-up
        // jitter), not poll.
        QuotaWaitReason::Paced => Plan {
            sleep: wait.delay + wake_jitter(priority, policy),
            wakeable: false,
        },
        QuotaWaitReason::Recovering
        | QuotaWaitReason::Yielding
        | QuotaWaitReason::InFlight
        | QuotaWaitReason::Sequential => {
            let poll = policy.poll.mul_f64(0.5 + fastrand::f64() / 2.0);
            Plan {
                sleep: wait.delay.min(poll),
                wakeable: true,
            }
        }
    }
}

/// A uniform draw in the priority's G6 release window.
pub(crate) fn window_draw(priority: Priority, policy: &WaitPolicy) -> Duration {
    let (start, end) = policy.windows[priority.index()];
    start + (end - start).mul_f64(fastrand::f64())
}

/// After a wake-up: a uniform draw in `[p, p + 1) × wake_jitter`, P0 first.
pub(crate) fn wake_jitter(priority: Priority, policy: &WaitPolicy) -> Duration {
    policy
        .wake_jitter
        .mul_f64(priority.index() as f64 + fastrand::f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(reason: QuotaWaitReason, ms: u64) -> QuotaWait {
        QuotaWait {
            delay: Duration::from_millis(ms),
            retry_in: Duration::from_millis(ms),
            reason,
        }
    }

    #[test]
    fn g7_g6_block_waiters_come_back_in_their_priority_window() {
        let p = WaitPolicy::default();
        for _ in 0..500 {
            let s = |pr| {
                plan(&w(QuotaWaitReason::Blocked, 1_000), pr, &p, Duration::ZERO)
                    .sleep
                    .as_millis()
            };
            let (p0, p1, p2) = (s(Priority::P0), s(Priority::P1), s(Priority::P2));
            assert!((1_000..1_500).contains(&p0), "{p0}");
            assert!((1_500..4_500).contains(&p1), "{p1}");
            assert!((4_500..10_500).contains(&p2), "{p2}");
        }
        assert!(
            !plan(
                &w(QuotaWaitReason::Blocked, 1),
                Priority::P0,
                &p,
                Duration::ZERO
            )
            .wakeable
        );
    }

    #[test]
    fn g7_exhausted_waiters_poll_within_the_documented_bound() {
        let p = WaitPolicy::default();
        for _ in 0..500 {
            let pl = plan(
                &w(QuotaWaitReason::Exhausted, 3_600_000),
                Priority::P2,
                &p,
                Duration::ZERO,
            );
            assert!(pl.wakeable);
            assert!(
                pl.sleep >= p.poll / 2 && pl.sleep < p.poll,
                "{:?}",
                pl.sleep
            );
            let short = plan(
                &w(QuotaWaitReason::Recovering, 10),
                Priority::P1,
                &p,
                Duration::ZERO,
            );
            assert_eq!(short.sleep, Duration::from_millis(10));
            let j0 = wake_jitter(Priority::P0, &p);
            let j2 = wake_jitter(Priority::P2, &p);
            assert!(j0 < p.wake_jitter && j2 >= p.wake_jitter * 2 && j2 < p.wake_jitter * 3);
        }
    }

    #[test]
    fn g7_g6_waiters_paused_until_a_reset_due_before_the_next_poll_come_back_in_their_window() {
        let p = WaitPolicy::default();
        for _ in 0..500 {
            let pl = plan(
                &w(QuotaWaitReason::Exhausted, 200),
                Priority::P2,
                &p,
                Duration::ZERO,
            );
            assert!(!pl.wakeable);
            let ms = pl.sleep.as_millis();
            assert!((3_700..9_700).contains(&ms), "{ms}");
            let p0 = plan(
                &w(QuotaWaitReason::Exhausted, 200),
                Priority::P0,
                &p,
                Duration::ZERO,
            );
            assert!((200..700).contains(&p0.sleep.as_millis()), "{p0:?}");
        }
    }
}
