//! Waiting APIs over [`Governor::decide`]: async [`Governor::acquire`] and
//! [`Governor::acquire_blocking`], both returning an RAII [`Permit`].

use super::decision::{AgentId, Decision, Grant, ResourceId, Ticket};
use super::facade::Governor;
use super::observation::Observation;
use super::request::Request;
use super::store::ObserveOutcome;
use crate::error::ResilienceError;
use crate::sleep::Sleeper;
use std::time::Duration;

/// A granted call. Report the response with [`observe`](Self::observe); dropping the permit
/// unobserved releases it: the call is presumed not made, and its cost, its reservation and
/// its slot in the pacing windows come back. If the call may have reached the server,
/// observe what you have instead: a response without rate-limit headers counts the call as
/// spent; with no response at all (a timeout, a reset connection), observe
/// [`Observation::no_response`](super::Observation::no_response): spent, and maybe still
/// on its way (a later grant's reading may not count it).
#[derive(Debug)]
#[must_use = "make the call, then observe the response"]
pub struct Permit<'g> {
    governor: &'g Governor,
    grant: Option<Grant>,
    waited: Duration,
}

impl<'g> Permit<'g> {
    /// Wraps a grant from [`Governor::decide`].
    pub fn new(governor: &'g Governor, grant: Grant, waited: Duration) -> Self {
        Self {
            governor,
            grant: Some(grant),
            waited,
        }
    }

    /// The grant.
    pub fn grant(&self) -> Option<&Grant> {
        self.grant.as_ref()
    }

    /// How long acquiring took.
    pub fn waited(&self) -> Duration {
        self.waited
    }

    /// G4: an upstream agent was recently limited.
    pub fn upstream_limited(&self) -> Option<AgentId> {
        self.grant.as_ref().and_then(Grant::upstream_limited)
    }

    /// Reports the response.
    pub fn observe(mut self, observation: &Observation) -> ObserveOutcome {
        match self.grant.take() {
            Some(g) => self.governor.observe(g, observation),
            None => ObserveOutcome::default(),
        }
    }

    /// Takes the grant out; the caller must observe or release it.
    pub fn into_grant(mut self) -> Option<Grant> {
        self.grant.take()
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        if let Some(g) = self.grant.take() {
            self.governor.release(g);
        }
    }
}

/// Holds a ticket while waiting; leaves the line if the wait is abandoned (future dropped).
struct InLine<'g> {
    governor: &'g Governor,
    ticket: Option<Ticket>,
}

impl Drop for InLine<'_> {
    fn drop(&mut self) {
        if let Some(t) = self.ticket.take() {
            self.governor.cancel(&t);
        }
    }
}

impl Governor {
    /// Waits (through the injected [`AsyncSleeper`](crate::sleep::AsyncSleeper)) until the
    /// governor lets the call go, or returns its refusal as
    /// [`ResilienceError::GovernorShed`] / [`ResilienceError::GovernorPaused`]. Dropping the
    /// future gives up its place in line.
    pub async fn acquire(
        &self,
        agent: AgentId,
        resource: ResourceId,
        request: Request<'_>,
    ) -> Result<Permit<'_>, ResilienceError> {
        // The first decision's time, read only if it says wait (`until - delay`): a call
        // granted at once reads no clock beyond the decision's own.
        let mut start = None;
        let mut line = InLine {
            governor: self,
            ticket: None,
        };
        loop {
            let decision = match &line.ticket {
                None => self.decide(agent, resource, &request),
                Some(t) => self.resume(t, &request),
            };
            // The store has settled the old ticket; only a new wait puts us back in line.
            line.ticket = None;
            match decision {
                Decision::Go(g) => return Ok(Permit::new(self, g, self.waited(start))),
                Decision::Refuse(r) => return Err(r.into()),
                Decision::Wait(w) => {
                    start.get_or_insert(w.until.saturating_sub(w.delay));
                    line.ticket = Some(w.ticket);
                    self.sleeper.sleep(w.delay).await;
                }
            }
        }
    }

    /// As [`acquire`](Self::acquire), blocking the thread through `sleeper`.
    pub fn acquire_blocking(
        &self,
        agent: AgentId,
        resource: ResourceId,
        request: Request<'_>,
        sleeper: &dyn Sleeper,
    ) -> Result<Permit<'_>, ResilienceError> {
        let mut start = None;
        let mut decision = self.decide(agent, resource, &request);
        loop {
            match decision {
                Decision::Go(g) => return Ok(Permit::new(self, g, self.waited(start))),
                Decision::Refuse(r) => return Err(r.into()),
                Decision::Wait(w) => {
                    start.get_or_insert(w.until.saturating_sub(w.delay));
                    sleeper.sleep(w.delay);
                    decision = self.resume(&w.ticket, &request);
                }
            }
        }
    }

    /// Time since the first decision of an acquire (`None`: it was granted at once).
    fn waited(&self, start: Option<Duration>) -> Duration {
        start.map_or(Duration::ZERO, |s| self.clock.now().saturating_sub(s))
    }
}
