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
    /// Calls sent so far (`Timing::seq`).
    calls: u64,
    pub limit: u64,
    pub window_ms: u64,
    pub reset_at_ms: u64,
    pub pool: u64,
    pub members: u64,
    pub held: u64,
    pub reserved_total: u64,
    /// The reservation as the server last reported it.
    server_reserved: u64,
    /// Spent offline and not yet reported.
    pub offline_unreported: u64,
    /// Spent offline, reported by a call whose reply has not come back.
    reporting: u64,
    /// Bumped when offline spending goes out in a report: older offline grants can no longer
    /// be returned locally.
    pub offline_gen: u64,
    /// Acquires whose reply was lost: the server may have paid them from the reservation.
    uncertain: u64,
    uncertain_conn: u64,
    lease_until: Duration,
    window_until: Duration,
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
        self.server_reserved
            .saturating_sub(self.offline_unreported)
            .saturating_sub(self.reporting)
            .saturating_sub(self.uncertain)
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
            reset_at_ms: self.reset_at_ms,
            pool: self.pool,
            members: self.members,
            offline_spent: report,
            local_reserved: self.reserved(),
            pace_due: false,
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
            if self.state != 0 && t.seq < self.state_call {
                // From a state replaced before this call's reply came: a call sent before
                // the one that brought the newest state (calls on one connection run in the
                // order sent; a connection closes before the next opens).
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
        }
        if r.ops > self.ops {
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
            self.server_reserved = match r.epoch {
                // Sent under an older epoch than ours: it says nothing of our lease.
                0 if named < self.epoch => self.server_reserved,
                0 => 0,
                _ if ended => 0,
                _ => r.reserved,
            };
            self.limit = r.limit;
            self.window_ms = r.window_ms;
            self.reset_at_ms = r.reset_at_ms;
            self.pool = r.pool;
            self.members = r.members;
            self.held = r.held;
            self.reserved_total = r.reserved_total;
            let to_reset = if r.reset_at_ms > 0 {
                r.reset_at_ms.saturating_sub(r.now_ms)
            } else {
                // Not anchored yet: it ends no earlier than a full window from now.
                r.window_ms
            };
            self.window_until = t.sent_at + Duration::from_millis(to_reset);
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
        self.state = state;
        self.state_call = call;
        self.ops = 0;
        self.ended_epoch = 0;
    }

    /// A call whose reply never came.
    pub fn lost_acquire(&mut self, cost: u32, conn: u64) {
        self.uncertain = self.uncertain.saturating_add(u64::from(cost));
        self.uncertain_conn = self.uncertain_conn.max(conn);
    }

    /// Spends `cost` of the reservation without Redis; returns the offline generation.
    pub fn offline_acquire(&mut self, cost: u32, now: Duration) -> Result<u64, OfflineRefusal> {
        if now < self.block_until {
            return Err(OfflineRefusal::Blocked(self.block_until - now));
        }
        // Leaving: the server may have taken the leave and returned the reservation to the
        // pool even if its reply was lost.
        if self.epoch == 0
            || self.leaving
            || now >= self.offline_until()
            || self.reserved() < u64::from(cost)
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
        self.offline_acquire(cost, now).ok()
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
mod tests {
    use super::*;
    use crate::script::GO;
    use resilience_core::clock::{Clock, ManualClock};

    const TTL: Duration = Duration::from_secs(10);
    const MARGIN: Duration = Duration::from_millis(250);
    /// The one state these tests' replies come from (`local_state_tests.rs`: several).
    const STATE: u64 = 77;

    fn reply(ops: u64, epoch: u64, reserved: u64) -> Reply {
        Reply {
            status: GO,
            epoch,
            window: 7,
            reserved,
            ops,
            limit: 100,
            window_ms: 60_000,
            reset_at_ms: 1_000_000 + 30_000,
            now_ms: 1_000_000,
            lease_left_ms: 10_000,
            ledger: 40,
            state: STATE,
            ..Reply::default()
        }
    }

    fn at(clock: &ManualClock, conn: u64) -> Timing {
        Timing {
            sent_at: clock.now(),
            recv_at: clock.now(),
            conn,
            epoch: 5,
            state: STATE,
            seq: 0,
        }
    }

    /// A reply sent before the one that ended the lease (fenced, or refused for want of the
    /// shared rules), applied after it, does not reopen the express lane.
    #[test]
    fn g7_a_reply_older_than_the_end_of_the_lease_does_not_reopen_the_lane() {
        for ended in [crate::script::FENCED, crate::script::PACED_ELSEWHERE] {
            let clock = ManualClock::new();
            let mut l = Local::default();
            l.apply(&reply(3, 5, 20), at(&clock, 1), 0, MARGIN);
            assert!(l.express_acquire(1, clock.now(), 8).is_some());
            let end = Reply {
                status: ended,
                ..reply(5, 0, 0)
            };
            l.apply(&end, at(&clock, 1), 0, MARGIN);
            l.apply(&reply(4, 5, 20), at(&clock, 1), 0, MARGIN);
            assert!(
                l.express_acquire(1, clock.now(), 8).is_none(),
                "status {ended}"
            );
        }
    }

    /// A reply sent under the old epoch and judged after the renewal that made the new
    /// lease (a snapshot: no lease named) does not hide that renewal's reply, in either
    /// order (review helper-33 #2).
    #[test]
    fn g7_a_reply_naming_no_lease_does_not_hide_the_new_one() {
        let stale = Reply {
            status: GO,
            ..reply(13, 0, 0)
        };
        for stale_first in [true, false] {
            let clock = ManualClock::new();
            let mut l = Local::default();
            l.apply(&reply(10, 5, 20), at(&clock, 1), 0, MARGIN);
            if stale_first {
                l.apply(&stale, at(&clock, 1), 0, MARGIN);
                l.apply(&reply(12, 6, 20), at(&clock, 1), 0, MARGIN);
            } else {
                l.apply(&reply(12, 6, 20), at(&clock, 1), 0, MARGIN);
                l.apply(&stale, at(&clock, 1), 0, MARGIN);
            }
            assert_eq!(
                (l.epoch, l.reserved()),
                (6, 20),
                "stale first: {stale_first}"
            );
        }
    }

    /// A refusal that ended the node's newer lease (made by a renewal racing it), applied
    /// before that renewal's reply, leaves nothing to spend (review helper-33 #4), and later
    /// calls name it, so the server settles what it held back for it.
    #[test]
    fn g7_a_refusal_ending_a_newer_lease_keeps_it_ended_and_names_it() {
        let clock = ManualClock::new();
        let mut l = Local::default();
        l.apply(&reply(10, 5, 20), at(&clock, 1), 0, MARGIN);
        let refusal = Reply {
            status: crate::script::PACED_ELSEWHERE,
            ..reply(14, 6, 0)
        };
        l.apply(&refusal, at(&clock, 1), 0, MARGIN);
        // The next calls name the ended lease (review helper-34).
        assert_eq!(l.view(0).epoch, 6);
        l.apply(&reply(12, 6, 20), at(&clock, 1), 0, MARGIN);
        assert_eq!(l.reserved(), 0);
        assert!(l.express_acquire(1, clock.now(), 8).is_none());
        assert!(l.offline_acquire(1, clock.now()).is_err());
        assert_eq!(l.view(0).epoch, 6);
    }

    /// Only a current lease settles a report: a fenced call's goes out again (review
    /// helper-33 #6).
    #[test]
    fn g7_a_fenced_calls_report_is_reported_again() {
        let clock = ManualClock::new();
        let mut l = Local::default();
        l.apply(&reply(10, 5, 20), at(&clock, 1), 0, MARGIN);
        l.offline_acquire(4, clock.now()).expect("offline");
        let report = l.take_report();
        assert_eq!(report, 4);
        let fenced = Reply {
            status: crate::script::FENCED,
            ..reply(11, 0, 0)
        };
        l.apply(&fenced, at(&clock, 1), report, MARGIN);
        assert_eq!(l.take_report(), 4);
    }

    /// A lost acquire sent under the old epoch may be judged after the renewal that made the
    /// new lease, and paid from it: a reply on the same connection naming the new lease
    /// does not clear it (review helper-33 #5).
    #[test]
    fn g7_a_lost_acquire_stays_counted_across_a_new_lease_on_the_same_connection() {
        let clock = ManualClock::new();
        let mut l = Local::default();
        l.apply(&reply(10, 5, 20), at(&clock, 1), 0, MARGIN);
        l.lost_acquire(4, 1);
        l.apply(&reply(11, 6, 20), at(&clock, 1), 0, MARGIN);
        assert_eq!(l.reserved(), 16);
        l.apply(&reply(12, 6, 20), at(&clock, 2), 0, MARGIN);
        assert_eq!(l.reserved(), 20);
    }

    /// A renewal racing a call of the ended lease: the server judged the renewal first (a
    /// new lease, epoch 6) and the call after it (fenced). Whichever reply is applied first,
    /// the process ends up on the new lease.
    #[test]
    fn g7_a_new_lease_survives_the_fenced_reply_of_the_old_one_in_either_order() {
        let fenced = Reply {
            status: crate::script::FENCED,
            ..reply(13, 0, 0)
        };
        let old = |clock: &ManualClock| Timing {
            epoch: 5,
            ..at(clock, 1)
        };
        for fenced_first in [true, false] {
            let clock = ManualClock::new();
            let mut l = Local::default();
            l.apply(&reply(10, 5, 20), old(&clock), 0, MARGIN);
            if fenced_first {
                l.apply(&fenced, old(&clock), 0, MARGIN);
                l.apply(&reply(12, 6, 20), old(&clock), 0, MARGIN);
            } else {
                l.apply(&reply(12, 6, 20), old(&clock), 0, MARGIN);
                l.apply(&fenced, old(&clock), 0, MARGIN);
            }
            assert_eq!(l.epoch, 6, "fenced first: {fenced_first}");
            assert_eq!(l.reserved(), 20, "fenced first: {fenced_first}");
            assert!(
                l.express_acquire(1, clock.now(), 8).is_some(),
                "fenced first: {fenced_first}"
            );
        }
    }

    #[test]
    fn g7_express_lane_spends_within_its_allowance_and_reopens_once_the_report_is_settled() {
        let clock = ManualClock::new();
        let mut l = Local::default();
        l.apply(&reply(10, 5, 20), at(&clock, 1), 0, MARGIN);
        for _ in 0..4 {
            assert!(l.express_acquire(2, clock.now(), 8).is_some());
        }
        // 8 unsettled: the next one must ask Redis (and carry the report).
        assert_eq!(l.express_acquire(1, clock.now(), 8), None);
        assert_eq!(l.reserved(), 12);
        let report = l.take_report();
        assert_eq!(report, 8);
        assert_eq!(
            l.express_acquire(1, clock.now(), 8),
            None,
            "a report in flight is still unsettled"
        );
        // The server settled it: 20 - 8 left.
        l.apply(&reply(11, 5, 12), at(&clock, 1), report, MARGIN);
        assert!(l.express_acquire(1, clock.now(), 8).is_some());
        assert_eq!(l.reserved(), 11);
    }

    #[test]
    fn g7_express_lane_shuts_on_a_heard_block_until_a_reply_sent_after_it() {
        let clock = ManualClock::new();
        let mut l = Local::default();
        l.apply(&reply(10, 5, 20), at(&clock, 1), 0, MARGIN);
        let before = at(&clock, 1); // a request already on its way
        clock.advance(Duration::from_millis(5));
        l.heard_block(clock.now());
        assert_eq!(l.express_acquire(1, clock.now(), 8), None);
        // Its reply may predate the block: the lane stays shut.
        l.apply(&reply(11, 5, 20), before, 0, MARGIN);
        assert_eq!(l.express_acquire(1, clock.now(), 8), None);
        // A fenced reply, however late it was sent, teaches nothing about the block.
        let mut fenced = reply(12, 5, 20);
        fenced.status = crate::script::FENCED;
        clock.advance(Duration::from_millis(1));
        l.apply(&fenced, at(&clock, 1), 0, MARGIN);
        // A join sent before the block, processed before it, answered after: a new lease and
        // no block in it. The lane must stay shut.
        l.apply(&reply(12, 6, 20), before, 0, MARGIN);
        assert_eq!(l.express_acquire(1, clock.now(), 8), None);
        clock.advance(Duration::from_millis(1));
        let mut blocked = reply(13, 6, 20);
        blocked.block_until_ms = blocked.now_ms + 3_000;
        l.apply(&blocked, at(&clock, 1), 0, MARGIN);
        // Now the block is known: still shut, until it ends.
        assert_eq!(l.express_acquire(1, clock.now(), 8), None);
        clock.advance(Duration::from_secs(3));
        assert!(l.express_acquire(1, clock.now(), 8).is_some());
    }

    #[test]
    fn g7_express_lane_needs_an_anchored_window_and_a_lease() {
        let clock = ManualClock::new();
        let mut l = Local::default();
        assert_eq!(l.express_acquire(1, clock.now(), 8), None, "no lease yet");
        let mut unanchored = reply(10, 5, 20);
        unanchored.reset_at_ms = 0;
        l.apply(&unanchored, at(&clock, 1), 0, MARGIN);
        assert_eq!(l.express_acquire(1, clock.now(), 8), None);
        let mut no_grant_yet = reply(11, 5, 20);
        no_grant_yet.ledger = 0; // would read as "no grant" in the script's reconciliation
        l.apply(&no_grant_yet, at(&clock, 1), 0, MARGIN);
        assert_eq!(l.express_acquire(1, clock.now(), 8), None);
        l.apply(&reply(12, 5, 20), at(&clock, 1), 0, MARGIN);
        assert!(l.express_acquire(1, clock.now(), 8).is_some());
        clock.advance(TTL);
        assert_eq!(l.express_acquire(1, clock.now(), 8), None, "lease ran out");
    }

    #[test]
    fn g7_express_lane_is_shut_from_leaving_until_a_new_lease() {
        let clock = ManualClock::new();
        let mut l = Local::default();
        l.apply(&reply(10, 5, 20), at(&clock, 1), 0, MARGIN);
        l.start_leaving();
        // The leave is in flight: the server will return the whole reservation, so nothing
        // may be spent that its report does not carry.
        assert_eq!(l.express_acquire(1, clock.now(), 8), None);
        l.apply(&reply(11, 5, 20), at(&clock, 1), 0, MARGIN);
        assert_eq!(l.express_acquire(1, clock.now(), 8), None);
        l.apply(&reply(12, 6, 20), at(&clock, 1), 0, MARGIN); // rejoined: a new lease
        assert!(l.express_acquire(1, clock.now(), 8).is_some());
    }

    #[test]
    fn g7_a_leave_whose_reply_was_lost_leaves_nothing_to_spend_offline() {
        let clock = ManualClock::new();
        let mut l = Local::default();
        l.apply(&reply(10, 5, 20), at(&clock, 1), 0, MARGIN);
        assert!(l.offline_acquire(1, clock.now()).is_ok());
        // The leave went out and Redis was lost before its reply: the server may already
        // have put the whole reservation back in the pool.
        l.start_leaving();
        assert_eq!(
            l.offline_acquire(1, clock.now()),
            Err(OfflineRefusal::NoShare)
        );
        l.apply(&reply(12, 6, 20), at(&clock, 1), 0, MARGIN); // rejoined: a new lease
        assert!(l.offline_acquire(1, clock.now()).is_ok());
    }

    #[test]
    fn g7_a_leave_settled_without_ending_the_lease_gives_it_back() {
        let clock = ManualClock::new();
        let mut l = Local::default();
        l.apply(&reply(10, 5, 20), at(&clock, 1), 0, MARGIN);
        l.start_leaving();
        l.leave_sent(1);
        // A reply on the leave's connection may predate it: still leaving.
        l.apply(&reply(11, 5, 20), at(&clock, 1), 0, MARGIN);
        assert!(l.offline_acquire(1, clock.now()).is_err());
        // That connection is closed; a newer one still names the lease: the leave never ran.
        l.apply(&reply(12, 5, 20), at(&clock, 2), 0, MARGIN);
        assert!(l.offline_acquire(1, clock.now()).is_ok());
        // A leave that could not be sent at all gives nothing up either.
        l.start_leaving();
        l.leave_unsent();
        assert!(l.offline_acquire(1, clock.now()).is_ok());
    }

    #[test]
    fn g7_offline_share_stops_at_the_lease_deadline_measured_from_sending() {
        let clock = ManualClock::new();
        let mut l = Local::default();
        let sent = at(&clock, 1);
        clock.advance(Duration::from_secs(1)); // a slow reply: the deadline still counts from sending
        l.apply(&reply(10, 5, 3), sent, 0, MARGIN);
        assert_eq!(l.offline_until(), TTL - MARGIN);
        assert!(l.offline_acquire(2, clock.now()).is_ok());
        assert_eq!(l.reserved(), 1);
        assert_eq!(
            l.offline_acquire(2, clock.now()),
            Err(OfflineRefusal::NoShare)
        );
        clock.advance_to(TTL - MARGIN);
        assert_eq!(
            l.offline_acquire(1, clock.now()),
            Err(OfflineRefusal::NoShare)
        );
    }

    #[test]
    fn g7_offline_share_ends_with_its_window() {
        let clock = ManualClock::new();
        let mut l = Local::default();
        let mut r = reply(10, 5, 50);
        r.reset_at_ms = r.now_ms + 2_000; // the window resets in 2 s, before the lease
        l.apply(&r, at(&clock, 1), 0, MARGIN);
        clock.advance(Duration::from_millis(1_999));
        assert!(l.offline_acquire(1, clock.now()).is_ok());
        clock.advance(Duration::from_millis(1));
        assert_eq!(
            l.offline_acquire(1, clock.now()),
            Err(OfflineRefusal::NoShare)
        );
    }

    #[test]
    fn g7_stale_replies_never_raise_the_reservation() {
        let clock = ManualClock::new();
        let mut l = Local::default();
        l.apply(&reply(12, 5, 4), at(&clock, 1), 0, MARGIN);
        // An older reply (lower ops) arriving late carries a larger reservation.
        l.apply(&reply(11, 5, 9), at(&clock, 1), 0, MARGIN);
        assert_eq!(l.reserved(), 4);
    }

    #[test]
    fn g7_a_lost_acquire_counts_as_paid_from_the_reservation_until_a_newer_connection_answers() {
        let clock = ManualClock::new();
        let mut l = Local::default();
        l.apply(&reply(10, 5, 6), at(&clock, 1), 0, MARGIN);
        l.lost_acquire(4, 1);
        assert_eq!(l.reserved(), 2);
        // A reply on the same connection may predate the lost call: still uncertain.
        l.apply(&reply(11, 5, 6), at(&clock, 1), 0, MARGIN);
        assert_eq!(l.reserved(), 2);
        l.apply(&reply(12, 5, 6), at(&clock, 2), 0, MARGIN);
        assert_eq!(l.reserved(), 6);
    }

    #[test]
    fn g7_offline_spending_is_netted_until_reported_and_released_only_before() {
        let clock = ManualClock::new();
        let mut l = Local::default();
        l.apply(&reply(10, 5, 10), at(&clock, 1), 0, MARGIN);
        let g1 = l.offline_acquire(3, clock.now()).expect("share");
        let _g2 = l.offline_acquire(2, clock.now()).expect("share");
        l.offline_release(2, g1, 7);
        assert_eq!(l.offline_unreported, 3);
        let report = l.take_report();
        assert_eq!(report, 3);
        // A reply that did not carry the report (the server still counts 10) stays netted.
        l.apply(&reply(11, 5, 10), at(&clock, 1), 0, MARGIN);
        assert_eq!(l.reserved(), 7);
        // The renewal that reported 3: the server now says 7, nothing left unreported.
        l.apply(&reply(12, 5, 7), at(&clock, 1), report, MARGIN);
        assert_eq!((l.reserved(), l.offline_unreported), (7, 0));
        // Returning a grant whose spending was reported must not credit it again.
        l.offline_release(3, g1, 7);
        assert_eq!(l.reserved(), 7);
    }

    #[test]
    fn g7_a_failed_report_is_reported_again_and_stays_netted() {
        let clock = ManualClock::new();
        let mut l = Local::default();
        l.apply(&reply(10, 5, 10), at(&clock, 1), 0, MARGIN);
        let g = l.offline_acquire(4, clock.now()).expect("share");
        let x = l.take_report();
        assert_eq!((x, l.reserved()), (4, 6));
        l.unreport(x);
        assert_eq!((l.offline_unreported, l.reserved()), (4, 6));
        // Reported once already: returning it locally could credit it twice.
        l.offline_release(4, g, 7);
        assert_eq!(l.reserved(), 6);
        assert_eq!(l.view(0).local_reserved, 6);
    }

    #[test]
    fn g7_fenced_or_new_epoch_drops_the_old_reservation() {
        let clock = ManualClock::new();
        let mut l = Local::default();
        l.apply(&reply(10, 5, 10), at(&clock, 1), 0, MARGIN);
        let fenced = Reply {
            status: crate::script::FENCED,
            ..Reply::default()
        };
        l.apply(&fenced, at(&clock, 1), 0, MARGIN);
        assert_eq!(l.reserved(), 0);
        assert_eq!(
            l.offline_acquire(1, clock.now()),
            Err(OfflineRefusal::NoShare)
        );
        l.apply(&reply(11, 6, 2), at(&clock, 1), 0, MARGIN);
        assert_eq!((l.epoch, l.reserved()), (6, 2));
        assert!(l.offline_acquire(1, clock.now()).is_ok());
    }

    #[test]
    fn g7_offline_block_counts_from_receipt() {
        let clock = ManualClock::new();
        let mut l = Local::default();
        let sent = at(&clock, 1);
        clock.advance(Duration::from_millis(300));
        let mut r = reply(10, 5, 10);
        r.block_until_ms = r.now_ms + 1_000;
        l.apply(
            &r,
            Timing {
                recv_at: clock.now(),
                ..sent
            },
            0,
            MARGIN,
        );
        assert_eq!(
            l.offline_acquire(1, clock.now()),
            Err(OfflineRefusal::Blocked(Duration::from_secs(1)))
        );
        clock.advance(Duration::from_secs(1));
        assert!(l.offline_acquire(1, clock.now()).is_ok());
    }
}
