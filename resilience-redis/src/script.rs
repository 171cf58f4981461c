//! The one Lua script (`quota.lua`), its arguments and its reply.
//!
//! Every operation on a resource is one `EVALSHA` of this script (redis-rs falls back to
//! `SCRIPT LOAD` + `EVALSHA` on `NOSCRIPT`, e.g. after a Redis restart), so each one is atomic
//! on the server and reads the server's clock.

use crate::config::{QuotaSpec, RedisQuotaConfig};
use crate::pacing::{Ask, PacingArgs};
use crate::quota::ms;
use redis::aio::MultiplexedConnection;
use redis::{RedisResult, Script};
use std::sync::{Arc, OnceLock};

/// One script in five files: the state, leases and in-flight slots (`quota.lua`), the shared
/// G8 rules (`pacing.lua`) and their rebuild after Redis lost its data
/// (`pacing_rebuild.lua`), the shared G4 cascade detector (`cascade.lua`), and the operations
/// (`quota_ops.lua`).
const SOURCE: &str = concat!(
    include_str!("quota.lua"),
    include_str!("pacing.lua"),
    include_str!("pacing_rebuild.lua"),
    include_str!("cascade.lua"),
    include_str!("quota_ops.lua")
);

/// The compiled script (its SHA1 is computed once).
pub(crate) fn script() -> &'static Script {
    static SCRIPT: OnceLock<Script> = OnceLock::new();
    SCRIPT.get_or_init(|| Script::new(SOURCE))
}

/// One operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Op {
    /// Acquire `cost` at a priority (index: 0 is P0); `ask` says what the shared rules need
    /// (sent only if the resource has them).
    Acquire {
        cost: u32,
        priority: u8,
        ask: Ask,
        /// The [`PendingAsk`](crate::pace_log::PendingAsk) of this ask (not sent): a report
        /// asked for before it is judged leaves it out.
        pending: Option<u64>,
    },
    /// Renew the lease (rejoin, report offline spending, top the reservation up).
    Renew,
    /// Return a grant that was not used.
    Release {
        cost: u32,
        window: u64,
        from_reserve: bool,
        /// The grant's ledger position.
        ledger: u64,
        /// When it was granted (server ms; 0 if the server did not grant it).
        granted_ms: u64,
        /// The in-flight slot it was counted in.
        slot: u64,
    },
    /// Report a response's headers.
    Observe(ObserveArgs),
    /// G6: block the resource.
    Block { ms: u64 },
    /// Give the lease (and reservation) back. `log`: with shared rules, this process's
    /// [`PaceLog`](crate::pace_log::PaceLog) report, merged first if the counts were lost
    /// and not yet told of it (leaving unreported, its grants were missing from them).
    Leave { log: Vec<u8> },
    /// Read the state.
    Snapshot,
    /// After Redis lost its data: add what this process's grants counted in the shared rules
    /// (its [`PaceLog`](crate::pace_log::PaceLog) report) to their counts, then rejoin.
    PaceReport { log: Vec<u8> },
}

impl Op {
    /// The pending ask of an acquire (see [`Op::Acquire`]).
    pub fn pending(&self) -> Option<u64> {
        match self {
            Self::Acquire { pending, .. } => *pending,
            _ => None,
        }
    }
}

