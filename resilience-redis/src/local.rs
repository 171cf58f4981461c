//! This process's view of one shared resource: its lease and epoch, what it may spend
//! offline, and the deadlines (on this host's boot clock, suspend included) that keep offline spending
//! safe. Pure logic, no I/O.
//!
//! Conservative by construction: a deadline derived from a reply starts at the moment the
//! request was *sent* (the server's lease and window began no earlier), a block ends at the
//! moment the reply was *received* plus what was left of it (it ends no earlier), and a
//! reservation is counted net of everything that may have been spent from it without a reply.

use crate::script::{Reply, View};
use std::time::Duration;

/// A reply's timing on this host's clock.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timing {
    pub sent_at: Duration,
    pub recv_at: Duration,
    /// Connection generation the request went out on.
    pub conn: u64,
    /// The lease epoch the request carried.
    pub epoch: u64,
    /// The state the request named (its view's), and its place in this resource's calls.
    pub state: u64,
    pub seq: u64,
}

/// The lease a call is made under: its epoch, and the state (its id) the epoch belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LeaseId {
    pub epoch: u64,
    pub state: u64,
}

/// The epoch a process names for a lease of a state Redis has lost: below every state's
/// base, so the script reads it as such (never as one of the new state's leases).
pub(crate) const LOST_LEASE: u64 = 1;

/// A window end read in a response while cut off ([`Local::hear_reset`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeardEnd {
    /// An epoch header (unix ms, upstream's clock, which the script compares resets with).
    Epoch(u64),
    /// A delta from when it was read: this clock's time.
    At(Duration),
}

/// Why an offline acquire was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OfflineRefusal {
    /// Blocked (G6) until this long from now.
    Blocked(Duration),
    /// No lease, the lease would have expired, the window ended, or the share is spent.
    NoShare,
}

#[derive(Debug, Default)]
pub(crate) struct Local {
    /// G4 sequential mode is on (as of the newest reply): the express lane stays shut.
    pub sequential: bool,
    pub epoch: u64,
    pub window: u64,
    pub ops: u64,
    /// The id of the state the newest reply came from, and the call (by `Timing::seq`) whose
    /// reply brought it. Replies are ordered by `ops` only within one state: a new one (Redis
    /// lost its data) may count from lower numbers, if its host's clock is behind.
    pub state: u64,
    state_call: u64,
    /// The states this process has seen replaced (the latest few): a state Redis replaced
    /// never comes back, so a reply of one is late, whatever its call's number (calls are
    /// numbered before they are written, and a connection may outlive a data loss).
    replaced: [u64; 4],
    /// Calls sent so far (`Timing::seq`).
    calls: u64,
    pub limit: u64,
    pub window_ms: u64,
    pub reset_at_ms: u64,
    pub pool: u64,
    pub members: u64,
    pub held: u64,
    pub reserved_total: u64,
    /// The reservation as the server last reported it, and the `ops` of that reply: replies
    /// about one lease are ordered by it, even those older than the newest reply applied.
    server_reserved: u64,
    reserved_ops: u64,
    /// The window of the reply that set it. A reservation of a window that has ended is
    /// void (the server zeroed it at the roll): a reply judged before the roll, applied
    /// beside a newer one of the next window that named no lease, left it spendable offline
    /// while this process's calls said it had heard of the roll.
    reserved_window: u64,
    /// Spent offline and not yet reported.
    pub offline_unreported: u64,
    /// Spent offline, reported by a call whose reply has not come back.
    reporting: u64,
    /// Bumped when offline spending goes out in a report: older offline grants can no longer
    /// be returned locally.
    pub offline_gen: u64,
    /// Acquires whose reply was lost: the server may have paid them from the reservation.
    uncertain: u64,
    /// Acquires sent and not answered yet: the server may pay them from the reservation, and
    /// their reply still come and be used after the link was given up for lost (review
    /// (spent offline too, 105 of 100).
    asking: u64,
    uncertain_conn: u64,
    lease_until: Duration,
    window_until: Duration,
    /// The earliest window end read in a response while cut off, until it passes: the
    /// server may not know it (the header never reached it), so no reply sets a later end
    /// while it stands, and the view sent after a data loss says it. Clock time (taken a
    /// second early, for the header's rounding), and on the server's clock (as read, if a
    /// reply told the server's time).
    heard_reset: Option<(Duration, Option<u64>)>,
    /// The server's time in the newest reply, and when its call was sent: converts this
    /// process's clock to the server's (no earlier than the server's).
    server_clock: Option<(u64, Duration)>,
    block_until: Duration,
    /// The server's grant counter in the newest reply: an express grant's reading is
    /// reconciled from there (an older position only makes the reading count for less).
    pub ledger: u64,
    /// Units granted and not yet settled at the newest reply: an express grant's reading
    /// may not count them.
    pub in_flight: u64,
    /// When a block message from another process was heard and no reply sent since has
    /// said how long the block lasts: the express lane stays shut meanwhile.
    block_heard: Option<Duration>,
    /// The lease is being given up: the express lane stays shut until a new lease, so the
    /// `leave` call's report holds everything the lane spent (the server returns the whole
    /// reservation on leave).
    leaving: bool,
    /// The connection the `leave` went out on (`None`: not sent). A reply on a newer one
    /// that still names this lease shows the server settled the leave without ending it
    /// (its reply was lost before it ran): the lease is ours again.
    leave_conn: Option<u64>,
    /// The epoch of the lease the server last said had ended (fenced, or refused for want of
    /// the shared rules): a reply sent before that one, applied after it, names the lease
    /// but must not give it back. Epochs never repeat, so the lease cannot come back.
    ended_epoch: u64,
    /// G6: hintless secondary limits in a row this process saw, for its blocks while Redis is
    /// unreachable (the server counts every process's).
    pub strikes: u32,
}

