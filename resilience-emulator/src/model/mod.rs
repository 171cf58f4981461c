//! The pure emulator model: limits, per-token state, decisions, log.

mod log;
mod respond;
mod state;
mod window;

pub use log::{Lockout, LockoutCause, LogEntry, Outcome, SecondaryCause};

use crate::limits::{Limits, LimitsError};
use crate::request::{Kind, Request, Response};
use parking_lot::Mutex;
use resilience_core::clock::Clock;
use respond::RateHeaders;
pub(crate) use state::endpoint_template;
use state::TokenState;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// A GitHub-like rate-limited API as a pure in-process model.
///
/// [`handle_at`](Self::handle_at) decides one request at an instant; nothing sleeps and
/// nothing opens a socket, so a test drives it on a [`ManualClock`] and asserts exact
/// answers. [`begin`](Self::begin)/[`end`](Self::end) bracket a request's time in flight for
/// the concurrency limit. The clock is used for "now" in [`handle`](Self::handle) and to turn
/// the window's reset instant into the `x-ratelimit-reset` epoch.
///
/// ```
/// use resilience_core::clock::ManualClock;
/// use resilience_emulator::{Emulator, Limits, Priority, Request};
/// use std::sync::Arc;
///
/// let clock = ManualClock::new();
/// let emu = Emulator::new(Limits::github(), Arc::new(clock.clone()), 7).unwrap();
/// let resp = emu.handle(&Request::new("t", "GET", "/repos/a/b", "picard", Priority::P0));
/// assert_eq!(resp.status, 200);
/// assert_eq!(resp.header("x-ratelimit-remaining"), Some("4999"));
/// ```
///
/// [`ManualClock`]: resilience_core::clock::ManualClock
pub struct Emulator {
    limits: Limits,
    clock: Arc<dyn Clock>,
    /// `unix_time - now` when the emulator was made: maps emulator instants to epochs.
    unix_origin: Duration,
    inner: Mutex<Inner>,
}

struct Inner {
    tokens: BTreeMap<String, TokenState>,
    /// Writes per path, for ETags: a GET's validator changes when anything below it is written.
    writes: BTreeMap<String, u64>,
    scripted: Vec<(Duration, Duration)>,
    log: Vec<LogEntry>,
    lockouts: Vec<Lockout>,
    rng: fastrand::Rng,
    seq: u64,
}

/// The state of `token`, made on first sight (user ids count up from 1).
fn token_state<'a>(
    tokens: &'a mut BTreeMap<String, TokenState>,
    token: &str,
) -> &'a mut TokenState {
    let n = tokens.len() as u64;
    tokens
        .entry(token.to_owned())
        .or_insert_with(|| TokenState::new(n + 1))
}

/// A token's state at an instant, for dashboards and tests.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TokenSnapshot {
    /// Primary quota used in the current window.
    pub used: u32,
    /// Primary quota left.
    pub remaining: u32,
    /// Requests in flight.
    pub in_flight: u32,
    /// End of the penalty box, if the token is in it.
    pub blocked_until: Option<Duration>,
}

impl Emulator {
    /// An emulator enforcing `limits`, reading time from `clock`, with its random choices
    /// (whether to send `retry-after`) seeded by `seed`.
    pub fn new(limits: Limits, clock: Arc<dyn Clock>, seed: u64) -> Result<Self, LimitsError> {
        limits.validate()?;
        let unix_origin = clock.unix_time().saturating_sub(clock.now());
        Ok(Self {
            limits,
            clock,
            unix_origin,
            inner: Mutex::new(Inner {
                tokens: BTreeMap::new(),
                writes: BTreeMap::new(),
                scripted: Vec::new(),
                log: Vec::new(),
                lockouts: Vec::new(),
                rng: fastrand::Rng::with_seed(seed),
                seq: 0,
            }),
        })
    }

    /// The limits enforced.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The emulator's clock.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Decides `request` at the clock's current time.
    pub fn handle(&self, request: &Request) -> Response {
        self.handle_at(request, self.clock.now())
    }

    /// Marks a request of `token` as in flight (call before [`handle_at`](Self::handle_at),
    /// and [`end`](Self::end) when its response has been delivered).
    pub fn begin(&self, token: &str) {
        token_state(&mut self.inner.lock().tokens, token).in_flight += 1;
    }

    /// Ends a request begun with [`begin`](Self::begin).
    pub fn end(&self, token: &str) {
        if let Some(t) = self.inner.lock().tokens.get_mut(token) {
            t.in_flight = t.in_flight.saturating_sub(1);
        }
    }