/// A response as the script reads it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct ObserveArgs {
    /// The response was a rate limit (G4 counts it).
    pub limited: bool,
    /// The agent the grant was made for, if known (G4 counts distinct agents; else the
    /// process counts as one).
    pub agent: Option<Arc<str>>,
    /// The grant's ledger (0: no grant).
    pub ledger: u64,
    /// `x-ratelimit-limit`, 0 if absent.
    pub limit: u64,
    /// `x-ratelimit-remaining`, if present.
    pub remaining: Option<u64>,
    /// The reset as unix ms, 0 if absent.
    pub reset_ms: u64,
    /// The reset as ms from now (server time), 0 if absent.
    pub reset_after_ms: u64,
    /// G6 block to apply, from now, 0 for none.
    pub block_ms: u64,
    /// G6 block until this unix ms, 0 for none.
    pub block_until_ms: u64,
    /// The primary quota is spent.
    pub exhausted: bool,
    /// The window the grant was made in.
    pub window: u64,
    /// The grant's cost (0: no grant).
    pub cost: u32,
    /// When the server granted it (server ms; 0: no grant, or not granted by the server).
    pub granted_ms: u64,
    /// Units granted before it and still in flight when it was granted (its reading may
    /// not count them).
    pub in_flight: u64,
    /// The in-flight slot it was counted in.
    pub slot: u64,
    /// G6 backoff: what the response says about secondary limits in a row.
    pub backoff: Backoff,
    /// The most a doubled `block_ms` may reach ([`Backoff::Limit`]), ms.
    pub backoff_cap_ms: u64,
    /// No response came back ([`Observation::no_response`]): the call may still reach
    /// upstream until its call bound, so its units stay in flight until then.
    ///
    /// [`Observation::no_response`]: resilience_core::governor::Observation::no_response
    pub no_response: bool,
}

/// What a response tells the G6 backoff of secondary limits in a row (§6: "wait at least
/// one minute, then back off exponentially").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Backoff {
    /// Neither a hintless secondary limit nor a good response (a `retry-after`, a 5xx, ...).
    #[default]
    None,
    /// A secondary limit without `retry-after`: `block_ms` is the first block of a run,
    /// doubled for each limit in a row before it.
    Limit,
    /// A good response (below 400, not limited): a later limit starts the run over.
    Good,
}

/// What the caller knows, sent with every call (used only if Redis lost the state).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct View {
    pub epoch: u64,
    pub reset_at_ms: u64,
    pub pool: u64,
    pub members: u64,
    pub offline_spent: u64,
    pub local_reserved: u64,
    /// Some grant of this process may still count in a shared rule: if Redis lost its data,
    /// the script asks for the report ([`REPORT`]) before this process rejoins.
    pub pace_due: bool,
    /// The id of the state the newest reply came from (0: none yet): a lease of another
    /// state is one Redis has lost, whatever the servers' clocks say.
    pub state: u64,
    /// That reply's counter: a state behind it rolled back (a failover to a replica that
    /// missed the last writes), and is rebuilt as after a data loss.
    pub ops: u64,
    /// The states this process has seen replaced (0: none): one of them found again came
    /// back (a restore of an older copy), and is rebuilt as after a data loss.
    pub gone: [u64; 4],
    /// This process can spend nothing more from the lease the call names (its deadline for
    /// it had passed when the call was sent): the report is its last word on that lease, and
    /// what is held for it may go back to the pool.
    pub report_final: bool,
    /// The newest reply was in G4 sequential mode: a state that replaced the one it came
    /// from (Redis lost its data) takes it on.
    pub sequential: bool,
}

/// Per-process constants sent with every call.
#[derive(Debug, Clone)]
pub(crate) struct Fixed {
    /// State, leases, expiries, held, rejoined, and the shared rules' counters and endpoint
    /// index (sent only with an acquire that carries the rules).
    pub keys: [String; 7],
    pub channel: String,
    pub node: String,
    pub ttl_ms: u64,
    /// The most of its reservation this process may spend before the server hears of it
    /// (what the server holds back if its lease expires).
    pub hold: u64,
    /// The part of the reservation the server never pays an acquire from (the express
    /// allowance: the express lane may have spent it unreported).
    pub keep: u64,
    pub limit: u64,
    pub window_ms: u64,
    pub share_permille: u32,
    pub reserve_max: u64,
    /// How long a P0 or P1 ask refused for want of quota makes lower priorities yield: this
    /// process's poll bound, within which its waiter asks again.
    pub yield_ms: u64,
    /// Width of one in-flight slot: a quarter of the call bound (a grant nobody settles stops
    /// counting as in flight after four to five slots).
    pub slot_ms: u64,
    /// The shared G8 rules, if the resource has them (`keys[5..]` hold their state).
    pub pacing: Option<Arc<PacingArgs>>,
    /// The shared G4 cascade detector's settings, if this process shares it.
    pub cascade: Option<CascadeArgs>,
}

