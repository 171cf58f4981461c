//! Settings: where Redis is, who this process is, what happens when Redis is lost, and each
//! shared resource's quota.

use crate::error::RedisQuotaError;
use resilience_core::governor::{Cascade, Pacing, Priority};
use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

/// What a process does while Redis is unreachable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnLoss {
    /// Refuse every acquire ([`RedisQuotaError::Unavailable`]) until Redis is back. Nothing
    /// is spent that Redis did not grant.
    FailClosed,
    /// Spend this process's reservation: a share of the quota set aside for it in Redis while
    /// it was connected (so no other process can have been granted it), until its lease would
    /// have expired or a call bound before the window ends (a call sent later may reach
    /// upstream in the next window, which the server gives out not knowing of it), whichever
    /// comes first; then refuse. Logged once per
    /// outage; the process rejoins (and reports what it spent) when Redis returns.
    #[default]
    Degraded,
}

/// How a waiter learns that it may ask again (G6 windows, pub/sub, poll bound).
#[derive(Debug, Clone, PartialEq)]
pub struct WaitPolicy {
    /// G6: after a block, each priority asks again at a uniform draw in its window past the
    /// block's end: P0 `[0, 0.5 s)`, P1 `[0.5, 3.5 s)`, P2 `[3.5, 9.5 s)`.
    pub windows: [(Duration, Duration); 3],
    /// Longest sleep between two asks while waiting for quota (jittered to ×[0.5, 1)):
    /// the bound on how late a waiter can be if a pub/sub message is lost.
    pub poll: Duration,
    /// On a pub/sub wake-up (quota returned), a waiter of priority `p` waits a uniform draw
    /// in `[p, p + 1) × wake_jitter` first, so higher priorities ask first.
    pub wake_jitter: Duration,
    /// G6: how long a secondary limit without `retry-after` blocks the resource (GitHub's
    /// documented minute). Each such limit that follows another, with no good response in
    /// between (seen by any process), doubles it (GitHub: "wait at least one minute, then
    /// back off exponentially"), up to `max_secondary_block`.
    pub secondary_block: Duration,
    /// The longest the doubling of `secondary_block` goes. Default 16 min (60 s doubled four
    /// times), as the in-process `retry_windows.max_default_block`.
    pub max_secondary_block: Duration,
}

impl Default for WaitPolicy {
    fn default() -> Self {
        let ms = Duration::from_millis;
        Self {
            windows: [
                (ms(0), ms(500)),
                (ms(500), ms(3_500)),
                (ms(3_500), ms(9_500)),
            ],
            poll: Duration::from_secs(1),
            wake_jitter: ms(20),
            secondary_block: Duration::from_secs(60),
            max_secondary_block: Duration::from_secs(16 * 60),
        }
    }
}

