//! The request log and the lockout record, for measuring clients.

use crate::request::{Kind, Priority};
use std::time::Duration;

/// Why a request was answered as it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Outcome {
    /// Served (2xx).
    Served,
    /// `304 Not Modified` to a conditional request.
    NotModified,
    /// Rejected: the primary (hourly) budget is exhausted.
    PrimaryExhausted,
    /// Rejected: this request breached a secondary limit and started a penalty.
    SecondaryBreach(SecondaryCause),
    /// Rejected: the token is in the penalty box of an earlier breach.
    PenaltyBox,
    /// Rejected: a scripted block (see [`Emulator::script_block`](crate::Emulator::script_block)).
    Scripted,
}

impl Outcome {
    /// Whether this is a rate-limit rejection of any kind.
    pub fn is_rate_limited(self) -> bool {
        !matches!(self, Self::Served | Self::NotModified)
    }
}

/// Which secondary limit a request breached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum SecondaryCause {
    /// More than `max_concurrency` requests in flight.
    Concurrency,
    /// More than `points_per_window` points on one endpoint.
    Points,
    /// More than `content_per_minute` content-creating requests in a minute.
    ContentPerMinute,
    /// More than `content_per_hour` content-creating requests in an hour.
    ContentPerHour,
}

/// One logged request.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LogEntry {
    /// Emulator time at which the request was handled.
    pub at: Duration,
    /// When the client's scheduler admitted it, if the client said (see
    /// [`Request::admitted`](crate::Request::admitted)).
    pub admitted: Option<Duration>,
    /// Calling agent.
    pub agent: String,
    /// Calling agent's priority.
    pub priority: Priority,
    /// Method.
    pub method: String,
    /// Path.
    pub path: String,
    /// Kind.
    pub kind: Kind,
    /// Status sent.
    pub status: u16,
    /// Why.
    pub outcome: Outcome,
    /// `x-ratelimit-remaining` sent.
    pub remaining: u32,
    /// `retry-after` sent, in seconds, if any.
    pub retry_after: Option<u64>,
}

/// Why a token was locked out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum LockoutCause {
    /// Primary budget exhausted until the window resets.
    Primary,
    /// A secondary-limit penalty.
    Secondary(SecondaryCause),
    /// A scripted block.
    Scripted,
}

/// An interval during which every request of a token was (or would have been) rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Lockout {
    /// When it began.
    pub start: Duration,
    /// When it ended (extended while requests kept arriving, if so configured).
    pub end: Duration,
    /// Why.
    pub cause: LockoutCause,
}

impl Lockout {
    /// `end - start`.
    pub fn length(&self) -> Duration {
        self.end.saturating_sub(self.start)
    }
}
