//! The rate governor's quota shared through Redis (G7): several processes, on one host or
//! many, spend one rate-limit quota (GitHub's 5 000 requests/hour for a token, say) without
//! overspending it, and a rate limit seen by one of them blocks all of them.
//!
//! # When to choose it
//!
//! - **One process** (however many tasks or agents): use the governor's in-process store,
//!   the default ([`resilience_core::governor::Governor`]). It needs nothing else, decides in
//!   nanoseconds, and runs every pattern (G1–G6, G8) on exact shared state.
//! - **Several processes or hosts share one quota** (several workers using one token, a
//!   service scaled to N replicas): add this crate. Each process keeps its own governor for
//!   ordering and pacing, and consults [`SharedQuota`] before each call, so the *quota* —
//!   what is left in the window, the G6 block after a 429, leases and reservations, and
//!   optionally the G8 rules ([`QuotaSpec::shared_pacing`]) — is one state for all of
//!   them. It costs one Redis round trip per acquire (shared rules included) and about 28 µs
//!   of Redis CPU per call on an idle machine; the crate's bench (`benches/redis_acquire.rs`)
//!   measures about 31-32k acquires/s from 2 processes on an idle 2-core loopback machine
//!   (2026-12-05; fewer when the machine is loaded: `BENCHMARKS.md` has every run). Shared
//!   G8 rules add about 10 µs of Redis CPU per acquire (one `HMGET` and one `HSET` of the
//!   rules that select it): 23.5k acquires/s in the same runs.
//!
//! It is a separate crate so nothing pulls Redis in by default.
//!
//! # What lives in Redis
//!
//! Per resource, under one hash tag (one cluster slot): the window (limit, pool left,
//! reset), the shared block-until time (G6), one lease per process with its fencing
//! epoch and its reservation, and, for a resource given shared G8 rules, their counters. Every operation — acquire, release, observe, lease renewal,
//! block — is one Lua script called by hash (`EVALSHA`, with `SCRIPT LOAD` on `NOSCRIPT`):
//! atomic on the server, one round trip, and timed by the server's clock (`TIME`), so clock
//! skew between hosts does not matter.
//!
//! The state carries the number of the script's protocol. A build that speaks another
//! (a release that changed what the state means) is refused on it with an error that names
//! both: during an upgrade, give the new build another
//! [`prefix`](RedisQuotaConfig::prefix), or stop the old one first.
//!
//! - **Leases and epochs.** A process joins a resource with a lease (default TTL 2 min, the
//!   G5 default) renewed by every call and by a background heartbeat. Each lease has a fresh
//!   epoch. A lease that expires is reaped by a later call of any process (at most 16
//!   expired leases per call, at most every 50 ms); once reaped, its epoch is fenced: a
//!   grant made under it can no longer be released (credited) or observed (its
//!   headers could describe quota that is no longer its holder's), and the paused process
//!   that comes back gets a new lease, with nothing of the old one.
//! - **Reservations.** Each process tops up a reservation — its share of the pool,
//!   `pool × share / processes` as the pool and the process count stand at its call
//!   ([`RedisQuotaConfig::reserve_share_permille`], 100 ‰ by default), topped up once it is
//!   below half of that — that is spent only when the pool runs dry, by the express lane, or
//!   while Redis is unreachable. Together they hold about `share` of the pool; more for a
//!   while as processes join (the first took its share of a pool it had to itself).
//! - **Readings.** An observed response's `x-ratelimit-remaining` sets the pool, less
//!   what the reading may not count yet: calls granted after it, calls granted before it
//!   that were still in flight when it was granted (it may have overtaken them), and the
//!   reservations. A reading taken for an older grant, or with no grant at all (it may
//!   have been read before calls already counted), may lower the pool but never raise
//!   it. The pool is also never below the window's lowest reading less the calls still in
//!   flight, those settled without a reading since that reading's grant, and the
//!   reservations: upstream's count only falls, so the lowest reading counts every call
//!   answered with one. So a pool that counted calls twice (in flight at a grant, they
//!   arrived before it) comes back as they are answered. A grant counts as in flight
//!   until it is observed or released, or for [`RedisQuotaConfig::call_bound`] (30 s by
//!   default) if nobody settles it; so does spending reported without a grant (the
//!   express lane's, offline).
//! - **Window ends.** A window ends at its reset: the first grant's time plus the window,
//!   or a reset header's, a later one whatever the difference (upstream's window began at
//!   its first call's arrival, and its header is rounded up to the second), an earlier one
//!   past 2 s. A new window starts less the calls still in flight: upstream counts a call
//!   by its arrival, so one granted a moment before the reset may count in the new window.
//!   It stays that much smaller until a reading of one of its own grants counts them; one
//!   left too small for an ask is anchored at that ask, to end a window after the last of
//!   them may have arrived (a call bound later). Observe (or release) every grant, so that only calls really on
//!   their way are counted.
//! - **The express lane.** A P0 acquire (the bound is [`RedisQuotaConfig::express`]) is
//!   paid from this process's reservation with no round trip, and reported with the next
//!   call of any kind. It opens once the window is under way (its first grant by any
//!   process: the lane's spending is accounted to a known reset) and this process has
//!   joined ([`RedisQuota::connect`] returns once the subscription it needs is up). Without it a critical call would wait one round trip while a
//!   background call granted a moment earlier in another process is served: a priority
//!   inversion across hosts. It is safe by construction: the reservation was set aside
//!   for this process alone; the server never pays an acquire of its own from the part
//!   the lane may have spent unreported (the allowance, 32 by default, the most the lane
//!   may have unsettled at once); a block set anywhere is published, and the lane stays
//!   shut until this process has heard how long it lasts (a subscription that dies without
//!   its socket closing is caught by a probe within three I/O timeouts, and shuts it too); if the process dies, only the
//!   allowance is held back (until the window ends), the rest returns after the TTL; and
//!   a holder that comes back after its lease expired gets its held share back less the
//!   allowance (a call of its old lease may still be on its way with a later report).
//! - **Waiting.** After a block, each waiter asks again in its priority's G6 window past the
//!   block's end. A secondary limit without `retry-after` blocks for
//!   [`WaitPolicy::secondary_block`] (60 s), doubled for each one in a row seen by any
//!   process, up to [`WaitPolicy::max_secondary_block`] (16 min); a good response starts
//!   over. While the quota is spent, a pub/sub message wakes waiters when quota comes
//!   back (returned grants, expired leases); a waiter re-asks at the latest every
//!   [`WaitPolicy::poll`] × [0.5, 1) (default under 1 s), so a lost message costs at most that.
//!   Once the reset is due before its next ask, it asks again in its priority's G6 window past
//!   the reset, as after a block: the waiters paused until a reset do not all come back at
//!   its first instant. A spent quota with no reset known comes back a window later at the
//!   latest.
//! - **Shared G8 rules** ([`QuotaSpec::shared_pacing`], opt-in). The window rules (GitHub's
//!   80 content-creating requests per minute, 900 points per minute per endpoint, with their
//!   P0 headroom), the spacing rules (≥ 1 s between mutations) and the concurrency cap
//!   (< 100 in flight) are judged in the same script call as the quota, for every process
//!   together: an acquire carries its request's kind, points and endpoint
//!   ([`SharedQuota::acquire_request`], [`acquire_shared`]), and the rules after its own
//!   arguments. Their counters are one more hash under the hash tag (and an index of endpoint
//!   windows), both expiring once nothing in them counts any more, read and written only
//!   by acquires that carry rules (a resource without them costs what it did). A window is
//!   ten buckets of a tenth of it (plus its margin): every grant of the window is counted,
//!   and at most one bucket of older ones, so the limit holds in every window and an ask
//!   waits at most a tenth of a window longer than an exact log would make it. Each rule
//!   keeps at most [`SHARED_ENDPOINT_CAP`] endpoint windows (idle ones are evicted; past the
//!   cap, endpoints share one overflow window, which a later window of their own starts
//!   from). The concurrency cap counts the calls in flight (whatever they cost) in the slots the script already keeps: a
//!   grant counts until it is observed or released (which wakes a waiter), or for the call
//!   bound if nobody settles it. A release does not give window units back (the call may
//!   have been sent). A refused ask is told how long until enough of the rule frees
//!   ([`QuotaWaitReason::Paced`]: the waiter sleeps until then) or waits for a settled grant
//!   ([`QuotaWaitReason::InFlight`]). Smoothing and even spend stay with the local governor.
//!   Every process sharing the resource must give the same rules: while some are counted,
//!   a process without rules is refused by name and its lease ended as an expired one is,
//!   its express lane shut (it would not be counted in them).
//!   Such a resource has **no express lane and no offline spending**: both grant without the
//!   script, so past every other process's rules; a P0 call pays one round trip, and keeps
//!   the P0 headroom and the priority marks below.
//! - **The G4 cascade detector** ([`QuotaSpec::shared_cascade`], opt-in). An observation
//!   that is a rate limit names its agent ([`QuotaGrant::for_agent`]; [`acquire_shared`]
//!   names the governor's, else the process counts as one); when enough distinct agents of
//!   any processes are limited within the window, every process goes to sequential mode:
//!   one call the script granted in flight at a time ([`QuotaWaitReason::Sequential`],
//!   woken when it settles), higher priorities first (the marks below), express lanes shut.
//!   Good responses after the block, or the next quota window, end it.
//! - **Priority across processes.** A P0 or P1 ask refused for want of quota makes every
//!   lower priority, in every process, wait ([`QuotaWaitReason::Yielding`]) for the asker's
//!   poll bound, within which it asks again; so quota that comes back while a higher
//!   priority waits goes to it, whichever process asks first. (The express lane does not
//!   consult this: it serves only priorities at or above its bound, P0 by default.)
//!
//! # When Redis is lost
//!
//! - At start: [`RedisQuota::connect`] fails with [`RedisQuotaError::Connect`] naming the URL
//!   (without its password).
//! - Mid-run, with [`OnLoss::FailClosed`]: every acquire is refused
//!   ([`RedisQuotaError::Unavailable`]) until Redis is back.
//! - Mid-run, with [`OnLoss::Degraded`] (the default): the process spends its reservation —
//!   quota that Redis set aside for it alone, so nobody else can have been granted it — until
//!   its lease would have expired (measured on its own boot clock, which keeps counting
//!   through a suspend ([`BootClock`](resilience_core::clock::BootClock)), from when the last
//!   renewal was *sent*, less a margin) or a [`RedisQuotaConfig::call_bound`] before the
//!   window ends (a call sent later may reach upstream in the next window); then it
//!   refuses. A rate limit
//!   it observes meanwhile blocks it alone, with the same G6 doubling of hintless
//!   secondary limits, counted on those it saw itself. It logs the outage once. A background task reconnects; before any other call uses the new
//!   connection, it rejoins every resource and reports what it spent offline.
//!
//! Because a process cut off from Redis may be spending its reservation, the reservation of
//! a degraded lease that expires is *held*, not returned to the pool, until its holder
//! reports or the window ends. Only a report the holder sent once its own deadline for that
//! lease had passed returns the rest: a call sent earlier (a heartbeat queued before the
//! outage) may be judged late, and lacks the spending that came after it. With [`OnLoss::FailClosed`] nothing can be spent offline, so
//! an expired lease's reservation returns to the pool at once.
//!
//! For the same reason, when a window ends earlier than some process was told (another
//! process read a reset header while it was cut off), what that process may spend unreported
//! (its reservation in degraded mode, else the express allowance) is carried into the new
//! window as held, under that process's lease: its reports are paid from it, and the rest
//! returns to the pool at its first call that is both past the time that lease would have
//! expired as it last heard (its reply to an earlier call may be lost, and it spend on from
//! its old reservation until then) and sent after a reply from the new window reached it
//! (a call it sent before it was cut off may be judged that late), or when it leaves. A
//! process cut off until then stopped spending, but reports only once it is back. One that never comes back keeps it held
//! until the window ends, as an expired degraded lease does.
//!
//! If Redis comes back *without its data* (no persistence, a failover to an empty replica),
//! the first process that knew a live window rebuilds it conservatively: the lowest pool any
//! process reports, the pool closed (reservations only) until every process it knew has
//! rejoined, or one lease TTL has passed. If a process that knew none got there first (new,
//! or silent since before the window's first grant), the state it made becomes that rebuild
//! when the first process that knew the window rejoins, what it granted meanwhile counted
//! against that process's pool. Until that window ends, its pool never exceeds the lowest
//! pool any returning process saw, less what the new state has taken since, not even on a
//! reading (it cannot count the reservations of processes not back yet, nor the lost
//! state's calls still on their way): quota that view did not see (reserved by a process
//! that never comes back, or returned after it was taken) stays unused until then.
//!
//! The counts of shared G8 rules are rebuilt too: each process keeps what its own grants
//! counted in them lately (by buckets of the server's clock, as the script counts), and a
//! process whose lease belongs to the lost state is asked for that report before it
//! rejoins; while the quota rebuilds, a resource with shared rules grants nothing, not even
//! from a reservation, so the counts hold every returning process's grants before the
//! first new one. See [`QuotaSpec::shared_pacing`] for what is not covered.
//!
//! A lost state is told from the new one by the state's id (its birth, in server µs), which
//! every reply carries and every call names, never by its clock: a failover to a host whose
//! clock is behind starts the new state's epochs and call counters below the lost one's,
//! and the processes still rebuild it from their views and follow its replies (a reply of
//! the lost state arriving late is dropped). What still reads the new host's clock is the
//! window's end a process reports: a clock behind keeps the rebuilt window, and its smaller
//! pool, until the reset the process knew as read on the new clock (later than upstream's, so
//! only ever more careful), or until a response's reset header moves it.
//!
//! A state that *rolled back* keeps its id: a failover to a replica that missed the last
//! writes, or a restore of an older copy. Every call also names the counter of the newest
//! reply it had, and the process's lease record keeps the counter of its last reply (other
//! processes' calls since the rollback can move the state's own counter past it, never
//! that record); a caller whose lease the state never issued is past it too. A state behind
//! any of these is older than what was granted since, and is lost as a whole and rebuilt
//! from the processes' views, as after a data loss. So is a state a
//! process has seen replaced by a newer one (every call names the last few it has seen
//! replaced) that comes back. Not detected: a rollback that only processes which never
//! called after the lost writes, or whose lease was reaped since, call into.
//!
//! Give Redis the `noeviction` maxmemory policy (its default). The rule counts are the only
//! keys this crate gives an expiry, so a `volatile-*` policy can evict them alone: that is
//! seen at the next acquire with rules, and they are rebuilt from the processes' reports
//! as above: the asks a rule selects wait until every process then holding a lease has
//! reported or left, or the last of those leases would have expired (a rebuild ended early
//! wakes them), and a process that had left reports when it comes back, before it is
//! judged. Until then its grants are not counted: the one case the rebuild can let a rule
//! be passed, and the reason for `noeviction`. Counts evicted again during the rebuild are
//! rebuilt again. An `allkeys-*` policy can evict any key; a lost state is a data loss,
//! but leases evicted alone are not detected.
//!
//! # Use
//!
//! ```no_run
//! use resilience_core::governor::{Observation, Priority};
//! use resilience_redis::{QuotaSpec, RedisQuota, RedisQuotaConfig};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let redis = RedisQuota::connect(RedisQuotaConfig::new("redis://127.0.0.1:6379")).await?;
//! let core = redis.resource("core", QuotaSpec::github()).await?;
//!
//! let grant = core.acquire(1, Priority::P1).await?;
//! // ... make the call, then report the response:
//! let response = Observation::from_headers(200, [("x-ratelimit-remaining", "4321")]);
//! core.observe(Some(grant), &response).await?;
//!
//! // Before the process exits: give this process's reservations back now (else after the
//! // lease TTL, or in degraded mode not before the window ends).
//! redis.shutdown().await?;
//! # Ok(()) }
//! ```
//!
//! With a local [`Governor`](resilience_core::governor::Governor), [`acquire_shared`] asks the
//! governor first (priority order and pacing in this process), then the shared quota at the
//! priority granted; the [`SharedPermit`] observes (or releases) both.
//!
//! The local governor paces the secondary limits (GitHub's points and creations per minute,
//! the concurrency cap) for its own process only. Either share them through Redis with
//! [`QuotaSpec::shared_pacing`] — give it the *whole* rules (e.g.
//! [`Pacing::github`](resilience_core::governor::Pacing::github)), and do **not** also cut
//! them per process with `part`: the script already counts every process's grants against
//! them — or, without shared rules, give each process its part of them with
//! [`ResourceConfig::part`](resilience_core::governor::ResourceConfig::part): with shares
//! that add up to 1, the processes together never pace past a limit (a process can then
//! never use another's idle share).
//!
//! ```no_run
//! use resilience_core::governor::{Pacing, Priority, Request};
//! use resilience_redis::{QuotaSpec, RedisQuota, RedisQuotaConfig};
//! use std::time::Duration;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let redis = RedisQuota::connect(RedisQuotaConfig::new("redis://127.0.0.1:6379")).await?;
//! let rules = Pacing::github().with_write_spacing(Duration::from_secs(1));
//! let core = redis
//!     .resource("core", QuotaSpec::github().shared_pacing(rules))
//!     .await?;
//! let pr = Request::create().with_endpoint("POST /repos/{owner}/{repo}/pulls");
//! let grant = core.acquire_request(&pr, Priority::P1, None).await?;
//! # let _ = grant; Ok(()) }
//! ```

mod config;
mod error;
mod governed;
mod grant;
#[cfg(test)]
mod held_report_tests;
#[cfg(test)]
mod held_roll_tests;
mod link;
mod local;
#[cfg(test)]
mod local_state_tests;
#[cfg(test)]
mod loss_rebuild_tests;
mod observe;
mod pace_log;
#[cfg(test)]
mod pace_rebuild_tests;
mod pacing;
mod quota;
#[cfg(test)]
mod rebuild_rejoin_tests;
mod resource;
mod script;
mod shutdown;
mod tasks;
#[cfg(test)]
#[path = "../tests/common/server.rs"]
mod test_server;
#[cfg(test)]
mod unrun_call_tests;
mod wait;

pub use config::{OnLoss, QuotaSpec, RedisQuotaConfig, WaitPolicy};
pub use error::{safe_url, RedisQuotaError};
pub use governed::{acquire_shared, SharedPermit};
pub use grant::{
    LinkState, QuotaDecision, QuotaGrant, QuotaSnapshot, QuotaWait, QuotaWaitReason, Settled,
};
pub use pacing::SHARED_ENDPOINT_CAP;
pub use quota::RedisQuota;
pub use resource::SharedQuota;