/// Connection and behaviour settings for a [`RedisQuota`](crate::RedisQuota).
#[derive(Clone)]
#[non_exhaustive]
pub struct RedisQuotaConfig {
    /// `redis://[user:password@]host:port[/db]`. Logged and reported without the password.
    pub url: String,
    /// Prefix of every key and channel; processes sharing a quota use the same one.
    pub prefix: String,
    /// This process's name in the leases; unique per process. Default: host, pid, random.
    pub node: String,
    /// G5/G7 lease: a process silent this long loses its lease (and its epoch is fenced).
    pub lease_ttl: Duration,
    /// Renewal period of the background heartbeat (default `lease_ttl / 3`).
    pub heartbeat: Duration,
    /// Subtracted from the lease on this host's clock before spending offline, for clock
    /// rate drift between hosts.
    pub lease_margin: Duration,
    /// Behaviour while Redis is unreachable.
    pub on_loss: OnLoss,
    /// Share of the pool set aside, across all processes, as reservations (per mille).
    /// Each process tops its reservation up to `pool × share / processes`.
    pub reserve_share_permille: u32,
    /// Cap on one process's reservation.
    pub reserve_max: u64,
    /// Connect timeout.
    pub connect_timeout: Duration,
    /// Timeout of one script call; past it, Redis counts as lost.
    pub io_timeout: Duration,
    /// Delay between two reconnection attempts while Redis is lost (jittered ×[0.5, 1.5)).
    pub reconnect_every: Duration,
    /// Waiting behaviour.
    pub wait: WaitPolicy,
    /// The express lane: acquires of this priority or a more important one are paid from
    /// this process's reservation with no round trip while the reservation lasts (reported
    /// with the next call), so a critical call never waits on Redis while a background call
    /// of another process, granted a moment earlier, is served. `None` turns it off.
    /// Default: [`Priority::P0`]. It needs the pub/sub channel: a block set by another
    /// process shuts it until this process has heard how long the block lasts.
    pub express: Option<Priority>,
    /// The most the express lane may have spent and not yet had settled by the server
    /// (default 32); past it, express acquires ask Redis (and carry the report). Size it to
    /// the largest burst of express calls one process starts at once: the call past it
    /// waits a round trip, and a background call of another process may be let through
    /// meanwhile (a squad lead's parallel step of ten reads did, with 8). If this process
    /// dies, the server holds back this much of its reservation until the window ends and
    /// returns the rest after the lease TTL.
    pub express_allowance: u64,
    /// The longest a governed call takes from its grant to its response (default 30 s).
    /// Until a grant is observed or released, and for at least this long, readings of other
    /// calls do not count its quota as left: the call may still be on its way, and a
    /// reading of a call that overtook it would otherwise credit its unit. A grant nobody
    /// settles (dropped, or of a dead process) stops counting after 1 to 1.25 times this.
    /// The longest call bound of the processes sharing the resource counts for all of them
    /// (the script's in-flight slots widen to it), so processes configured differently still
    /// count alike, and no call stops counting while still within its own process's bound.
    /// A window also starts less what is still counted this way (upstream counts a call
    /// when it arrives), so give a resource whose window is shorter than this bound a bound
    /// no longer than its window: else an unsettled grant is taken from every window it
    /// spans. Degraded mode stops spending offline this long before a window ends (with a
    /// bound as long as the window, it never spends offline).
    pub call_bound: Duration,
}

/// Shows the URL as [`safe_url`](crate::safe_url) does: a config is easily logged whole.
impl fmt::Debug for RedisQuotaConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Destructured so that a new field cannot be left out unnoticed.
        let Self {
            url,
            prefix,
            node,
            lease_ttl,
            heartbeat,
            lease_margin,
            on_loss,
            reserve_share_permille,
            reserve_max,
            connect_timeout,
            io_timeout,
            reconnect_every,
            wait,
            express,
            express_allowance,
            call_bound,
        } = self;
        f.debug_struct("RedisQuotaConfig")
            .field("url", &crate::safe_url(url))
            .field("prefix", prefix)
            .field("node", node)
            .field("lease_ttl", lease_ttl)
            .field("heartbeat", heartbeat)
            .field("lease_margin", lease_margin)
            .field("on_loss", on_loss)
            .field("reserve_share_permille", reserve_share_permille)
            .field("reserve_max", reserve_max)
            .field("connect_timeout", connect_timeout)
            .field("io_timeout", io_timeout)
            .field("reconnect_every", reconnect_every)
            .field("wait", wait)
            .field("express", express)
            .field("express_allowance", express_allowance)
            .field("call_bound", call_bound)
            .finish()
    }
}

impl RedisQuotaConfig {
    /// Defaults for `url`: lease 2 min (G5), degraded mode with a 10% reservation share.
    pub fn new(url: impl Into<String>) -> Self {
        let lease_ttl = Duration::from_secs(120);
        Self {
            url: url.into(),
            prefix: "resilience".into(),
            node: default_node(),
            lease_ttl,
            heartbeat: lease_ttl / 3,
            lease_margin: Duration::from_millis(250),
            on_loss: OnLoss::Degraded,
            reserve_share_permille: 100,
            reserve_max: u64::MAX / 4,
            connect_timeout: Duration::from_secs(2),
            io_timeout: Duration::from_secs(1),
            reconnect_every: Duration::from_millis(500),
            wait: WaitPolicy::default(),
            express: Some(Priority::P0),
            express_allowance: 32,
            call_bound: Duration::from_secs(30),
        }
    }

