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