impl Local {
    /// What this process may still spend offline.
    pub fn reserved(&self) -> u64 {
        self.unasked_reserve().saturating_sub(self.asking)
    }

    /// [`reserved`](Self::reserved), before the acquires still in flight.
    fn unasked_reserve(&self) -> u64 {
        if self.reserved_window != self.window {
            return 0;
        }
        self.server_reserved
            .saturating_sub(self.offline_unreported)
            .saturating_sub(self.reporting)
            .saturating_sub(self.uncertain)
    }

    /// Acquires in flight, and lost ones (units).
    #[cfg(test)]
    pub fn in_flight_and_lost(&self) -> (u64, u64) {
        (self.asking, self.uncertain)
    }

    /// An acquire of `cost` goes out.
    pub fn ask_sent(&mut self, cost: u32) {
        self.asking = self.asking.saturating_add(u64::from(cost));
    }

    /// An acquire of `cost` was answered, or failed (then [`lost_acquire`](Self::lost_acquire)
    /// if it may have run).
    pub fn ask_answered(&mut self, cost: u32) {
        self.asking = self.asking.saturating_sub(u64::from(cost));
    }

    /// Moves the unreported offline spending into a report for the next call.
    pub fn take_report(&mut self) -> u64 {
        let x = std::mem::take(&mut self.offline_unreported);
        if x > 0 {
            self.reporting += x;
            self.offline_gen += 1;
        }
        x
    }

    /// The call carrying a report failed: report it again later (reporting twice only makes
    /// the server hold less for us).
    pub fn unreport(&mut self, x: u64) {
        self.reporting = self.reporting.saturating_sub(x);
        self.offline_unreported += x;
    }

    /// What this process knows, sent with a call (`offline_spent` is the report).
    pub fn view(&self, report: u64) -> View {
        View {
            state: self.state,
            epoch: self.epoch,
            reset_at_ms: match self.heard_reset {
                Some((_, Some(end))) if self.reset_at_ms == 0 || end < self.reset_at_ms => end,
                _ => self.reset_at_ms,
            },
            pool: self.pool,
            members: self.members,
            offline_spent: report,
            // Leaving, the lease may be retired and its reservation back in the pool (the
            // leave's reply lost): a rebuild must not give it back.
            local_reserved: if self.leaving { 0 } else { self.reserved() },
            pace_due: false,
            ops: self.ops,
            gone: self.replaced,
            report_final: false,
            sequential: self.sequential,
        }
    }

    /// Numbers a call, in the order calls are sent.
    pub fn next_call(&mut self) -> u64 {
        self.calls += 1;
        self.calls
    }

    /// The lease calls are made under now.
    pub fn lease(&self) -> LeaseId {
        LeaseId {
            epoch: self.epoch,
            state: self.state,
        }
    }

    /// Until when (local clock) offline spending is allowed.
    pub fn offline_until(&self) -> Duration {
        self.lease_until.min(self.window_until)
    }