    /// The most of its reservation this process may spend before the server hears of it.
    pub(crate) fn hold(&self) -> u64 {
        match (self.on_loss, self.express) {
            // Offline spending is bounded only by the reservation itself.
            (OnLoss::Degraded, _) => 1 << 50,
            (OnLoss::FailClosed, Some(_)) => self.express_allowance,
            (OnLoss::FailClosed, None) => 0,
        }
    }

    /// Sets the key prefix.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Names this process.
    pub fn node(mut self, node: impl Into<String>) -> Self {
        self.node = node.into();
        self
    }

    /// Sets the lease TTL and a heartbeat of a third of it.
    pub fn lease_ttl(mut self, ttl: Duration) -> Self {
        self.lease_ttl = ttl;
        self.heartbeat = ttl / 3;
        self
    }

    /// Sets the behaviour while Redis is unreachable.
    pub fn on_loss(mut self, on_loss: OnLoss) -> Self {
        self.on_loss = on_loss;
        self
    }

    /// Sets the reservation share (per mille of the pool, across processes).
    pub fn reserve_share_permille(mut self, permille: u32) -> Self {
        self.reserve_share_permille = permille;
        self
    }

    /// Sets the timeout of one call and of connecting.
    pub fn timeouts(mut self, connect: Duration, io: Duration) -> Self {
        self.connect_timeout = connect;
        self.io_timeout = io;
        self
    }

    /// Sets the delay between reconnection attempts.
    pub fn reconnect_every(mut self, every: Duration) -> Self {
        self.reconnect_every = every;
        self
    }

    /// Sets the waiting behaviour.
    pub fn wait(mut self, wait: WaitPolicy) -> Self {
        self.wait = wait;
        self
    }

    /// Sets the longest a governed call takes from grant to response
    /// ([`call_bound`](Self::call_bound)).
    pub fn call_bound(mut self, bound: Duration) -> Self {
        self.call_bound = bound;
        self
    }

    /// Sets the express lane's priority bound (`None`: every acquire asks Redis) and its
    /// allowance.
    pub fn express(mut self, express: Option<Priority>, allowance: u64) -> Self {
        self.express = express;
        self.express_allowance = allowance;
        self
    }

    /// Checks every setting; errors name the field.
    pub fn validate(&self) -> Result<(), RedisQuotaError> {
        let bad = |field: &'static str, reason: &str| {
            Err(RedisQuotaError::Config {
                field,
                reason: reason.to_owned(),
            })
        };
        if !valid_name(&self.prefix) {
            return bad("prefix", "1-64 of [A-Za-z0-9_.-]");
        }
        if self.node.is_empty() || self.node.len() > 128 || self.node.contains([' ', ':']) {
            return bad("node", "1-128 characters, no space or ':'");
        }
        let ms = |d: Duration| d.as_millis();
        if ms(self.lease_ttl) < 100 || self.lease_ttl > Duration::from_secs(86_400) {
            return bad("lease_ttl", "between 100 ms and 24 h");
        }
        if self.heartbeat.is_zero() || self.heartbeat >= self.lease_ttl {
            // Often a `lease_ttl` set on the field, leaving the default heartbeat behind.
            return bad(
                "heartbeat",
                &format!(
                    "above zero and below lease_ttl ({:?} against {:?}): set both, or set the \
                     TTL with `lease_ttl()`, which sets a heartbeat of a third of it",
                    self.heartbeat, self.lease_ttl
                ),
            );
        }
        if self.lease_margin >= self.lease_ttl {
            return bad("lease_margin", "below lease_ttl");
        }
        if self.express.is_some() && !(1..=1 << 40).contains(&self.express_allowance) {
            return bad(
                "express_allowance",
                "between 1 and 2^40 while express is on",
            );
        }
        if ms(self.call_bound) < 100 || self.call_bound > Duration::from_secs(3_600) {
            return bad("call_bound", "between 100 ms and 1 h");
        }
        if self.reserve_share_permille > 1000 {
            return bad("reserve_share_permille", "at most 1000");
        }
        for (field, d) in [
            ("connect_timeout", self.connect_timeout),
            ("io_timeout", self.io_timeout),
            ("reconnect_every", self.reconnect_every),
            ("wait.poll", self.wait.poll),
        ] {
            if d.is_zero() {
                return bad(field, "above zero");
            }
        }
        if self.wait.max_secondary_block < self.wait.secondary_block {
            return bad("wait.max_secondary_block", "at least wait.secondary_block");
        }
        if self.wait.windows.iter().any(|(a, b)| a > b) {
            return bad("wait.windows", "each window's start at or before its end");
        }
        Ok(())
    }
}

