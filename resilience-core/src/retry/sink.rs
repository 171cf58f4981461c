//! Where the retry loop reports a server's Retry-After, so it can be coordinated.

use super::nesting::{current_level, keep_reported, take_reported, Reported};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Receives every Retry-After hint a service's retry loop sees, and says how long this caller
/// should actually wait.
///
/// Attached with [`ServiceGuardBuilder::retry_after_sink`](super::ServiceGuardBuilder::retry_after_sink).
/// The rate governor's [`RetryAfterLink`](crate::governor::RetryAfterLink) implements it: the
/// hint becomes the governor's one shared block (G6), and the caller waits as long as the
/// governor tells its agent to (the block plus its priority's jitter window) rather than
/// sleeping out the raw hint in step with every other caller.
///
/// It hears each 429 once: when the failure of a nested guarded call fails the attempts
/// around it too, those loops reuse the answer the nested call got instead of asking again
/// (as long as the enclosing attempt fails in the same poll, on the same thread, with the
/// same hint and sink), so a governor books one release slot per 429, not one per level.
pub trait RetryAfterSink: Send + Sync + fmt::Debug + 'static {
    /// `service` was told to come back after `hint`; returns the wait before the next attempt.
    fn retry_after(&self, service: &str, hint: Duration) -> Duration;
}

/// Tells `sink` that `service` was told to come back after `hint`, once per 429: `own` is the
/// address of the reporting loop's state (what its attempts ran under, see
/// [`DepthGuard::attempt`]).
///
/// A nested guarded call that failed with a Retry-After has reported it already when the
/// enclosing loop sees the same hint come out of the attempt that made that call. Then the
/// enclosing loop takes the sink's answer from that report instead of asking again: a sink
/// counting rate limits counts it once, and the governor books one release slot, not one per
/// level of nesting. The report is found only if it was made in this attempt on this thread
/// with the same sink and hint; otherwise (a spawned task, an attempt that awaited elsewhere
/// before failing) the sink is asked again. An attempt that swallowed a nested call's 429 and
/// then failed with another of the same hint counts as one 429.
///
/// [`DepthGuard::attempt`]: super::nesting::DepthGuard
#[cold]
pub(crate) fn report_retry_after(
    sink: &Arc<dyn RetryAfterSink>,
    service: &str,
    hint: Duration,
    own: usize,
) -> Duration {
    let sink_addr = Arc::as_ptr(sink).cast::<()>().addr();
    let within = current_level().attempt;
    let reused =
        take_reported().filter(|r| r.within == own && r.sink == sink_addr && r.hint == hint);
    let answer = match reused {
        Some(r) => r.answer,
        None => sink.retry_after(service, hint),
    };
    // Kept for the loop around this one, which will see the same failure next.
    keep_reported(Reported {
        sink: sink_addr,
        within,
        hint,
        answer,
    });
    answer
}
