//! Where the retry loop reports a server's Retry-After, so it can be coordinated.

use super::nesting::{current_level, keep_reported, take_reported, AttemptName, Reported};
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
/// (when they can tell it is the same failure: on the same thread, with the same error
/// text, service, hint and sink), so a governor books one release slot per 429, not one
/// per level of nesting.
pub trait RetryAfterSink: Send + Sync + fmt::Debug + 'static {
    /// `service` was told to come back after `hint`; returns the wait before the next attempt.
    fn retry_after(&self, service: &str, hint: Duration) -> Duration;
}

/// How far apart the hints of one failure may be, seen by the nested loop and by one around
/// it: a hint computed from the clock ("until the reset") shrinks between the two looks.
const SAME_HINT: Duration = Duration::from_secs(1);

/// Tells `sink` that `service` was told to come back after `hint` because of `error`, once
/// per 429: `own` names the reporting loop's attempt that failed (see [`Level::attempt`]).
///
/// A nested guarded call that failed with a Retry-After has reported it already when the
/// enclosing loop sees the same failure come out of the attempt that made that call. Then
/// the enclosing loop takes the sink's answer from that report instead of asking again: a
/// sink counting rate limits counts it once, and the governor books one release slot, not
/// one per level of nesting. The same failure means: reported inside this loop's current
/// attempt, on this thread, to the same sink, for the same service, with an error that
/// reads the same and a hint within [`SAME_HINT`]. Anything else asks the sink again
/// (counting a 429 twice is the safer mistake): a nested call on another thread, an
/// error wrapped into another text, or a later report on the same thread in between.
/// No two attempts in the process share a name (sync ones by a number no other thread hands
/// out, async ones by their state's address and a number given when the attempt starts), so
/// a report is never taken by another attempt: not one on a thread a `propagate`d task
/// carried the report to, nor the next attempt after a cancelled one at the same address,
/// nor a new loop in a dropped loop's place. The case counted once that was two: an attempt
/// that swallowed a nested call's 429 and then got a second 429 that reads exactly the same.
///
/// [`Level::attempt`]: super::nesting::Level
#[cold]
pub(crate) fn report_retry_after<E: fmt::Display>(
    sink: &Arc<dyn RetryAfterSink>,
    service: &str,
    error: &E,
    hint: Duration,
    own: AttemptName,
) -> Duration {
    let sink_addr = Arc::as_ptr(sink).cast::<()>().addr();
    let failure = failure_hash(service, error);
    let within = current_level().attempt_name();
    let reused = take_reported().filter(|r| {
        r.within == own
            && r.sink == sink_addr
            && r.failure == failure
            && r.hint.abs_diff(hint) <= SAME_HINT
    });
    let answer = match reused {
        Some(r) => r.answer,
        None => sink.retry_after(service, hint),
    };
    // Kept for the loop around this one, which will see the same failure next.
    keep_reported(Reported {
        sink: sink_addr,
        within,
        failure,
        hint,
        answer,
    });
    answer
}

/// The service and the error's text, hashed without keeping the text (it may hold secrets).
fn failure_hash<E: fmt::Display>(service: &str, error: &E) -> u64 {
    use std::fmt::Write as _;
    use std::hash::{DefaultHasher, Hash, Hasher};

    struct HashWriter(DefaultHasher);
    impl fmt::Write for HashWriter {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            self.0.write(s.as_bytes());
            Ok(())
        }
    }
    let mut w = HashWriter(DefaultHasher::new());
    service.hash(&mut w.0);
    // A Display that fails leaves a partial hash: the reuse may then miss, never mislead
    // more than the text it wrote.
    let _ = write!(w, "{error}");
    w.0.finish()
}
