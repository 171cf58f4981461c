//! [`RedisQuota`]: the connection, the per-resource states, and the two background tasks
//! (the supervisor renewing leases and reconnecting, the pub/sub listener waking waiters).

use crate::config::{valid_name, OnLoss, QuotaSpec, RedisQuotaConfig};
use crate::error::RedisQuotaError;
use crate::grant::LinkState;
use crate::link::{is_loss, may_have_run, Link};
use crate::local::{LeaseId, Local, Timing};
use crate::pace_log::PaceLog;
use crate::resource::SharedQuota;
use crate::script::{self, Fixed, Op, Reply};
use parking_lot::Mutex;
use redis::aio::MultiplexedConnection;
use resilience_core::clock::{BootClock, Clock};
use resilience_core::sleep::{AsyncSleeper, TokioSleeper};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio::task::AbortHandle;

/// Shared-rule reports one call may send before its op is taken: the script asks again only
/// if the counts were lost again after the last report (another eviction).
const MAX_REPORTS: u32 = 3;

/// The shared-rule reports one call has sent, and what its latest reply asks for next.
#[derive(Default)]
struct Reports {
    sent: u32,
}

#[derive(Debug, PartialEq, Eq)]
enum NextStep {
    /// The op was taken (or refused): its reply is the answer.
    Done,
    /// The script asks for the report first: send it, then the op again.
    Report,
    /// Asked once more than [`MAX_REPORTS`]: the report rejoins this process, so the script
    /// asks again only if the counts were lost again meanwhile; never loop.
    GiveUp,
}

impl Reports {
    fn after(&mut self, status: i64) -> NextStep {
        if status != script::REPORT {
            NextStep::Done
        } else if self.sent == MAX_REPORTS {
            NextStep::GiveUp
        } else {
            self.sent += 1;
            NextStep::Report
        }
    }
}

/// A connection to the shared quota in Redis (G7). Cheap to clone; create resources with
/// [`resource`](Self::resource). See the [crate docs](crate).
#[derive(Clone)]
pub struct RedisQuota {
    pub(crate) inner: Arc<Inner>,
}

impl fmt::Debug for RedisQuota {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisQuota")
            .field("link", &self.inner.link)
            .field("node", &self.inner.cfg.node)
            .finish_non_exhaustive()
    }
}

pub(crate) struct Inner {
    pub cfg: RedisQuotaConfig,
    pub link: Link,
    pub clock: Arc<dyn Clock>,
    pub sleeper: Arc<dyn AsyncSleeper>,
    resources: Mutex<Vec<Arc<ResState>>>,
    /// Since when Redis has been unreachable (this host's clock), once noticed.
    outage: Mutex<Option<Duration>>,
    tasks: Mutex<Vec<AbortHandle>>,
    /// Subscribed to the resources' channels: block messages reach this process.
    listening: AtomicBool,
}

impl Drop for Inner {
    fn drop(&mut self) {
        for t in self.tasks.lock().drain(..) {
            t.abort();
        }
    }
}

/// One resource in this process.
pub(crate) struct ResState {
    pub name: Arc<str>,
    pub fixed: Fixed,
    pub local: Mutex<Local>,
    /// Woken by pub/sub when quota is returned to the pool.
    pub wake: Notify,
    /// What this process's grants counted in the shared rules, if the resource has them.
    pub pace_log: Option<Mutex<PaceLog>>,
    /// What it was opened with.
    pub spec: QuotaSpec,
}

/// A call sent and not answered yet: the acquire it makes (`acquire` units, see
/// [`Local::ask_sent`]) and the report it carries. Dropped unanswered (the caller's future
/// was cancelled), its reply will never be read: the acquire counts as lost (it may have
/// run), and the report is sent again with the next call (it may never have reached Redis;
/// twice only makes the server hold less for us). Left as it was, the report stayed "being
/// reported" for good, or was never made at all.
struct Unanswered<'a> {
    local: &'a Mutex<Local>,
    acquire: u32,
    report: u64,
    conn: u64,
}

