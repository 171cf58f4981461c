//! The Rate Governor: one coordination layer that many agents consult before calling a
//! shared, rate-limited API (GitHub's, say), so that one quota is spent in priority order,
//! with no thundering herd and no cascade.
//!
//! Source: Tamir Dresher, "9 AI Agents, One API Quota" (2026); the numbers below are the
//! article's, every one of them a public field of [`ResourceConfig`] or [`GovernorConfig`].
//!
//! # Using it
//!
//! Register each agent once with a [`Priority`] — P0 critical, P1 standard, P2 background —
//! and each quota bucket once as a resource. Then, around every call:
//!
//! 1. **acquire**: ask before the call, with a [`Request`] saying what it costs. Either wait
//!    for the permit ([`Governor::acquire`], async, sleeping through the injected
//!    [`AsyncSleeper`](crate::sleep::AsyncSleeper); or [`Governor::acquire_blocking`]), or ask
//!    for a [`Decision`] without sleeping ([`Governor::decide`], then [`Governor::resume`] with
//!    the ticket at the time it names) — the form a discrete-event simulator drives.
//!    Refusals are typed: [`ResilienceError::GovernorPaused`](crate::ResilienceError) or
//!    [`GovernorShed`](crate::ResilienceError), each with when to come back.
//! 2. **observe**: report the response ([`Permit::observe`] or [`Governor::observe`]) as an
//!    [`Observation`] built from the status, the headers (`x-ratelimit-*`, `retry-after`,
//!    IETF `RateLimit`/`RateLimit-Policy`) and, for a 403, the body.
//!
//! ```
//! use resilience_core::clock::{Clock, ManualClock};
//! use resilience_core::governor::{Decision, Governor, Observation, Priority, Request, ResourceConfig};
//! use resilience_core::sleep::ManualSleeper;
//! use std::time::Duration;
//!
//! let clock = ManualClock::new(); // virtual time; MonotonicClock in production
//! let gov = Governor::builder().clock(clock.clone()).seed(1).build()?;
//! let core = gov.add_resource("core", ResourceConfig::github())?;
//! let picard = gov.register("picard", Priority::P0)?;
//! let data = gov.register("data", Priority::P1)?;
//!
//! // A call: acquire (here blocking on a virtual sleeper), call, observe.
//! let sleeper = ManualSleeper::new(clock.clone());
//! let permit = gov.acquire_blocking(picard, core, Request::create(), &sleeper)?;
//! let response = Observation::from_headers(429, [("retry-after", "30")]);
//! permit.observe(&response); // a secondary limit: the whole resource is blocked (G6)
//!
//! // Everyone now waits for the same block, released by priority after it.
//! let Decision::Wait(w) = gov.decide(data, core, &Request::read()) else { unreachable!() };
//! assert!(w.until >= Duration::from_secs(30) + Duration::from_millis(500)); // P1's window
//! clock.advance_to(w.until);
//! assert!(gov.resume(&w.ticket, &Request::read()).is_go());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A retry executor that sees a `Retry-After` can feed the shared block directly with
//! [`Governor::note_retry_after`].
//!
//! # The patterns
//!
//! - **G1 traffic light** ([`TrafficLight`]). `ratio = remaining / limit`. Green (≥ 40%): no
//!   delay. Amber (15–40%): a delay that grows linearly as the ratio falls, 0 at the onset
//!   and 2 s at 15%; background work is slowed first (P2 from 40%, P1 from 27.5%, P0
//!   never). Red (< 15%): P2 is paused until reset, P1 is paced (1 s apart), P0 passes.
//! - **G2 shared token pool** ([`TokenPool`]). Each live agent reserves a share of the
//!   window by priority (10% / 5% / 2%); the rest is a shared pool. P0 is served while
//!   anything remains; P1 spends its reservation, then the pool; P2 may draw on the pool only
//!   while at least 30% of it is free. An agent idle for 60 s donates its unused
//!   reservation; a P2 agent kept waiting or refused for 5 min is served as P1 until its next
//!   grant.
//! - **G3 predictive breaker** ([`Predictive`]). From the `remaining` readings of the last
//!   10 s, when the consumption rate would exhaust the quota within 30 s and before reset,
//!   the breaker opens before any 429: P2 is shed, P1 is paced to spend what is left evenly
//!   until reset, P0 passes. It closes after 3 consecutive good observations (and, as in the
//!   article, also opens on a rate-limited response).
//! - **G4 cascade detector** ([`Cascade`]). 3 distinct agents limited within 30 s switch on
//!   sequential mode: one call in flight at a time, in priority order, until the block has
//!   lifted and 3 good responses came back. With [`Governor::add_dependency`], a limit on an
//!   agent warns every agent downstream of it on its next grant
//!   ([`Grant::upstream_limited`]).
//! - **G5 leases** ([`Leases`]). Registration starts a lease that every request, observation
//!   and [`Governor::heartbeat`] renews. An agent silent for 2 min is presumed dead: its
//!   unused reservation returns to the pool, its calls in flight stop counting, its place in
//!   line is dropped. A waiter that does not come back within 5 s of its time loses its place.
//! - **G6 priority retry windows** ([`RetryWindows`]). After a 429 or secondary limit, one
//!   shared block-until time for the resource: `retry-after` (seconds or HTTP-date), else
//!   the reset if the quota is spent, else 60 s. Every waiter draws a release time in its
//!   priority's window after the block — P0 `[0, 0.5 s)`, P1 `[0.5, 3.5 s)`,
//!   P2 `[3.5, 9.5 s)` — and for 60 s after the block grants stay at least 50 ms apart, so
//!   the released wave never goes all at once.
//! - **G8 pacing by the physics of the quota** ([`Pacing`]). Exact sliding windows per rule
//!   (GitHub: 80 content-creating requests/min and 500/h, 900 points/min per endpoint with
//!   GET 1 and writes 5), optionally smoothed at the window's rate with a burst and with
//!   headroom only P0 may use; a concurrency cap (fewer than 100); opt-in spacing rules
//!   (GitHub's ≥ 1 s between mutations); and, below green, spending the remaining quota
//!   evenly until reset.
//!
//! Underneath all of them, the line is **strictly prioritised**: nothing is granted while a
//! higher-priority request waits for something it competes for (the quota as a whole, or the
//! same pacing rule), nor ahead of an earlier same-priority request that is due. A request
//! that does not compete (a read, while a create waits on a creation window) is held back
//! too while that wait ends within [`Pacing::unrelated_hold`] (10 s by default), and goes
//! ahead of a longer one: one agent waiting an hour on a rule is not head-of-line blocking
//! for every other. So a background call is never served while a critical one waits for
//! the same thing, or for less than the hold.
//!
//! # State and time
//!
//! All state sits behind [`GovernorStore`]; the default [`InProcessStore`] keeps each
//! resource behind one short lock, and its fast path (green, no block, nobody in line) is
//! one pass over the pacing rules. Each store operation is one call, so a shared backend
//! (Redis, one script per operation) fits the same trait. Time is read from the injected
//! [`Clock`](crate::clock::Clock) only; `unix_time` is used solely to read epoch headers, so
//! the whole governor runs on a [`ManualClock`](crate::clock::ManualClock).
//!
//! The in-process fast path reads the cheap coarse clock
//! ([`Clock::now_coarse`](crate::clock::Clock::now_coarse): `CLOCK_MONOTONIC_COARSE` on
//! Linux, one kernel tick of resolution, 4 ms at `HZ=250`) instead of the precise one, and
//! only where a reading that lags the true time is safe: it only finds a gate (a G6 block,
//! its recovery pacing, a window reset) still closed, never open early, and then the call is
//! decided on the precise clock, so no wait is lengthened by the lag. Renewals of G5 leases
//! and G2 activity are stamped with an upper bound on the true time, so they never lapse
//! early. Resources with pacing rules (G8), and the grant that anchors an assumed quota
//! window, read the precise clock, because their stamps are what later gates compare with.
//! On a `ManualClock` coarse and precise are the same reading.

mod config;
mod decision;
mod facade;
mod memory;
mod observation;
mod permit;
mod priority;
mod request;
mod retry_link;
mod store;

pub use config::{
    AssumedQuota, Cascade, GovernorConfig, Leases, Measure, Pacing, Predictive, ResourceConfig,
    RetryWindows, Selector, SpacingRule, TokenPool, TrafficLight, WindowRule,
};
pub use decision::{
    AgentId, Decision, Grant, Refusal, RefusalKind, RefusalReason, ResourceId, Ticket, Wait,
    WaitReason,
};
pub use facade::{Governor, GovernorBuilder};
pub use memory::InProcessStore;
pub use observation::{LimitKind, Observation, ResetAt, RetryAfter, LONGEST_BLOCK};
pub use permit::Permit;
pub use priority::Priority;
pub use request::{Request, RequestKind};
pub use retry_link::RetryAfterLink;
pub use store::{GovernorError, GovernorStore, Now, ObserveOutcome, Snapshot, Zone};

/// The `tracing` target of the in-process store's events (zone changes, blocks, the
/// breaker, cascades, leases, refusals). They are emitted once the resource's lock is
/// released, so a subscriber may itself call the governor.
pub const EVENT_TARGET: &str = "resilience::governor";
