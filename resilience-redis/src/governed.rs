//! The adapter between a process's [`Governor`] and the shared quota: acquire from the
//! governor (priority order, pacing, every local pattern), then from Redis (the quota and
//! block every process shares); observe both.

use crate::grant::QuotaGrant;
use crate::resource::SharedQuota;
use resilience_core::governor::{
    AgentId, Governor, Observation, ObserveOutcome, Permit, Priority, Request, ResourceId,
};
use resilience_core::ResilienceError;

/// A call allowed by the local governor and by the shared quota. Observe the response with
/// [`observe`](Self::observe), or [`release`](Self::release) it if the call was not made;
/// dropping it releases both (the shared grant from a spawned task), which gives the quota
/// back as if the call was never sent: once the request may have gone out, observe what
/// you have instead. A response without rate-limit headers counts the call as spent; no
/// response at all (a timeout, a connection reset after sending) is
/// [`Observation::no_response`](resilience_core::governor::Observation::no_response): spent,
/// and on its way until its call bound.
#[derive(Debug)]
#[must_use = "make the call, then observe the response"]
pub struct SharedPermit<'g> {
    permit: Option<Permit<'g>>,
    grant: Option<QuotaGrant>,
    quota: SharedQuota,
}

impl<'g> SharedPermit<'g> {
    /// The shared grant (its epoch, window, ...).
    pub fn shared(&self) -> Option<&QuotaGrant> {
        self.grant.as_ref()
    }

    /// The local permit.
    pub fn local(&self) -> Option<&Permit<'_>> {
        self.permit.as_ref()
    }

    /// Reports the response to both: the local governor's patterns learn from it, and its
    /// quota reading or rate limit reaches every process. A failure to reach Redis is
    /// not an error here (the block is kept locally).
    pub async fn observe(mut self, observation: &Observation) -> ObserveOutcome {
        let outcome = match self.permit.take() {
            Some(p) => p.observe(observation),
            None => ObserveOutcome::default(),
        };
        let grant = self.grant.take();
        if let Err(e) = self.quota.observe(grant, observation).await {
            tracing::warn!(resource = %self.quota.name(), error = %e, "shared quota: observation not recorded");
        }
        outcome
    }

    /// The local permit, the shared grant and the quota it came from, to be observed
    /// separately: e.g. when the local governor runs on a scaled clock and the shared quota
    /// on the Redis server's, so each needs the response's times in its own units.
    pub fn into_parts(mut self) -> (Option<Permit<'g>>, Option<QuotaGrant>, SharedQuota) {
        (self.permit.take(), self.grant.take(), self.quota.clone())
    }

    /// Returns both grants (the call was not made).
    pub async fn release(mut self) {
        drop(self.permit.take());
        if let Some(g) = self.grant.take() {
            let _ = self.quota.release(g).await;
        }
    }
}

impl Drop for SharedPermit<'_> {
    fn drop(&mut self) {
        if let Some(g) = self.grant.take() {
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                let quota = self.quota.clone();
                rt.spawn(async move {
                    let _ = quota.release(g).await;
                });
            }
        }
    }
}

/// Acquires one call from `governor` (waiting as [`Governor::acquire`] does), then from the
/// shared quota at the priority the governor granted (after any G2 promotion), within what
/// is left of the request's `max_wait`. While it waits on the shared quota it holds the
/// local permit: the local governor counts the call as in flight (its cost out of the
/// local estimate, a slot of the concurrency cap) until the shared grant comes or the
/// wait ends, so bound long shared waits with `max_wait`. A shared refusal releases the local permit and is
/// returned as [`RedisQuotaError::into_refusal`] says: shed (with when to come back) if
/// asking again can succeed, else [`ResilienceError::GovernorRejected`].
///
/// [`RedisQuotaError::into_refusal`]: crate::RedisQuotaError::into_refusal
pub async fn acquire_shared<'g>(
    governor: &'g Governor,
    quota: &SharedQuota,
    agent: AgentId,
    resource: ResourceId,
    request: Request<'_>,
) -> Result<SharedPermit<'g>, ResilienceError> {
    let permit = governor.acquire(agent, resource, request).await?;
    let priority = permit.grant().map_or(Priority::P1, |g| g.priority());
    let max_wait = request
        .max_wait()
        .map(|m| m.saturating_sub(permit.waited()));
    let mut grant = quota
        .acquire_request(&request, priority, max_wait)
        .await
        .map_err(|e| e.into_refusal(quota.name()))?;
    // The shared G4 detector counts the governor's agents, not just this process.
    if let Some((name, _)) = governor.agent(agent) {
        grant = grant.for_agent(name);
    }
    Ok(SharedPermit {
        permit: Some(permit),
        grant: Some(grant),
        quota: quota.clone(),
    })
}