/// [`Cascade`](resilience_core::governor::Cascade) as the script reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CascadeArgs {
    pub agents: u32,
    pub window_ms: u64,
    pub clear_after: u32,
}

impl Fixed {
    pub fn new(prefix: &str, resource: &str) -> Self {
        let tag = format!("{{{prefix}:{resource}}}");
        Self {
            keys: ["q", "l", "e", "h", "r", "p", "i"].map(|k| format!("{tag}:{k}")),
            channel: channel(prefix, resource),
            node: String::new(),
            ttl_ms: 0,
            hold: 0,
            keep: 0,
            limit: 0,
            window_ms: 0,
            share_permille: 0,
            reserve_max: 0,
            yield_ms: 0,
            slot_ms: 1,
            pacing: None,
            cascade: None,
        }
    }
}

impl Fixed {
    /// What every call for resource `name` of this process sends, from its settings.
    pub fn for_resource(cfg: &RedisQuotaConfig, name: &str, spec: &QuotaSpec) -> Self {
        let mut fixed = Self::new(&cfg.prefix, name);
        fixed.node = cfg.node.clone();
        fixed.ttl_ms = ms(cfg.lease_ttl);
        // Shared rules: no express lane, no offline spending (see `shared_pacing`).
        fixed.hold = if spec.pacing.is_some() { 0 } else { cfg.hold() };
        fixed.pacing = spec.pacing.as_ref().map(|p| Arc::new(PacingArgs::new(p)));
        fixed.cascade = spec.cascade.as_ref().map(|c| CascadeArgs {
            agents: c.agents,
            window_ms: ms(c.window),
            clear_after: c.clear_after,
        });
        fixed.keep = if cfg.express.is_some() && fixed.pacing.is_none() {
            cfg.express_allowance
        } else {
            0
        };
        fixed.limit = spec.limit;
        fixed.window_ms = ms(spec.window);
        fixed.share_permille = cfg.reserve_share_permille;
        fixed.reserve_max = cfg.reserve_max;
        fixed.yield_ms = ms(cfg.wait.poll);
        fixed.slot_ms = ms(cfg.call_bound).div_ceil(4).max(1);
        fixed
    }
}

/// The pub/sub channel for a resource.
pub(crate) fn channel(prefix: &str, resource: &str) -> String {
    format!("{prefix}:ev:{resource}")
}

/// Status codes of the reply.
pub(crate) const GO: i64 = 1;
pub(crate) const WAIT: i64 = 2;
pub(crate) const FENCED: i64 = 3;
/// Redis lost its data, and this process's grants still count in the shared rules: send
/// [`Op::PaceReport`], then the op again (nothing else in the reply is set).
pub(crate) const REPORT: i64 = 4;
/// This process has no shared rules, and another counts grants against them: refused, its
/// lease ended ([`RedisQuotaError::PacedElsewhere`](crate::RedisQuotaError::PacedElsewhere)).
pub(crate) const PACED_ELSEWHERE: i64 = 5;
/// Wait reasons.
pub(crate) const BLOCKED: i64 = 1;
pub(crate) const EXHAUSTED: i64 = 2;
pub(crate) const RECOVERING: i64 = 3;
pub(crate) const TOO_BIG: i64 = 4;
pub(crate) const YIELDING: i64 = 5;
/// A shared G8 window or spacing rule.
pub(crate) const PACED: i64 = 6;
/// The shared concurrency cap.
pub(crate) const IN_FLIGHT: i64 = 7;
/// G4 sequential mode, shared: a call is in flight.
pub(crate) const SEQUENTIAL: i64 = 8;

