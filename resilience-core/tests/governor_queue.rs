//! The line: strict priority for what requests compete for, and no head-of-line blocking by
//! a long wait on a rule that a request does not match (G8 rules, G2 priorities).

mod governor_support;

use governor_support::*;
use resilience_core::governor::{Pacing, Priority, Request, ResourceConfig, WaitReason};

fn one_create_per_hour() -> ResourceConfig {
    one_create_per(secs(3600))
}

#[test]
fn g8_a_p0_waiting_an_hour_on_a_creation_rule_does_not_hold_back_reads() {
    let rig = Rig::new(one_create_per_hour());
    let p0 = rig.agent("picard", Priority::P0);
    let p1 = rig.agent("data", Priority::P1);
    let p2 = rig.agent("ralph", Priority::P2);
    rig.made(go(rig.decide(p0, &Request::create())));
    let w0 = wait(rig.decide(p0, &Request::create()));
    assert!(w0.delay > secs(3000));
    assert!(
        rig.decide(p1, &Request::read()).is_go(),
        "P1 read held back"
    );
    assert!(
        rig.decide(p2, &Request::read()).is_go(),
        "P2 read held back"
    );
    // A create competes for the same rule: it stays behind the P0.
    let w2 = wait(rig.decide(p2, &Request::create()));
    assert!(w2.until >= w0.until, "{:?} < {:?}", w2.until, w0.until);
}

#[test]
fn g8_within_the_unrelated_hold_priority_stays_strict() {
    let mut cfg = light_only();
    cfg.pacing = Pacing::default().with_write_spacing(secs(1));
    let rig = Rig::new(cfg);
    let p0 = rig.agent("picard", Priority::P0);
    let p2 = rig.agent("ralph", Priority::P2);
    rig.made(go(rig.decide(p0, &Request::create())));
    let w0 = wait(rig.decide(p0, &Request::create()));
    assert_eq!(w0.reason, WaitReason::Rule("write_spacing".into()));
    // The P0 waits 1 s for a rule reads do not match: within the hold, so a P2 read waits.
    let w2 = wait(rig.decide(p2, &Request::read()));
    assert_eq!((w2.reason, w2.until), (WaitReason::Queue, w0.until));
    rig.advance_to(w0.until);
    assert!(
        !rig.resume(&w2.ticket, &Request::read()).is_go(),
        "P0 is due first"
    );
    assert!(rig.resume(&w0.ticket, &Request::create()).is_go());
    assert!(rig.resume(&w2.ticket, &Request::read()).is_go());
}

#[test]
fn g8_the_unrelated_hold_is_configurable() {
    let mut cfg = one_create_per_hour();
    cfg.pacing.unrelated_hold = secs(7200);
    let rig = Rig::new(cfg);
    let p0 = rig.agent("picard", Priority::P0);
    let p1 = rig.agent("data", Priority::P1);
    rig.made(go(rig.decide(p0, &Request::create())));
    let w0 = wait(rig.decide(p0, &Request::create()));
    let w1 = wait(rig.decide(p1, &Request::read()));
    assert_eq!((w1.reason, w1.until), (WaitReason::Queue, w0.until));
}

/// A P1 queued behind a P0 that then leaves the line is asleep at most until the P0's
/// time, which is within the hold: behind an hour-long rule wait it is not queued at all
/// (it used to sleep the hour while a later P1 was served at once), and behind a 5 s one
/// it comes back within the 10 s hold.
#[test]
fn g8_a_waiter_behind_a_p0_that_leaves_is_never_left_asleep_past_the_hold() {
    let rig = Rig::new(one_create_per_hour());
    let p0 = rig.agent("picard", Priority::P0);
    let a = rig.agent("data", Priority::P1);
    rig.made(go(rig.decide(p0, &Request::create())));
    let w0 = wait(rig.decide(p0, &Request::create()));
    assert!(
        rig.decide(a, &Request::read()).is_go(),
        "queued behind the hour"
    );
    rig.gov.cancel(&w0.ticket);

    let mut cfg = light_only();
    cfg.pacing = Pacing::default().with_write_spacing(secs(5));
    let rig = Rig::new(cfg);
    let p0 = rig.agent("picard", Priority::P0);
    let a = rig.agent("data", Priority::P1);
    rig.made(go(rig.decide(p0, &Request::create())));
    let w0 = wait(rig.decide(p0, &Request::create()));
    let wa = wait(rig.decide(a, &Request::read()));
    assert_eq!((wa.reason, wa.until), (WaitReason::Queue, w0.until));
    assert!(wa.delay <= secs(10), "{:?}", wa.delay);
    rig.gov.cancel(&w0.ticket);
    rig.advance_to(wa.until);
    assert!(rig.resume(&wa.ticket, &Request::read()).is_go());
}