/// One shared quota bucket, as the first process to use it creates it in Redis, and
/// optionally the G8 pacing rules every process paces by together
/// ([`shared_pacing`](Self::shared_pacing)).
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaSpec {
    /// Quota per window (updated by `x-ratelimit-limit` readings).
    pub limit: u64,
    /// Window length; a window starts at its first grant unless a reset header says when.
    pub window: Duration,
    /// G8 rules enforced by the shared script across every process (its window rules, spacing
    /// rules and concurrency cap; see [`shared_pacing`](Self::shared_pacing)). `None` (the
    /// default): the script paces nothing, and costs what it did without them.
    pub pacing: Option<Pacing>,
    /// The G4 cascade detector shared by every process (see
    /// [`shared_cascade`](Self::shared_cascade)). `None` (the default): each process's
    /// governor detects cascades among its own agents only.
    pub cascade: Option<Cascade>,
    /// The upstream bucket this resource counts, as responses name it in
    /// `x-ratelimit-resource` (GitHub's `core`, `search`, `graphql`, ...): a response naming
    /// another is not read as this one's quota, nor its rate limit as this one's (its grant
    /// is settled, as paid elsewhere). `None`: every response observed on it counts.
    pub bucket: Option<Cow<'static, str>>,
}

/// The shared detector's bounds: the script keeps at most 64 limited agents.
fn validate_cascade(c: &Cascade) -> Result<(), RedisQuotaError> {
    let bad = |field: &'static str, reason: &str| {
        Err(RedisQuotaError::Config {
            field,
            reason: reason.to_owned(),
        })
    };
    if c.agents == 0 || c.agents > 64 {
        return bad("cascade.agents", "between 1 and 64");
    }
    if c.window.is_zero() || c.window > Duration::from_secs(86_400) {
        return bad("cascade.window", "above zero and at most a day");
    }
    if c.clear_after == 0 {
        return bad("cascade.clear_after", "at least 1");
    }
    Ok(())
}

impl QuotaSpec {
    /// `limit` per `window`.
    pub const fn new(limit: u64, window: Duration) -> Self {
        Self {
            limit,
            window,
            pacing: None,
            cascade: None,
            bucket: None,
        }
    }

    /// GitHub's primary limit: 5 000 requests per hour, of the `core` bucket (a `search` or
    /// `graphql` response observed on it is not read as `core`'s quota).
    pub const fn github() -> Self {
        Self {
            limit: 5_000,
            window: Duration::from_secs(3_600),
            pacing: None,
            cascade: None,
            bucket: Some(Cow::Borrowed("core")),
        }
    }

    /// Counts the upstream bucket `name` only (see [`bucket`](Self::bucket)).
    pub fn with_bucket(mut self, name: impl Into<Cow<'static, str>>) -> Self {
        self.bucket = Some(name.into());
        self
    }