/// The script's reply, field by field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Reply {
    pub status: i64,
    pub reason: i64,
    pub wait_ms: u64,
    pub epoch: u64,
    pub window: u64,
    pub ledger: u64,
    pub from_reserve: bool,
    pub reserved: u64,
    pub pool: u64,
    pub limit: u64,
    pub reset_at_ms: u64,
    pub now_ms: u64,
    pub members: u64,
    pub ops: u64,
    pub block_until_ms: u64,
    pub fresh: bool,
    pub held: u64,
    pub reserved_total: u64,
    pub window_ms: u64,
    /// Time the caller's lease has left, on the server's clock.
    pub lease_left_ms: u64,
    /// Units granted and not yet settled, as of this reply (an acquire's own grant included).
    pub in_flight: u64,
    /// The in-flight slot an acquire's grant was counted in.
    pub slot: u64,
    /// G4 sequential mode is on (the shared cascade detector).
    pub sequential: bool,
    /// The state's id (its birth, server µs): a new one after Redis lost its data.
    pub state: u64,
}

impl Reply {
    fn from_ints(v: &[i64]) -> Option<Self> {
        if v.len() < 24 {
            return None;
        }
        let u = |i: usize| u64::try_from(v[i]).unwrap_or(0);
        Some(Self {
            status: v[0],
            reason: v[1],
            wait_ms: u(2),
            epoch: u(3),
            window: u(4),
            ledger: u(5),
            from_reserve: v[6] == 1,
            reserved: u(7),
            pool: u(8),
            limit: u(9),
            reset_at_ms: u(10),
            now_ms: u(11),
            members: u(12),
            ops: u(13),
            block_until_ms: u(14),
            fresh: v[15] == 1,
            held: u(16),
            reserved_total: u(17),
            window_ms: u(18),
            lease_left_ms: u(19),
            in_flight: u(20),
            slot: u(21),
            sequential: v[22] == 1,
            state: u(23),
        })
    }
}