    /// Applies a reply. `reported` is the offline spending the request reported.
    pub fn apply(&mut self, r: &Reply, t: Timing, reported: u64, margin: Duration) {
        // The server settled the report, whatever order replies arrive in.
        self.reporting = self.reporting.saturating_sub(reported);
        if r.state != self.state {
            if self.replaced.contains(&r.state) || (self.state != 0 && t.seq < self.state_call) {
                // From a state replaced before this call's reply came: one seen replaced, or
                // one never seen, by a call sent before the one that brought the newest
                // state (older than it, then). Its report is not sent again: that spending
                // came from the lost lease's reservation, which is outside every pool this
                // process saw (its rejoin rebuilds from them). Reported to the new state, it
                // was charged to the new lease's reservation: quota lost.
                return;
            }
            self.new_state(r.state, t.seq);
        }
        // The epoch the call named, if it is of this reply's state.
        let named = if t.state == r.state { t.epoch } else { 0 };
        if r.status == crate::script::FENCED || r.status == crate::script::PACED_ELSEWHERE {
            if r.status == crate::script::FENCED {
                // Only a current lease settles a report: this one goes out again with the
                // next call (reporting twice only makes the server hold less for us).
                self.offline_unreported += reported;
            }
            // The lease that ended: the one the call named, or (a refusal) the node's lease
            // it ended, which may be newer (made by a renewal racing this call).
            let ended = named.max(r.epoch);
            if ended < self.epoch {
                // About a lease this process has already replaced: the new lease stands.
                return;
            }
            // Nothing is ours to spend until a new lease is granted. The reply's ops are
            // not taken: a reply judged before it may still bring a newer lease; one naming
            // an ended lease never gives it back (`ended_epoch`).
            self.server_reserved = 0;
            self.lease_until = Duration::ZERO;
            self.ended_epoch = self.ended_epoch.max(ended);
            if ended > self.epoch {
                // A refusal that ended a lease this process never heard of: its next calls
                // name it, so the server settles what it holds back for that lease from
                // their reports (`take_held`). Named by the older epoch, it stayed held
                // until the window ended.
                self.epoch = ended;
            }
            return;
        }
        // Epochs only grow: a lease no newer than one that ended is gone too.
        let ended = r.epoch != 0 && r.epoch <= self.ended_epoch;
        if t.conn > self.uncertain_conn {
            // Lost replies went out on an older connection, closed before this one opened:
            // the server has settled them, and this reply counts them. (Not on a new lease
            // or window: a lost acquire judged after the renewal that made them is paid
            // from them.)
            self.uncertain = 0;
        }
        if r.epoch > self.epoch && !ended && r.ops <= self.ops {
            // A new lease in a reply judged before the newest one applied, which, sent under
            // the old epoch (a snapshot, a release), could not name it. Only calls whose
            // reply names a lease change its reservation, so this one is the newest word on
            // it; the rest of the reply is older than what this process knows.
            self.lease_until = Duration::ZERO;
            self.epoch = r.epoch;
            self.leaving = false;
            self.server_reserved = r.reserved;
            self.reserved_ops = r.ops;
            self.reserved_window = r.window;
        } else if r.epoch == self.epoch
            && r.epoch != 0
            && !ended
            && r.ops <= self.ops
            && r.ops > self.reserved_ops
        {
            // About our lease, judged after the reply that last set its reservation, though
            // before the newest one applied (which named no lease, or an older one): the
            // newest word on it. Dropped (as it was), a reply that set up
            // the lease, applied after a snapshot, left a reservation the server had since
            // paid from.
            self.server_reserved = r.reserved;
            self.reserved_ops = r.ops;
            self.reserved_window = r.window;
        }
        if r.ops > self.ops {
            // Under a lease lost with its state, a reply naming none of the new state (a
            // snapshot, a block) leaves the lost state's reset, pool and members in the view:
            // this process's rejoin rebuilds the window from them. Replaced by the new
            // state's own numbers, the rebuild took those for the newest view (review
            // (a pool of 1000 against the 100 this process had read).
            let lost_view = self.epoch == LOST_LEASE && r.epoch == 0;
            if r.epoch != 0 && r.epoch != self.epoch {
                self.lease_until = Duration::ZERO;
                self.epoch = r.epoch;
                self.leaving = false;
            }
            if r.window != self.window {
                // Offline spending not yet reported is still reported: it may have been
                // spent past a reset this process was not told of, in this window (the
                // server takes it from what it carried over for that, or this window).
                self.window = r.window;
            }
            self.ops = r.ops;
            self.sequential = r.sequential;
            self.ledger = r.ledger;
            self.in_flight = r.in_flight;
            let reserved = match r.epoch {
                // Sent under an older epoch than ours: it says nothing of our lease.
                0 if named < self.epoch => None,
                0 => Some(0),
                _ if ended => Some(0),
                _ => Some(r.reserved),
            };
            if let Some(reserved) = reserved {
                self.server_reserved = reserved;
                self.reserved_ops = r.ops;
                self.reserved_window = r.window;
            }
            self.limit = r.limit;
            self.window_ms = r.window_ms;
            if !lost_view {
                self.reset_at_ms = r.reset_at_ms;
                self.pool = r.pool;
                self.members = r.members;
            }
            self.held = r.held;
            self.reserved_total = r.reserved_total;
            let to_reset = if r.reset_at_ms > 0 {
                r.reset_at_ms.saturating_sub(r.now_ms)
            } else {
                // Not anchored yet: it ends no earlier than a full window from now.
                r.window_ms
            };
            self.window_until = t.sent_at + Duration::from_millis(to_reset);
            self.server_clock = Some((r.now_ms, t.sent_at));
            match self.heard_reset {
                Some((heard, _)) if heard > t.recv_at => {
                    self.window_until = self.window_until.min(heard);
                }
                _ => self.heard_reset = None,
            }
            let block = r.block_until_ms.saturating_sub(r.now_ms);
            self.block_until = self
                .block_until
                .max(t.recv_at + Duration::from_millis(block));
            if self.block_heard.is_some_and(|heard| t.sent_at > heard) {
                // Judged after the block was set, and its end just learned (a fenced or
                // older reply, which teaches nothing, leaves the lane shut).
                self.block_heard = None;
            }
        }
        if self.leaving
            && r.epoch != 0
            && r.epoch == self.epoch
            && self.leave_conn.is_some_and(|g| t.conn > g)
        {
            self.leaving = false;
            self.leave_conn = None;
        }
        if r.epoch != 0 && r.epoch == self.epoch && !ended {
            // The lease was renewed no earlier than the request was sent.
            let left = Duration::from_millis(r.lease_left_ms);
            let until = (t.sent_at + left).saturating_sub(margin);
            self.lease_until = self.lease_until.max(until);
        }
    }