    /// Paces every process sharing this resource by `pacing`'s rules together (G7 + G8): its
    /// window rules (e.g. GitHub's 80 content-creating requests per minute, 900 points per
    /// minute per endpoint, with their P0 headroom), its spacing rules (≥ 1 s between
    /// mutations) and its concurrency cap (< 100 in flight), judged in the same script call
    /// as the quota (no extra round trip) on the server's clock. Give the *whole* rules here
    /// (e.g. [`Pacing::github`]), not a process's [`part`](resilience_core::governor::ResourceConfig::part)
    /// of them: the script counts every process's grants against them. A local
    /// [`Governor`](resilience_core::governor::Governor) in front ([`acquire_shared`](crate::acquire_shared))
    /// may keep the same whole rules (they then also smooth within the process) or none,
    /// never a part.
    ///
    /// What each acquire counts is its [`Request`](resilience_core::governor::Request)
    /// ([`SharedQuota::acquire_request`](crate::SharedQuota::acquire_request), or
    /// [`acquire_shared`](crate::acquire_shared)); a plain
    /// [`acquire`](crate::SharedQuota::acquire) counts as a read of one point with no
    /// endpoint. Windows are sliding windows of ten buckets (an ask may wait up to a tenth
    /// of the window longer than an exact log would make it, never less); window units are
    /// not returned by a release (the call may have been sent); the concurrency cap counts
    /// grants until they are observed or released, or for the call bound
    /// ([`RedisQuotaConfig::call_bound`]) if nobody settles them. Smoothing
    /// ([`WindowRule::smooth_burst`](resilience_core::governor::WindowRule::smooth_burst))
    /// and the even spend are not shared: the local governor still applies them.
    ///
    /// Every process sharing the resource must give the same rules (rules are counted by
    /// name): while any are counted, a process without rules is refused
    /// ([`RedisQuotaError::PacedElsewhere`], naming the fix), as it would not be counted in
    /// them; its next call or heartbeat ends its lease, as an expired one (its reservation
    /// back to the pool, less what it may have spent unreported, held), and shuts its
    /// express lane.
    ///
    /// A resource with shared rules has no express lane and spends nothing while Redis is
    /// unreachable (acquires are refused with [`RedisQuotaError::Unavailable`]): both would
    /// grant without the script, so past every process's rules.
    ///
    /// If Redis comes back without its data, the quota is rebuilt conservatively (see the
    /// crate docs), and so are the rule counts: each process keeps what its own grants
    /// counted in the rules lately, and reports it before it rejoins; while the quota
    /// rebuilds (started by the first process back that knew the lost state, whether or not
    /// the quota window it knew has ended), nothing is granted (not even from a reservation)
    /// until every process known has rejoined, so the counts hold all their grants first.
    /// The calls each process reports in flight (granted, not yet observed or released)
    /// count in the concurrency cap for a call bound after its report. An ask whose answer
    /// its process has not read when it reports (or never will: a lost connection, a dropped
    /// acquire) is reported as granted at the merge, so the rules may count it once too
    /// often, never once too few.
    ///
    /// What the rebuild cannot know, it cannot count. Each of these may let a rule's windows
    /// open at the loss be spent again, up to twice their limit:
    /// - a process that does not come back within one lease TTL (it died with Redis, or is
    ///   cut off from it): the pool opens without its report. With a rule longer than the
    ///   lease TTL (GitHub's 500 creations an hour, against the default 2 min lease) that is
    ///   most of the rule's window;
    /// - a process that joined within a heartbeat before the loss: it is waited for only if
    ///   the processes back first had heard of it (their member count);
    /// - a process started after the loss that reaches Redis before any process that knew
    ///   the lost state: nothing tells it a state was lost (a first start looks the same),
    ///   so it is judged on empty counts until the others come back.
    ///
    /// A rebuild that waited a whole rule span (an hour for GitHub's) would close those
    /// gaps at that cost; this one waits at most a lease TTL. (The G6 block and the G4
    /// sequential mode outlive a loss: the processes that knew them bring them back.) The
    /// same holds when only the rule counts are evicted (a
    /// `volatile-*` maxmemory policy), with the lease holders of the moment as the
    /// processes known.
    pub fn shared_pacing(mut self, pacing: Pacing) -> Self {
        self.pacing = Some(pacing);
        self
    }