impl Unanswered<'_> {
    /// Its reply (or error) is in: what follows settles the acquire and the report.
    fn answered(self, l: &mut Local) {
        l.ask_answered(self.acquire);
        // Defused: the drop is for a call never answered.
        std::mem::forget(self);
    }
}

impl Drop for Unanswered<'_> {
    fn drop(&mut self) {
        if self.acquire == 0 && self.report == 0 {
            return;
        }
        let mut l = self.local.lock();
        l.unreport(self.report);
        if self.acquire > 0 {
            l.ask_answered(self.acquire);
            l.lost_acquire(self.acquire, self.conn);
        }
    }
}

/// Why a call did not produce a reply.
pub(crate) enum CallError {
    /// Redis is unreachable (no connection, the connection dropped, or the server would not
    /// run scripts: loading, read-only, down). `ran`: the call may have been judged (it was
    /// written, and no answer says it was not run).
    Lost { ran: bool },
    /// Redis answered with an error.
    Server(RedisQuotaError),
}

impl RedisQuota {
    /// Connects (inside a tokio runtime), loads the script and starts the background tasks.
    /// An unreachable Redis is a [`RedisQuotaError::Connect`] naming the URL (no password).
    pub async fn connect(config: RedisQuotaConfig) -> Result<Self, RedisQuotaError> {
        Self::connect_with(
            config,
            // Counts a host's suspend: the offline deadlines must not outlive the lease.
            Arc::new(BootClock::new()),
            Arc::new(TokioSleeper),
        )
        .await
    }