    /// Rejects every request made in `[start, start + length)` with a secondary-limit answer,
    /// whatever the counters say: GitHub's unpredictable blocks ("excessive compute", abuse
    /// detection), which no client can foresee.
    pub fn script_block(&self, start: Duration, length: Duration) {
        let mut inner = self.inner.lock();
        inner.scripted.push((start, start.saturating_add(length)));
        inner.lockouts.push(Lockout {
            start,
            end: start.saturating_add(length),
            cause: LockoutCause::Scripted,
        });
    }

    /// Every request handled so far, in order.
    pub fn log(&self) -> Vec<LogEntry> {
        self.inner.lock().log.clone()
    }

    /// Every lockout so far: penalties (with their extensions), primary exhaustions, scripted
    /// blocks.
    pub fn lockouts(&self) -> Vec<Lockout> {
        self.inner.lock().lockouts.clone()
    }

    /// The state of `token` at `now`, if it has been seen.
    pub fn snapshot(&self, token: &str, now: Duration) -> Option<TokenSnapshot> {
        let inner = self.inner.lock();
        let t = inner.tokens.get(token)?;
        let expired = t
            .window_start
            .is_none_or(|s| now >= s.saturating_add(self.limits.primary_window));
        let used = if expired { 0 } else { t.used };
        Some(TokenSnapshot {
            used,
            remaining: self.limits.primary_limit.saturating_sub(used),
            in_flight: t.in_flight,
            blocked_until: t.penalty_end(now),
        })
    }

    /// Marks `request` as in flight and decides it at the clock's current time, under one
    /// lock: the concurrency limit sees exactly the requests that arrived before this one.
    /// (A separate [`begin`](Self::begin) then [`handle`](Self::handle) lets a request that
    /// arrived later be counted against one that arrived earlier.) Pair it with
    /// [`end`](Self::end) once the response has been delivered.
    pub fn arrive(&self, request: &Request) -> Response {
        let mut inner = self.inner.lock();
        // Read inside the lock, so the log's instants follow its order.
        let now = self.clock.now();
        token_state(&mut inner.tokens, &request.token).in_flight += 1;
        self.decide(&mut inner, request, now)
    }

    /// Decides `request` at `now`: the heart of the model.
    pub fn handle_at(&self, request: &Request, now: Duration) -> Response {
        self.decide(&mut self.inner.lock(), request, now)
    }