    /// Detects rate-limit cascades across every process sharing this resource (G4 + G7):
    /// when `cascade.agents` distinct agents, in any processes, are rate limited within
    /// `cascade.window`, every process goes to *sequential mode*: one call in flight at a
    /// time across all of them, higher priorities first, until `cascade.clear_after` good
    /// responses in a row came back after the block lifted, or the quota window rolls over.
    ///
    /// An agent is what a grant names ([`QuotaGrant::for_agent`](crate::QuotaGrant::for_agent);
    /// [`acquire_shared`](crate::acquire_shared) names the governor's agent); a grant that
    /// names none counts as its process. Sequential mode counts the calls the script granted
    /// and shuts the express lane while it lasts. Give every process the same settings: an
    /// observation from a process without them neither counts a limit nor ends the mode.
    /// The local governor's own G4 goes on detecting cascades among its own agents. If
    /// Redis loses its data, a process whose newest reply was in sequential mode, of a
    /// window not yet ended, brings the mode back to the state that replaces the lost one.
    pub fn shared_cascade(mut self, cascade: Cascade) -> Self {
        self.cascade = Some(cascade);
        self
    }

    pub(crate) fn validate(&self) -> Result<(), RedisQuotaError> {
        if self.limit == 0 || self.limit > 1 << 50 {
            return Err(RedisQuotaError::Config {
                field: "limit",
                reason: "between 1 and 2^50".into(),
            });
        }
        if self.window.as_millis() < 10 || self.window > Duration::from_secs(366 * 86_400) {
            return Err(RedisQuotaError::Config {
                field: "window",
                reason: "between 10 ms and a year".into(),
            });
        }
        if let Some(c) = &self.cascade {
            validate_cascade(c)?;
        }
        if let Some(p) = &self.pacing {
            crate::pacing::validate(p)?;
        }
        Ok(())
    }
}

/// Key prefixes and resource names: safe inside a hash tag and a channel pattern.
pub(crate) fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

fn default_node() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| {
            h.trim()
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '.')
                .take(64)
                .collect::<String>()
        })
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "host".into());
    format!("{host}-{}-{:08x}", std::process::id(), fastrand::u32(..))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g7_config_errors_name_the_field() {
        let base = RedisQuotaConfig::new("redis://127.0.0.1:1");
        assert!(base.validate().is_ok());
        let e = base.clone().prefix("a b").validate().unwrap_err();
        assert!(e.to_string().contains("prefix"), "{e}");
        let e = base
            .clone()
            .lease_ttl(Duration::from_millis(5))
            .validate()
            .unwrap_err();
        assert!(e.to_string().contains("lease_ttl"), "{e}");
        // A TTL set on the field leaves the default heartbeat (40 s) behind: said so.
        let mut short = base.clone();
        short.lease_ttl = Duration::from_secs(10);
        let e = short.validate().unwrap_err().to_string();
        assert!(
            e.contains("heartbeat") && e.contains("40s against 10s"),
            "{e}"
        );
        assert!(e.contains("`lease_ttl()`"), "{e}");
        let e = base.clone().node("a:b").validate().unwrap_err();
        assert!(e.to_string().contains("node"), "{e}");
        let short_cap = WaitPolicy {
            max_secondary_block: Duration::from_secs(30),
            ..WaitPolicy::default()
        };
        let e = base.clone().wait(short_cap).validate().unwrap_err();
        assert!(e.to_string().contains("wait.max_secondary_block"), "{e}");
        let e = QuotaSpec::new(0, Duration::from_secs(1))
            .validate()
            .unwrap_err();
        assert!(e.to_string().contains("limit"), "{e}");
        assert!(valid_name("core") && !valid_name("{core}") && !valid_name(""));
    }

    #[test]
    fn g7_default_node_names_are_unique_and_valid() {
        let (a, b) = (default_node(), default_node());
        assert_ne!(a, b);
        let cfg = RedisQuotaConfig::new("redis://x").node(a);
        assert!(cfg.validate().is_ok());
    }

    /// A config is logged as easily as anything (`?config`): its `Debug` used to print the
    /// URL whole, password included.
    #[test]
    fn g7_config_debug_shows_the_url_without_its_password() {
        let cfg = RedisQuotaConfig::new("redis://app:hunter2@cache:6379/0");
        let shown = format!("{cfg:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("redis://app:***@cache:6379/0"), "{shown}");
        assert!(shown.contains("lease_ttl"), "{shown}");
    }
}