    /// A reply from another state than the newest one's: Redis lost its data (the script
    /// rebuilt what it could from the processes' views). The lease this process held is of
    /// the lost state: named as such ([`LOST_LEASE`]) until a new one is granted, nothing
    /// of it to spend. The new state's counters start over, maybe below the old ones.
    fn new_state(&mut self, state: u64, call: u64) {
        if self.state != 0 && self.epoch != 0 {
            self.epoch = LOST_LEASE;
            self.server_reserved = 0;
            self.lease_until = Duration::ZERO;
        }
        if self.state != 0 {
            self.replaced.rotate_right(1);
            self.replaced[0] = self.state;
        }
        self.state = state;
        self.state_call = call;
        self.ops = 0;
        self.reserved_ops = 0;
        self.ended_epoch = 0;
    }

    /// A call whose reply never came.
    pub fn lost_acquire(&mut self, cost: u32, conn: u64) {
        self.uncertain = self.uncertain.saturating_add(u64::from(cost));
        self.uncertain_conn = self.uncertain_conn.max(conn);
    }

    /// Spends `cost` of the reservation without Redis; returns the offline generation.
    /// Not within the window's last `call_bound`: such a call may reach upstream after the
    /// reset and count in the next window, which the server, not hearing of it, gives out
    /// whole (it counts the calls it granted that are still on their way, not these).
    pub fn offline_acquire(
        &mut self,
        cost: u32,
        now: Duration,
        call_bound: Duration,
    ) -> Result<u64, OfflineRefusal> {
        if now + call_bound >= self.window_until {
            return Err(OfflineRefusal::NoShare);
        }
        let share = self.reserved();
        self.spend(cost, now, share)
    }

