//! A GitHub-like rate-limit emulator, for testing agents that share one API quota.
//!
//! - [`Emulator`]: a pure model on injected time ([`resilience_core::clock::Clock`]): the
//!   primary hourly budget anchored at the first request, with the `x-ratelimit-*` headers;
//!   the secondary limits (concurrency, points per minute per endpoint, content creation per
//!   minute and per hour) with a penalty box that answers 403/429 with GitHub's message and
//!   only sometimes a `retry-after`; free `304`s; scripted blocks; a request log.
//!   Every limit is a field of [`Limits`], whose default is GitHub's documented values.
//! - [`server`]: the same model behind HTTP/1.1 on `127.0.0.1` with an ephemeral port.
//! - [`time`]: clocks and sleepers for virtual, scaled and tokio-paused time.
//! - [`squad`]: the workload of the Squad incident (9 agents, 10 pull requests) with a driver,
//!   a naive-retry baseline and the metrics the `squad` example prints.
//!
//! ```
//! use resilience_core::clock::ManualClock;
//! use resilience_emulator::{Emulator, Limits, Priority, Request};
//! use std::{sync::Arc, time::Duration};
//!
//! let clock = ManualClock::new();
//! let limits = Limits { content_per_minute: 1, ..Limits::github() };
//! let emu = Emulator::new(limits, Arc::new(clock.clone()), 1).unwrap();
//! let pr = Request::new("t", "POST", "/repos/a/b/pulls", "data", Priority::P1);
//! assert_eq!(emu.handle(&pr).status, 201);
//! let second = emu.handle(&pr); // the second PR in the same minute trips the limit
//! assert_eq!(second.status, 403);
//! assert!(second.body.contains("secondary rate limit"));
//! assert_eq!(second.header("x-ratelimit-remaining"), Some("4998")); // quota still shows left
//! ```

mod limits;
mod model;
mod request;
pub mod server;
pub mod squad;
pub mod time;

pub use limits::{Limits, LimitsError, RejectStatus};
pub use model::{
    Emulator, Lockout, LockoutCause, LogEntry, Outcome, SecondaryCause, TokenSnapshot,
};
pub use request::{Kind, Priority, Request, Response};
