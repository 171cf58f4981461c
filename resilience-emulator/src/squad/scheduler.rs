//! How an agent decides when to call and when to retry: the part a rate governor replaces.

use crate::request::{Kind, Priority, Response};
use resilience_core::clock::Clock;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// What a scheduler knows about a call.
#[derive(Debug, Clone, Copy)]
pub struct CallInfo<'a> {
    /// Calling agent.
    pub agent: &'a str,
    /// Its priority.
    pub priority: Priority,
    /// Method.
    pub method: &'a str,
    /// Path.
    pub path: &'a str,
    /// How the call counts against secondary limits.
    pub kind: Kind,
}

/// A scheduler's refusal to let a call go now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Ask again after this long.
    Later(Duration),
    /// Abandon the call (and with it the task).
    GiveUp,
}

/// Decides, for every agent, when a call may be sent and whether a failed one is retried.
///
/// The driver calls [`acquire`](Self::acquire) before every attempt, then
/// [`complete`](Self::complete) with the response, then, if the response was not a success,
/// [`retry_delay`](Self::retry_delay).
pub trait Scheduler: Send + Sync + 'static {
    /// Proof of admission handed back in [`complete`](Self::complete).
    type Permit: Send + 'static;

    /// Resolves when `call` may be sent.
    fn acquire(
        &self,
        call: CallInfo<'_>,
    ) -> impl Future<Output = Result<Self::Permit, Refusal>> + Send;

    /// Reports the response to an admitted call.
    fn complete(&self, permit: Self::Permit, call: CallInfo<'_>, response: &Response);

    /// After the `attempt`-th attempt failed with `response`: how long to wait before the
    /// next attempt, or `None` to give up.
    fn retry_delay(
        &self,
        call: CallInfo<'_>,
        attempt: u32,
        response: &Response,
    ) -> Option<Duration>;
}

/// What common clients do on their own: send at once; on a rejection honour `retry-after`,
/// else wait for the reset if the quota is gone, else back off exponentially (no jitter,
/// like many retry helpers), up to a number of attempts.
#[derive(Debug, Clone)]
pub struct Naive {
    clock: Arc<dyn Clock>,
    /// First backoff delay.
    pub base: Duration,
    /// Largest backoff delay.
    pub cap: Duration,
    /// Attempts per call before giving up.
    pub max_attempts: u32,
}

impl Naive {
    /// Backoff 1 s doubling to 60 s, 10 attempts; `clock` reads "now" against
    /// `x-ratelimit-reset`.
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Self {
            clock,
            base: Duration::from_secs(1),
            cap: Duration::from_secs(60),
            max_attempts: 10,
        }
    }
}

impl Scheduler for Naive {
    type Permit = ();

    async fn acquire(&self, _call: CallInfo<'_>) -> Result<(), Refusal> {
        Ok(())
    }

    fn complete(&self, _permit: (), _call: CallInfo<'_>, _response: &Response) {}

    fn retry_delay(
        &self,
        _call: CallInfo<'_>,
        attempt: u32,
        response: &Response,
    ) -> Option<Duration> {
        if attempt >= self.max_attempts {
            return None;
        }
        if let Some(secs) = response.header_u64("retry-after") {
            return Some(Duration::from_secs(secs));
        }
        if response.header_u64("x-ratelimit-remaining") == Some(0) {
            if let Some(reset) = response.header_u64("x-ratelimit-reset") {
                let wait = Duration::from_secs(reset).saturating_sub(self.clock.unix_time());
                return Some(wait + Duration::from_secs(1));
            }
        }
        let exp = self
            .base
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(20));
        Some(exp.min(self.cap))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use resilience_core::clock::ManualClock;

    fn resp(headers: &[(&str, &str)]) -> Response {
        Response {
            status: 403,
            headers: headers
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            body: "secondary rate limit".into(),
        }
    }

    fn info() -> CallInfo<'static> {
        CallInfo {
            agent: "data",
            priority: Priority::P1,
            method: "GET",
            path: "/a",
            kind: Kind::Read,
        }
    }

    #[test]
    fn naive_honours_retry_after_then_reset_then_backs_off_exponentially() {
        let clock = ManualClock::with_unix_origin(Duration::from_secs(1_000));
        let naive = Naive::new(Arc::new(clock));
        let secs = Duration::from_secs;
        let with_retry = resp(&[("retry-after", "42"), ("x-ratelimit-remaining", "0")]);
        assert_eq!(naive.retry_delay(info(), 1, &with_retry), Some(secs(42)));
        let spent = resp(&[
            ("x-ratelimit-remaining", "0"),
            ("x-ratelimit-reset", "1100"),
        ]);
        assert_eq!(naive.retry_delay(info(), 1, &spent), Some(secs(101)));
        let plain = resp(&[("x-ratelimit-remaining", "4000")]);
        let delays: Vec<_> = (1..=8)
            .map(|a| naive.retry_delay(info(), a, &plain))
            .collect();
        let expected = [1, 2, 4, 8, 16, 32, 60, 60].map(|s| Some(secs(s)));
        assert_eq!(delays, expected);
        assert_eq!(
            naive.retry_delay(info(), 10, &plain),
            None,
            "gives up after 10"
        );
    }
}
