//! Leaving every shared resource at once, before the process exits.

use crate::error::RedisQuotaError;
use crate::grant::Settled;
use crate::quota::RedisQuota;
use crate::resource::SharedQuota;

impl RedisQuota {
    /// Leaves every resource this connection joined ([`SharedQuota::leave`] for each), so
    /// their reservations return to the pool now. Call it before the process exits.
    ///
    /// A process that exits without it gives its reservations back only after its lease
    /// TTL, and, in [`OnLoss::Degraded`](crate::OnLoss::Degraded) mode, not before its
    /// quota window ends: its holder may have been cut off from Redis and spending it, so
    /// the reservation is held until the holder reports. Every crash or kill costs that; a
    /// clean exit need not.
    ///
    /// Returns [`Settled::Applied`] once every lease is given up (or had already ended), and
    /// [`Settled::Local`] if Redis could not be reached for some of them: those gave nothing
    /// up (as if the process had been killed). A server error is returned after every
    /// resource has been tried. An acquire after it starts a new lease.
    ///
    /// ```no_run
    /// # use resilience_redis::{QuotaSpec, RedisQuota, RedisQuotaConfig, Settled};
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let redis = RedisQuota::connect(RedisQuotaConfig::new("redis://127.0.0.1:6379")).await?;
    /// let _core = redis.resource("core", QuotaSpec::github()).await?;
    /// // ... the process's work ...
    /// if redis.shutdown().await? == Settled::Local {
    ///     eprintln!("Redis unreachable: the reservations stay held until the window ends");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn shutdown(&self) -> Result<Settled, RedisQuotaError> {
        let mut outcome = Settled::Applied;
        let mut first_error = None;
        for state in self.inner.resources() {
            let quota = SharedQuota {
                inner: self.inner.clone(),
                state,
            };
            match quota.leave().await {
                Ok(Settled::Local) => outcome = Settled::Local,
                Ok(_) => {}
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        first_error.map_or(Ok(outcome), Err)
    }
}