    /// Spends `cost` of `share` without Redis.
    fn spend(&mut self, cost: u32, now: Duration, share: u64) -> Result<u64, OfflineRefusal> {
        if now < self.block_until {
            return Err(OfflineRefusal::Blocked(self.block_until - now));
        }
        // Leaving: the server may have taken the leave and returned the reservation to the
        // pool even if its reply was lost.
        if self.epoch == 0 || self.leaving || now >= self.offline_until() || share < u64::from(cost)
        {
            return Err(OfflineRefusal::NoShare);
        }
        self.offline_unreported += u64::from(cost);
        Ok(self.offline_gen)
    }

    /// The express lane: spends `cost` of the reservation while connected, to be reported
    /// with the next call. Refused while a block is known or only heard of, past the
    /// allowance of unsettled spending (so a dead process's hold stays small), and whenever
    /// an offline acquire would be (no lease, lease or window about to end, share spent).
    pub fn express_acquire(&mut self, cost: u32, now: Duration, allowance: u64) -> Option<u64> {
        let unsettled = self.offline_unreported + self.reporting + u64::from(cost);
        // An unanchored window has no reset to account the grant to yet, and a ledger of 0
        // would read as "no grant" to the script, which then takes the grant's reading as
        // current (it may predate grants of other processes).
        if self.block_heard.is_some()
            || self.sequential
            || self.leaving
            || unsettled > allowance
            || self.reset_at_ms == 0
            || self.ledger == 0
        {
            return None;
        }
        // The script never pays an acquire from the last `keep` of the reservation, all the
        // lane spends: acquires in flight need not be counted here.
        let share = self.unasked_reserve();
        self.spend(cost, now, share).ok()
    }

    /// Shuts the express lane until a new lease: call before sending `leave`.
    /// The lease was given up and no new one started: nothing to renew.
    pub fn is_leaving(&self) -> bool {
        self.leaving
    }

    pub fn start_leaving(&mut self) {
        self.leaving = true;
        self.leave_conn = None;
    }

    /// The `leave` goes out on connection `conn`.
    pub fn leave_sent(&mut self, conn: u64) {
        self.leave_conn = Some(conn);
    }

    /// The `leave` could not be sent (no connection): the lease stays ours.
    pub fn leave_unsent(&mut self) {
        if self.leave_conn.is_none() {
            self.leaving = false;
        }
    }

    /// Another process set or extended a block (pub/sub): shut the express lane until a
    /// reply to a request sent after `now` says how long it lasts.
    pub fn heard_block(&mut self, now: Duration) {
        self.block_heard = Some(self.block_heard.map_or(now, |t| t.max(now)));
    }

    /// Returns an unused offline grant, if its spending has not been reported yet.
    pub fn offline_release(&mut self, cost: u32, gen: u64, window: u64) {
        if gen == self.offline_gen && window == self.window {
            self.offline_unreported = self.offline_unreported.saturating_sub(u64::from(cost));
        }
    }

    /// A response read while offline says the window ends at `until`: if that is earlier than
    /// the end this process was told, offline spending stops a call bound before it. (A
    /// reset header moved earlier while this process was cut off, or one Redis lost with its
    /// data, is otherwise unknown here, and spending past it counts in the next window,
    /// which the server gives out whole.) Never later: a later header may be the next
    /// window's. `end` is the end as read; `until` is it taken early for the header's
    /// rounding. It stands until it passes: a reply (even one to a call sent before it was
    /// heard) sets no later end. The view says `end` as the server reads resets (a rebuild
    /// takes it as the window's reset: early, it would roll before upstream): an epoch
    /// header as read, as the script takes it; a delta from now on the server's clock.
    pub fn hear_reset(&mut self, until: Duration, end: HeardEnd) {
        self.window_until = self.window_until.min(until);
        if self.heard_reset.is_none_or(|(heard, _)| until < heard) {
            let on_server = match end {
                HeardEnd::Epoch(ms) => Some(ms),
                HeardEnd::At(end) => self.server_clock.map(|(server_ms, sent_at)| {
                    let ahead = u64::try_from(end.saturating_sub(sent_at).as_millis());
                    server_ms.saturating_add(ahead.unwrap_or(u64::MAX))
                }),
            };
            self.heard_reset = Some((until, on_server));
        }
    }

    /// G6 while offline: extends the local block.
    pub fn block_locally(&mut self, until: Duration) {
        self.block_until = self.block_until.max(until);
    }

    /// Time left in the block, if any.
    pub fn blocked_for(&self, now: Duration) -> Option<Duration> {
        (now < self.block_until).then(|| self.block_until - now)
    }
}

#[cfg(test)]
#[path = "local_tests.rs"]
mod tests;