/// Two waiters of one priority due at the same time go in the order they joined the line;
/// one not yet due holds nobody back. (G1 amber delays here, the same at the same ratio.)
#[test]
fn g1_same_priority_waiters_due_together_go_in_arrival_order() {
    let rig = Rig::new(light_only());
    let p0 = rig.agent("picard", Priority::P0);
    let first = rig.agent("ralph", Priority::P2);
    let second = rig.agent("seven", Priority::P2);
    rig.gov
        .observe_without_grant(p0, rig.core, &rig.ok(340, 1000, 3600));
    let w1 = wait(rig.decide(first, &Request::read()));
    let w2 = wait(rig.decide(second, &Request::read()));
    assert_eq!((w1.until, w2.until), (ms(480), ms(480)));
    rig.advance_to(ms(480));
    let behind = wait(rig.resume(&w2.ticket, &Request::read()));
    assert_eq!(
        behind.reason,
        WaitReason::Queue,
        "went ahead of an earlier P2"
    );
    assert!(rig.resume(&w1.ticket, &Request::read()).is_go());
    rig.advance_to(behind.until);
    assert!(rig.resume(&behind.ticket, &Request::read()).is_go());
}

/// An earlier waiter of the same priority that is not due yet does not hold a later
/// request back: a P2 create waiting on write spacing leaves a P2 read free to go.
#[test]
fn g8_an_earlier_same_priority_waiter_not_yet_due_holds_nobody_back() {
    let mut cfg = light_only();
    cfg.pacing = Pacing::default().with_write_spacing(secs(1));
    let rig = Rig::new(cfg);
    let writer = rig.agent("ralph", Priority::P2);
    let reader = rig.agent("seven", Priority::P2);
    rig.made(go(rig.decide(writer, &Request::create())));
    let w = wait(rig.decide(writer, &Request::create()));
    assert_eq!(w.reason, WaitReason::Rule("write_spacing".into()));
    assert!(rig.decide(reader, &Request::read()).is_go());
}

/// One agent with two requests in line (two tasks): resuming the later ticket keeps that
/// ticket's own time and place, not those of the agent's first ticket.
#[test]
fn g1_resuming_one_of_an_agents_two_tickets_keeps_that_tickets_time() {
    let rig = Rig::new(light_only());
    let p0 = rig.agent("picard", Priority::P0);
    let p2 = rig.agent("ralph", Priority::P2);
    rig.gov
        .observe_without_grant(p0, rig.core, &rig.ok(340, 1000, 3600));
    let first = wait(rig.decide(p2, &Request::read()));
    assert_eq!(first.delay, ms(480));
    rig.gov
        .observe_without_grant(p0, rig.core, &rig.ok(200, 1000, 3600));
    let second = wait(rig.decide(p2, &Request::read()));
    assert_eq!(second.delay, ms(1600));
    rig.advance_to(first.until);
    let again = wait(rig.resume(&second.ticket, &Request::read()));
    assert_eq!((&again.ticket, again.until), (&second.ticket, second.until));
    assert!(rig.resume(&first.ticket, &Request::read()).is_go());
}

/// G5 with a lease shorter than the ticket grace: the sweep that ends a silent agent's
/// lease drops its place in line at once, not only when the grace runs out.
#[test]
fn g5_a_dead_agents_place_in_line_goes_with_its_lease_within_the_ticket_grace() {
    let mut cfg = light_only();
    cfg.pacing = Pacing::default().with_write_spacing(secs(5));
    let mut gc = resilience_core::governor::GovernorConfig::default();
    gc.leases.ttl = secs(2);
    gc.leases.ticket_grace = secs(30);
    let rig = Rig::with_governor_config(cfg, gc);
    let dead = rig.agent("picard", Priority::P0);
    let live = rig.agent("ralph", Priority::P2);
    rig.made(go(rig.decide(dead, &Request::create())));
    let w = wait(rig.decide(dead, &Request::create()));
    assert_eq!(w.until, secs(5));
    // Silent since it was due at 5 s: its lease ends at 7 s, its ticket's grace at 35 s.
    rig.advance_to(secs(8));
    rig.gov.heartbeat(live);
    assert!(
        rig.decide(live, &Request::read()).is_go(),
        "held back by a dead agent's ticket"
    );
    assert_eq!(rig.gov.snapshot(rig.core).unwrap().waiters, 0);
}

/// A wait on a spacing rule is, like one on a window rule, a wait for what the rule
/// spaces: a P0 create spaced a minute from the last does not hold back reads.
#[test]
fn g8_a_p0_waiting_a_minute_on_write_spacing_does_not_hold_back_reads() {
    let mut cfg = light_only();
    cfg.pacing = Pacing::default().with_write_spacing(secs(60));
    let rig = Rig::new(cfg);
    let p0 = rig.agent("picard", Priority::P0);
    let p2 = rig.agent("ralph", Priority::P2);
    rig.made(go(rig.decide(p0, &Request::create())));
    let w0 = wait(rig.decide(p0, &Request::create()));
    assert_eq!(
        (w0.reason, w0.delay),
        (WaitReason::Rule("write_spacing".into()), secs(60))
    );
    assert!(
        rig.decide(p2, &Request::read()).is_go(),
        "P2 read held back"
    );
}