    fn decide(&self, inner: &mut Inner, request: &Request, now: Duration) -> Response {
        let limits = &self.limits;
        inner.seq += 1;
        let seq = inner.seq;
        let token = token_state(&mut inner.tokens, &request.token);
        let reset = token.roll_window(now, limits);
        let scripted_end = inner
            .scripted
            .iter()
            .filter(|(s, e)| *s <= now && now < *e)
            .map(|(_, e)| *e)
            .max();

        let decision = if token.remaining(limits) == 0 {
            Decision::Reject(Outcome::PrimaryExhausted)
        } else if let Some(end) = scripted_end {
            Decision::Secondary(Outcome::Scripted, end, false)
        } else if let Some(end) = token.penalty_end(now) {
            let end = match (limits.extend_penalty_on_blocked_request, token.blocked) {
                (true, Some((_, idx))) => {
                    let new_end = end.max(now.saturating_add(limits.penalty));
                    token.blocked = Some((new_end, idx));
                    if let Some(l) = inner.lockouts.get_mut(idx) {
                        l.end = new_end;
                    }
                    new_end
                }
                _ => end,
            };
            Decision::Secondary(Outcome::PenaltyBox, end, false)
        } else if let Some(cause) = breach(token, request, now, limits) {
            let end = now.saturating_add(limits.penalty);
            token.blocked = Some((end, inner.lockouts.len()));
            inner.lockouts.push(Lockout {
                start: now,
                end,
                cause: LockoutCause::Secondary(cause),
            });
            let content = matches!(
                cause,
                SecondaryCause::ContentPerMinute | SecondaryCause::ContentPerHour
            );
            Decision::Secondary(Outcome::SecondaryBreach(cause), end, content)
        } else {
            Decision::Serve
        };

        let etag = etag_of(&inner.writes, &request.path);
        let not_modified = matches!(decision, Decision::Serve)
            && request.kind == Kind::Read
            && request.if_none_match.as_deref() == Some(etag.as_str());
        let charge = match decision {
            Decision::Serve => !(not_modified && limits.conditional_requests_free),
            Decision::Secondary(..) => limits.rejected_use_primary,
            Decision::Reject(_) => false,
        };
        if charge {
            token.used += 1;
            if token.used == limits.primary_limit {
                inner.lockouts.push(Lockout {
                    start: now,
                    end: reset,
                    cause: LockoutCause::Primary,
                });
            }
        }
        let rate = RateHeaders {
            limit: limits.primary_limit,
            remaining: token.remaining(limits),
            used: token.used,
            reset_epoch: respond::ceil_secs(self.unix_origin.saturating_add(reset)),
            resource: &limits.resource,
            request_id: seq,
        };
        let remaining = rate.remaining;

        let (response, outcome) = match decision {
            Decision::Serve => {
                if request.kind.is_write() {
                    *inner.writes.entry(request.path.clone()).or_default() += 1;
                    spend(token, request, now, limits);
                    let status = match request.method.to_ascii_uppercase().as_str() {
                        "POST" => 201,
                        "DELETE" => 204,
                        _ => 200,
                    };
                    (respond::served(status, rate, None), Outcome::Served)
                } else {
                    spend(token, request, now, limits);
                    let (status, outcome) = if not_modified {
                        (304, Outcome::NotModified)
                    } else {
                        (200, Outcome::Served)
                    };
                    (respond::served(status, rate, Some(etag)), outcome)
                }
            }
            Decision::Reject(outcome) => (
                respond::primary_exhausted(limits.primary_status.code(), rate, token.user_id),
                outcome,
            ),
            Decision::Secondary(outcome, end, content) => {
                let send = inner.rng.f64() < limits.retry_after_probability;
                let after = send.then(|| end.saturating_sub(now));
                let status = limits.secondary_status.code();
                (respond::secondary(status, rate, content, after), outcome)
            }
        };
        inner.log.push(LogEntry {
            at: now,
            admitted: request.admitted,
            agent: request.agent.clone(),
            priority: request.priority,
            method: request.method.clone(),
            path: request.path.clone(),
            kind: request.kind,
            status: response.status,
            outcome,
            remaining,
            retry_after: response.header_u64("retry-after"),
        });
        response
    }
}

impl std::fmt::Debug for Emulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Emulator")
            .field("limits", &self.limits)
            .field("requests", &self.inner.lock().log.len())
            .finish_non_exhaustive()
    }
}

enum Decision {
    Serve,
    Reject(Outcome),
    /// A secondary-limit answer: outcome, end of the block, content-creation message?
    Secondary(Outcome, Duration, bool),
}

fn points_of(request: &Request, limits: &Limits) -> u32 {
    if request.kind.is_write() {
        limits.write_points
    } else {
        limits.read_points
    }
}

/// The first secondary limit this request would breach, if any.
fn breach(
    token: &mut TokenState,
    request: &Request,
    now: Duration,
    limits: &Limits,
) -> Option<SecondaryCause> {
    if token.in_flight > limits.max_concurrency {
        return Some(SecondaryCause::Concurrency);
    }
    let points = points_of(request, limits);
    let template = endpoint_template(&request.path);
    if token
        .endpoint_points(&template, limits)
        .would_exceed(now, points, limits.points_per_window)
    {
        return Some(SecondaryCause::Points);
    }
    if request.kind == Kind::ContentCreating {
        if token
            .content_minute
            .would_exceed(now, 1, limits.content_per_minute)
        {
            return Some(SecondaryCause::ContentPerMinute);
        }
        if token
            .content_hour
            .would_exceed(now, 1, limits.content_per_hour)
        {
            return Some(SecondaryCause::ContentPerHour);
        }
    }
    None
}

fn spend(token: &mut TokenState, request: &Request, now: Duration, limits: &Limits) {
    let points = points_of(request, limits);
    let template = endpoint_template(&request.path);
    token.endpoint_points(&template, limits).spend(now, points);
    if request.kind == Kind::ContentCreating {
        token.content_minute.spend(now, 1);
        token.content_hour.spend(now, 1);
    }
}

/// A weak validator that changes whenever `path` or anything below it is written (the query
/// only filters: `/issues?state=open` changes when `/issues/3/comments` is written).
fn etag_of(writes: &BTreeMap<String, u64>, path: &str) -> String {
    let path = path.split('?').next().unwrap_or(path);
    let n: u64 = writes
        .range(path.to_owned()..)
        .take_while(|(k, _)| k.starts_with(path))
        .map(|(_, v)| *v)
        .sum();
    format!("W/\"{n}\"")
}

#[cfg(test)]
mod tests;