/// Runs one operation. `Ok(None)` is a reply of the wrong shape (a foreign script under the
/// same hash, or keys of another program), reported as a server error by the caller.
pub(crate) async fn call(
    conn: &mut MultiplexedConnection,
    fixed: &Fixed,
    view: &View,
    op: &Op,
) -> RedisResult<Option<Reply>> {
    let mut inv = script().prepare_invoke();
    let rules = match op {
        Op::Acquire { .. } | Op::PaceReport { .. } | Op::Leave { .. } => fixed.pacing.as_deref(),
        _ => None,
    };
    let keys = if rules.is_some() { 7 } else { 5 };
    for k in &fixed.keys[..keys] {
        inv.key(k);
    }
    let name = match op {
        Op::Acquire { .. } => "acq",
        Op::Renew => "renew",
        Op::Release { .. } => "rel",
        Op::Observe(_) => "obs",
        Op::Block { .. } => "block",
        Op::Leave { .. } => "leave",
        Op::Snapshot => "snap",
        Op::PaceReport { .. } => "pm",
    };
    inv.arg(name)
        .arg(&fixed.node)
        .arg(view.epoch)
        .arg(fixed.ttl_ms)
        .arg(fixed.hold)
        .arg(fixed.limit)
        .arg(fixed.window_ms)
        .arg(fixed.share_permille)
        .arg(fixed.reserve_max)
        .arg(view.reset_at_ms)
        .arg(view.pool)
        .arg(view.members)
        .arg(view.offline_spent)
        .arg(view.local_reserved)
        .arg(&fixed.channel);
    match op {
        Op::Acquire {
            cost,
            priority,
            ask,
            pending: _,
        } => {
            inv.arg(cost).arg(priority).arg(fixed.yield_ms);
            if let Some(rules) = rules {
                inv.arg(ask.kind)
                    .arg(ask.points)
                    .arg(ask.endpoint.as_deref().unwrap_or(""))
                    .arg(&rules.packed[..])
                    .arg(u8::from(view.pace_due));
            }
        }
        Op::Renew => {
            inv.arg(u8::from(view.pace_due))
                .arg(u8::from(fixed.pacing.is_some()));
        }
        Op::PaceReport { log } => {
            let rules = rules.map_or(&[][..], |r| &r.packed[..]);
            inv.arg(rules).arg(&log[..]);
        }
        Op::Release {
            cost,
            window,
            from_reserve,
            ledger,
            granted_ms,
            slot,
        } => {
            inv.arg(cost)
                .arg(window)
                .arg(u8::from(*from_reserve))
                .arg(ledger)
                .arg(granted_ms)
                .arg(slot);
        }
        Op::Observe(o) => {
            let remaining = o
                .remaining
                .map_or(-1, |r| i64::try_from(r).unwrap_or(i64::MAX));
            inv.arg(o.ledger)
                .arg(o.limit)
                .arg(remaining)
                .arg(o.reset_ms)
                .arg(o.block_ms)
                .arg(u8::from(o.exhausted))
                .arg(o.window)
                .arg(o.reset_after_ms)
                .arg(o.block_until_ms)
                .arg(o.granted_ms)
                .arg(o.in_flight)
                .arg(o.cost)
                .arg(o.slot)
                .arg(match o.backoff {
                    Backoff::None => 0_u8,
                    Backoff::Limit => 1,
                    Backoff::Good => 2,
                })
                .arg(o.backoff_cap_ms)
                .arg(u8::from(o.limited))
                .arg(o.agent.as_deref().unwrap_or(""));
            match fixed.cascade {
                Some(c) => inv.arg(c.agents).arg(c.window_ms).arg(c.clear_after),
                None => inv.arg(0).arg(0).arg(0),
            };
            inv.arg(u8::from(o.no_response));
        }
        Op::Block { ms } => {
            inv.arg(ms);
        }
        Op::Leave { log } => {
            if let Some(rules) = rules {
                inv.arg(u8::from(view.pace_due))
                    .arg(&rules.packed[..])
                    .arg(&log[..]);
            }
        }
        Op::Snapshot => {}
    }
    // Last, whatever the op: the script reads them from the end (its `TAIL`).
    // Almost always none: no allocation then.
    let gone = if view.gone[0] == 0 {
        String::new()
    } else {
        let ids: Vec<String> = view
            .gone
            .iter()
            .filter(|&&id| id != 0)
            .map(u64::to_string)
            .collect();
        ids.join(",")
    };
    inv.arg(u8::from(view.sequential))
        .arg(u8::from(view.report_final))
        .arg(gone)
        .arg(view.ops)
        .arg(view.state)
        .arg(fixed.slot_ms)
        .arg(fixed.keep);
    let ints: Vec<i64> = inv.invoke_async(conn).await?;
    Ok(Reply::from_ints(&ints))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g7_keys_share_one_hash_tag_and_replies_parse() {
        let f = Fixed::new("app", "core");
        assert!(f.keys.iter().all(|k| k.starts_with("{app:core}:")));
        assert_eq!(f.channel, "app:ev:core");
        let mut v = vec![1_i64; 24];
        v[2] = -5;
        v[20] = 7;
        v[21] = 9;
        v[23] = 11;
        let r = Reply::from_ints(&v).expect("24 fields");
        assert_eq!(
            (
                r.status,
                r.wait_ms,
                r.from_reserve,
                r.in_flight,
                r.slot,
                r.state
            ),
            (GO, 0, true, 7, 9, 11)
        );
        assert!(r.sequential);
        assert!(Reply::from_ints(&v[..23]).is_none());
        assert_eq!(script().get_hash().len(), 40);
    }
}
