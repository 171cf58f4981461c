//! A response, as the script reads it: quota headers and the G6 block it calls for.

use crate::config::RedisQuotaConfig;
use crate::grant::QuotaGrant;
use crate::grant::Settled;
use crate::local::HeardEnd;
use crate::quota::ms;
use crate::resource::SharedQuota;
use crate::script::{Backoff, ObserveArgs};
use resilience_core::governor::{LimitKind, Observation, ResetAt, RetryAfter};
use std::time::Duration;

/// Absolute times (`x-ratelimit-reset`, an HTTP-date `retry-after`) are passed as unix ms and
/// compared with the Redis server's clock, never this host's. A response naming another
/// upstream bucket than the resource's (`bucket`) settles its grant and says nothing else.
pub(crate) fn args(
    obs: &Observation,
    grant: Option<&QuotaGrant>,
    window: u64,
    bucket: Option<&str>,
    cfg: &RedisQuotaConfig,
) -> ObserveArgs {
    let mut a = ObserveArgs {
        agent: grant.and_then(|g| g.agent.clone()),
        ledger: grant.map_or(0, |g| g.ledger),
        cost: grant.map_or(0, |g| g.cost),
        granted_ms: grant.map_or(0, |g| g.granted_ms),
        in_flight: grant.map_or(0, |g| g.in_flight),
        slot: grant.map_or(0, |g| g.slot),
        window,
        ..ObserveArgs::default()
    };
    if obs.names_another_bucket(bucket) {
        return a;
    }
    a.limited = obs.limit_kind().is_some();
    a.limit = obs.limit().unwrap_or(0);
    a.remaining = obs.remaining();
    match obs.reset() {
        Some(ResetAt::Epoch(s)) => a.reset_ms = s.saturating_mul(1000),
        Some(ResetAt::After(s)) => a.reset_after_ms = s.saturating_mul(1000).max(1),
        None => {}
    }
    let kind = obs.limit_kind();
    a.no_response = !obs.answered();
    if kind.is_none() && obs.answered() && obs.status() < 400 {
        a.backoff = Backoff::Good;
    }
    if let Some(kind) = kind {
        a.exhausted = kind == LimitKind::Primary;
        match obs.retry_after() {
            Some(RetryAfter::Delay(d)) => a.block_ms = ms(d).max(1),
            Some(RetryAfter::At(epoch)) => a.block_until_ms = epoch.saturating_mul(1000),
            // A spent quota waits for the reset through the empty pool; a secondary limit
            // without a hint waits GitHub's documented minute, doubled by the script for
            // each such limit in a row (offline: the minute).
            None if kind == LimitKind::Primary => {}
            None => {
                a.block_ms = ms(cfg.wait.secondary_block).max(1);
                a.backoff = Backoff::Limit;
                a.backoff_cap_ms = ms(cfg.wait.max_secondary_block).max(a.block_ms);
            }
        }
    }
    a
}

/// The block `a` calls for while Redis is unreachable, in ms: the script's G6 backoff on
/// this process's own count of hintless secondary limits in a row (`strikes`). Called for
/// every response, online too, so the count is current when Redis goes away. `blocked`:
/// a block was already on (limits answered inside it are the same limit, and good
/// responses inside it say nothing new).
pub(crate) fn offline_block_ms(a: &ObserveArgs, strikes: &mut u32, blocked: bool) -> u64 {
    match a.backoff {
        Backoff::Limit => {
            if !blocked {
                *strikes = strikes.saturating_add(1);
            }
            let doublings = strikes.saturating_sub(1).min(32);
            a.block_ms
                .saturating_mul(1 << doublings)
                .min(a.backoff_cap_ms)
        }
        Backoff::Good if !blocked => {
            *strikes = 0;
            a.block_ms
        }
        _ => a.block_ms,
    }
}