    /// As [`connect`](Self::connect), with this host's clock (lease and window deadlines for
    /// offline spending) and the sleeper waits use.
    pub async fn connect_with(
        config: RedisQuotaConfig,
        clock: Arc<dyn Clock>,
        sleeper: Arc<dyn AsyncSleeper>,
    ) -> Result<Self, RedisQuotaError> {
        config.validate()?;
        let runtime =
            tokio::runtime::Handle::try_current().map_err(|_| RedisQuotaError::Config {
                field: "runtime",
                reason: "to be called inside a tokio runtime".into(),
            })?;
        let link = Link::open(&config.url, config.connect_timeout, config.io_timeout).await?;
        let inner = Arc::new(Inner {
            cfg: config,
            link,
            clock,
            sleeper,
            resources: Mutex::new(Vec::new()),
            outage: Mutex::new(None),
            tasks: Mutex::new(Vec::new()),
            listening: AtomicBool::new(false),
        });
        let weak = Arc::downgrade(&inner);
        let supervisor = runtime.spawn(crate::tasks::supervise(weak.clone()));
        let listener = runtime.spawn(crate::tasks::listen(weak));
        inner
            .tasks
            .lock()
            .extend([supervisor.abort_handle(), listener.abort_handle()]);
        // The express lane needs the subscription: a P0 call right after `connect` would
        // otherwise pay a round trip. Bounded: without it, the lane opens when it is up.
        let subscribed = async {
            while !inner.listening() {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        };
        let _ = tokio::time::timeout(inner.cfg.connect_timeout, subscribed).await;
        Ok(Self { inner })
    }

    /// The shared resource `name` (created in Redis with `spec` by its first user; later
    /// users adopt the state already there). Joins at once, so this process's reservation is
    /// set aside before it is needed; an unreachable Redis is not an error here.
    pub async fn resource(
        &self,
        name: &str,
        spec: QuotaSpec,
    ) -> Result<SharedQuota, RedisQuotaError> {
        if !valid_name(name) {
            return Err(RedisQuotaError::Config {
                field: "resource",
                reason: "a name of 1-64 of [A-Za-z0-9_.-]".into(),
            });
        }
        spec.validate()?;
        let (state, created) = {
            let mut list = self.inner.resources.lock();
            match list.iter().find(|r| &*r.name == name) {
                Some(r) if r.spec != spec => {
                    return Err(RedisQuotaError::Config {
                        field: "spec",
                        reason: format!(
                            "the spec resource `{name}` was first opened with in this \
                             process ({:?})",
                            r.spec
                        ),
                    })
                }
                Some(r) => (r.clone(), false),
                None => {
                    let cfg = &self.inner.cfg;
                    let fixed = Fixed::for_resource(cfg, name, &spec);
                    let pace_log = (fixed.pacing.as_deref())
                        .map(|p| Mutex::new(PaceLog::new(p, cfg.call_bound)));
                    let r = Arc::new(ResState {
                        name: name.into(),
                        fixed,
                        local: Mutex::new(Local::default()),
                        wake: Notify::new(),
                        pace_log,
                        spec: spec.clone(),
                    });
                    list.push(r.clone());
                    (r, true)
                }
            }
        };
        let quota = SharedQuota {
            inner: self.inner.clone(),
            state,
        };
        let error = match self.inner.call(&quota.state, Op::Renew).await {
            // The state in Redis was made with another window: this process would count
            // its quota by windows the others do not.
            Ok(r) if r.window_ms != quota.state.fixed.window_ms => {
                if created {
                    let _ = quota.leave().await;
                }
                RedisQuotaError::window_conflict(&self.inner.cfg.prefix, name, r.window_ms, &spec)
            }
            Ok(_) | Err(CallError::Lost { .. }) => return Ok(quota),
            Err(CallError::Server(e)) => e,
        };
        // A resource this call made and nobody holds: not kept (its heartbeat would join for
        // no one, and a retry with other settings would find it).
        if created {
            self.inner
                .resources
                .lock()
                .retain(|r| !Arc::ptr_eq(r, &quota.state));
        }
        Err(error)
    }

    /// Whether Redis is reachable right now, and what this process does if not.
    pub fn link_state(&self) -> LinkState {
        self.inner.link_state()
    }

    /// This process's node name in the leases.
    pub fn node(&self) -> &str {
        &self.inner.cfg.node
    }
}

pub(crate) fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Inner {
    /// Whether the pub/sub subscription is live (the express lane needs it).
    pub fn listening(&self) -> bool {
        self.listening.load(Ordering::Acquire)
    }

    pub fn set_listening(&self, on: bool) {
        self.listening.store(on, Ordering::Release);
    }

    pub fn link_state(&self) -> LinkState {
        match (self.link.is_up(), self.cfg.on_loss) {
            (true, _) => LinkState::Connected,
            (false, OnLoss::Degraded) => LinkState::Degraded,
            (false, OnLoss::FailClosed) => LinkState::Closed,
        }
    }

    pub fn resources(&self) -> Vec<Arc<ResState>> {
        self.resources.lock().clone()
    }

    /// One script call on the current connection.
    pub async fn call(&self, res: &ResState, op: Op) -> Result<Reply, CallError> {
        self.call_for(res, op, None).await
    }

    /// One script call made for a grant (or lease) of epoch `of`, if given. If this process
    /// has moved to another epoch by the time the call is made, the server must judge it
    /// under `of`: it goes with that epoch and no report, and its reply (about a lease no
    /// longer ours) is not applied. Decided under the same lock as the view, so a renewal's
    /// reply applied meanwhile cannot make a stale call pass for a current one.
    pub async fn call_for(
        &self,
        res: &ResState,
        op: Op,
        of: Option<LeaseId>,
    ) -> Result<Reply, CallError> {
        let Some((mut conn, generation)) = self.link.current() else {
            self.note_loss();
            return Err(CallError::Lost { ran: false });
        };
        self.call_on(&mut conn, generation, res, op, of).await
    }

    /// One script call on `conn`, applying the reply to the resource's local view. If Redis
    /// lost its data and asks for this process's shared-rule counts ([`script::REPORT`]),
    /// sends them first, then the op again.
    pub async fn call_on(
        &self,
        conn: &mut MultiplexedConnection,
        generation: u64,
        res: &ResState,
        op: Op,
        of: Option<LeaseId>,
    ) -> Result<Reply, CallError> {
        let mut reports = Reports::default();
        loop {
            let reply = self.call_once(conn, generation, res, &op, of).await?;
            match reports.after(reply.status) {
                NextStep::Done => return Ok(reply),
                NextStep::GiveUp => {
                    return Err(CallError::Server(self.server_error(
                        "the script asked for the shared-rule report again and again \
                         (the rule counts lost at every call?)",
                    )))
                }
                NextStep::Report => {}
            }
            // The op was not judged (the script asked for the report first): a report lost
            // on its way leaves it unjudged.
            let own = op.pending();
            let now = self.clock.now();
            let log = res
                .pace_log
                .as_ref()
                .zip(res.fixed.pacing.as_deref())
                .map(|(l, rules)| l.lock().report(rules, own, now));
            let report = Op::PaceReport {
                log: log.unwrap_or_default(),
            };
            match self.call_once(conn, generation, res, &report, None).await {
                Ok(_) => {}
                Err(CallError::Lost { .. }) => return Err(CallError::Lost { ran: false }),
                Err(e) => return Err(e),
            }
        }
    }

    async fn call_once(
        &self,
        conn: &mut MultiplexedConnection,
        generation: u64,
        res: &ResState,
        op: &Op,
        of: Option<LeaseId>,
    ) -> Result<Reply, CallError> {
        let now = self.clock.now();
        let pace_due = res
            .pace_log
            .as_ref()
            .is_some_and(|l| l.lock().due(now, op.pending()));
        let (view, report, stale, seq, unanswered) = {
            let mut l = res.local.lock();
            let stale = of.filter(|x| x.epoch != l.epoch || x.state != l.state);
            let seq = l.next_call();
            let report = if stale.is_some() { 0 } else { l.take_report() };
            if matches!(op, Op::Leave { .. }) && stale.is_none() {
                l.leave_sent(generation);
            }
            let mut view = l.view(report);
            view.pace_due = pace_due;
            // (A stale call's lease may have been spent from since: never final.)
            view.report_final = stale.is_none() && now >= l.offline_until();
            let acquire = match (op, stale) {
                (Op::Acquire { cost, .. }, None) => *cost,
                _ => 0,
            };
            l.ask_sent(acquire);
            if let Some(x) = stale {
                view.epoch = x.epoch;
                view.state = x.state;
            }
            let unanswered = Unanswered {
                local: &res.local,
                acquire,
                report,
                conn: generation,
            };
            (view, report, stale, seq, unanswered)
        };
        if stale.is_some() {
            // About a lease no longer ours: its reply changes nothing here.
            return match script::call(conn, &res.fixed, &view, op).await {
                Ok(Some(r)) => Ok(r),
                Ok(None) => Err(self.unexpected_reply()),
                Err(e) => Err(self.call_error(&e, generation)),
            };
        }
        let sent_at = self.clock.now();
        let result = script::call(conn, &res.fixed, &view, op).await;
        let timing = Timing {
            sent_at,
            recv_at: self.clock.now(),
            conn: generation,
            epoch: view.epoch,
            state: view.state,
            seq,
        };
        let mut l = res.local.lock();
        unanswered.answered(&mut l);
        match result {
            Ok(Some(reply)) if reply.status == script::REPORT => {
                // Nothing was done: the script answered before reading the report.
                l.unreport(report);
                Ok(reply)
            }
            Ok(Some(reply)) if reply.status == script::PACED_ELSEWHERE => {
                // The lease is gone: nothing is ours to spend, the express lane included.
                l.apply(&reply, timing, report, self.cfg.lease_margin);
                Err(CallError::Server(RedisQuotaError::PacedElsewhere {
                    resource: res.name.to_string(),
                }))
            }
            Ok(Some(reply)) => {
                l.apply(&reply, timing, report, self.cfg.lease_margin);
                Ok(reply)
            }
            Ok(None) => {
                l.unreport(report);
                Err(self.unexpected_reply())
            }
            Err(e) => {
                l.unreport(report);
                // Only a call that may have run may have been paid from the reservation.
                if let (true, Op::Acquire { cost, .. }) = (is_loss(&e) && may_have_run(&e), op) {
                    l.lost_acquire(*cost, generation);
                }
                drop(l);
                Err(self.call_error(&e, generation))
            }
        }
    }

    /// A failed call: a lost connection breaks the link (and notes the outage once); any
    /// other error is the server's, its text sanitized.
    fn call_error(&self, e: &redis::RedisError, generation: u64) -> CallError {
        if is_loss(e) {
            self.link.broken(generation);
            self.note_loss();
            CallError::Lost {
                ran: may_have_run(e),
            }
        } else {
            CallError::Server(self.server_error(&crate::error::clean(e)))
        }
    }

    fn unexpected_reply(&self) -> CallError {
        CallError::Server(
            self.server_error(
                "unexpected script reply (is another program using this key prefix?)",
            ),
        )
    }

    pub fn server_error(&self, message: &str) -> RedisQuotaError {
        RedisQuotaError::Server {
            url: self.link.url.clone(),
            message: message.to_owned(),
        }
    }

    /// Logs the start of an outage, once.
    pub fn note_loss(&self) {
        let mut outage = self.outage.lock();
        if outage.is_some() {
            return;
        }
        *outage = Some(self.clock.now());
        drop(outage);
        match self.cfg.on_loss {
            OnLoss::FailClosed => tracing::error!(
                url = %self.link.url,
                "shared quota: Redis unreachable; refusing every acquire until it is back (fail-closed, G7)"
            ),
            OnLoss::Degraded => {
                let shares: Vec<String> = self
                    .resources()
                    .iter()
                    .map(|r| format!("{}={}", r.name, r.local.lock().reserved()))
                    .collect();
                tracing::warn!(
                    url = %self.link.url,
                    local_shares = %shares.join(","),
                    "shared quota: Redis unreachable; degraded: each process spends only its own reservation until its lease would expire (G7)"
                );
            }
        }
    }

    /// Logs the end of an outage, once.
    pub fn note_rejoined(&self) {
        // Taken first: in an `if let`, the guard would live through the log line, and a
        // subscriber that calls back into the quota would find it locked.
        let outage = self.outage.lock().take();
        if let Some(since) = outage {
            let secs = self.clock.now().saturating_sub(since).as_secs_f64();
            tracing::info!(url = %self.link.url, outage_s = secs, "shared quota: Redis is back; rejoined (G7)");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cancelled call (its future dropped before the reply was read): its acquire may
    /// have run, so it stays out of the offline share as a lost one (until a reply on a newer
    /// connection), and its report goes out again with the next call.
    #[test]
    fn g7_a_call_dropped_in_flight_reports_again_and_counts_its_acquire_as_lost() {
        let local = Mutex::new(Local::default());
        let report = {
            let mut l = local.lock();
            l.offline_unreported = 4;
            l.ask_sent(3);
            l.take_report()
        };
        assert_eq!(report, 4);
        drop(Unanswered {
            local: &local,
            acquire: 3,
            report,
            conn: 1,
        });
        let mut l = local.lock();
        assert_eq!(l.in_flight_and_lost(), (0, 3));
        assert_eq!(l.take_report(), 4);
    }

    #[test]
    fn g7_a_call_sends_at_most_max_reports_then_fails_instead_of_looping() {
        let mut r = Reports::default();
        let steps: Vec<_> = (0..5).map(|_| r.after(script::REPORT)).collect();
        assert_eq!(
            steps,
            [
                NextStep::Report,
                NextStep::Report,
                NextStep::Report,
                NextStep::GiveUp,
                NextStep::GiveUp
            ]
        );
    }

    #[test]
    fn g7_a_reply_other_than_report_ends_the_call_whatever_was_sent() {
        let mut r = Reports::default();
        assert_eq!(r.after(script::REPORT), NextStep::Report);
        assert_eq!(r.after(script::PACED_ELSEWHERE), NextStep::Done);
        assert_eq!(Reports::default().after(script::GO), NextStep::Done);
    }
}