impl SharedQuota {
    /// A response observed while cut off from Redis: its block, and the window end it
    /// gives (`Local::hear_reset`), applied locally only. `block_ms`: [`offline_block_ms`] of `args`.
    pub(crate) fn observe_offline(&self, args: &ObserveArgs, block_ms: u64) -> Settled {
        let unix = ms(self.inner.clock.unix_time());
        // The window's end as the response gives it (a header in whole seconds may be up to
        // one late); one already past describes an ended window.
        let reset_in = if args.reset_ms > unix {
            Some(args.reset_ms - unix)
        } else {
            (args.reset_after_ms > 0).then_some(args.reset_after_ms)
        };
        if let Some(reset_in) = reset_in {
            let now = self.inner.clock.now();
            let end = if args.reset_ms > unix {
                HeardEnd::Epoch(args.reset_ms)
            } else {
                HeardEnd::At(now + Duration::from_millis(reset_in))
            };
            let until = now + Duration::from_millis(reset_in.saturating_sub(1000));
            self.state.local.lock().hear_reset(until, end);
        }
        let mut block = Duration::from_millis(block_ms);
        if args.block_until_ms > 0 {
            block = block.max(Duration::from_millis(
                args.block_until_ms.saturating_sub(unix),
            ));
        }
        if !block.is_zero() {
            let until = self.inner.clock.now() + block;
            self.state.local.lock().block_locally(until);
        }
        Settled::Local
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn cfg() -> RedisQuotaConfig {
        RedisQuotaConfig::new("redis://127.0.0.1:1")
    }

    #[test]
    fn g7_g6_secondary_limit_blocks_for_retry_after_or_a_minute() {
        let o =
            Observation::from_headers(429, [("retry-after", "7"), ("x-ratelimit-remaining", "12")]);
        let a = args(&o, None, 3, None, &cfg());
        assert_eq!(
            (a.block_ms, a.exhausted, a.remaining, a.window),
            (7_000, false, Some(12), 3)
        );
        let o = Observation::from_headers(403, [("retry-after", "5")]);
        assert_eq!(args(&o, None, 3, None, &cfg()).block_ms, 5_000);
        let o = Observation::new(429).with_body("You have exceeded a secondary rate limit");
        let a = args(&o, None, 3, None, &cfg());
        // The script doubles it for each such limit in a row, up to 16 min.
        assert_eq!(
            (a.block_ms, a.backoff, a.backoff_cap_ms),
            (60_000, Backoff::Limit, 960_000)
        );
        let hinted = Observation::from_headers(429, [("retry-after", "7")]);
        assert_eq!(args(&hinted, None, 3, None, &cfg()).backoff, Backoff::None);
        let good = Observation::new(200);
        assert_eq!(args(&good, None, 3, None, &cfg()).backoff, Backoff::Good);
        let failed = Observation::new(500);
        assert_eq!(args(&failed, None, 3, None, &cfg()).backoff, Backoff::None);
    }

    #[test]
    fn g7_g6_offline_secondary_limits_in_a_row_double_up_to_the_cap() {
        let limit = Observation::new(429).with_body("You have exceeded a secondary rate limit");
        let limit = args(&limit, None, 3, None, &cfg());
        let good = args(&Observation::new(200), None, 3, None, &cfg());
        let mut strikes = 0;
        let blocks: Vec<u64> = (0..6)
            .map(|_| offline_block_ms(&limit, &mut strikes, false))
            .collect();
        assert_eq!(
            blocks,
            [60_000, 120_000, 240_000, 480_000, 960_000, 960_000]
        );
        // A limit answered inside the block is the same limit; a good response inside it
        // says nothing new.
        assert_eq!(offline_block_ms(&limit, &mut strikes, true), 960_000);
        offline_block_ms(&good, &mut strikes, true);
        assert_eq!(strikes, 6);
        // One outside a block starts the run over.
        offline_block_ms(&good, &mut strikes, false);
        assert_eq!(offline_block_ms(&limit, &mut strikes, false), 60_000);
        // A hinted limit neither counts nor doubles.
        let hinted = args(
            &Observation::from_headers(429, [("retry-after", "7")]),
            None,
            3,
            None,
            &cfg(),
        );
        assert_eq!(offline_block_ms(&hinted, &mut strikes, false), 7_000);
        assert_eq!(strikes, 1);
    }

    #[test]
    fn g7_primary_limit_empties_the_pool_and_passes_the_reset_as_server_epoch() {
        let o = Observation::from_headers(
            403,
            [
                ("x-ratelimit-remaining", "0"),
                ("x-ratelimit-reset", "1700000000"),
                ("x-ratelimit-limit", "5000"),
            ],
        );
        let a = args(&o, None, 1, None, &cfg());
        assert!(a.exhausted);
        assert_eq!(
            (a.reset_ms, a.limit, a.block_ms),
            (1_700_000_000_000, 5000, 0)
        );
        let ok = Observation::from_headers(200, [("x-ratelimit-remaining", "10")]);
        let a = args(&ok, None, 1, None, &cfg());
        assert_eq!((a.exhausted, a.block_ms, a.remaining), (false, 0, Some(10)));
        let _ = Duration::ZERO;
    }
}
