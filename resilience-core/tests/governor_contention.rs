//! Priority order under contention: no P2 grant while a P0 request is in line, whether the
//! governor is driven by many threads at once or by a discrete-event simulation.

mod governor_support;

use governor_support::*;
use proptest::prelude::*;
use resilience_core::clock::{Clock, ManualClock};
use resilience_core::governor::{
    Decision, Governor, GovernorConfig, Leases, Measure, Priority, Request, ResourceConfig,
    Selector, WindowRule,
};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One grant as a thread saw it: effective priority, its ledger, and the ledger of the first
/// wait of the same request (when it had to wait).
#[derive(Debug, Clone, Copy)]
struct Seen {
    priority: Priority,
    ledger: u64,
    waited_from: Option<u64>,
}

fn inversions(seen: &[Seen]) -> usize {
    let p0_waits: Vec<(u64, u64)> = seen
        .iter()
        .filter(|s| s.priority == Priority::P0)
        .filter_map(|s| Some((s.waited_from?, s.ledger)))
        .collect();
    seen.iter()
        .filter(|s| s.priority == Priority::P2)
        .filter(|s| {
            p0_waits
                .iter()
                .any(|&(from, to)| from < s.ledger && s.ledger < to)
        })
        .count()
}

#[test]
fn g1_g6_no_priority_inversions_with_many_threads() {
    let clock = ManualClock::new();
    let config = GovernorConfig {
        // Threads may lag behind virtual time; never drop them from the line for it.
        leases: Leases {
            ttl: Duration::from_secs(86_400),
            ticket_grace: Duration::from_secs(86_400),
            call_bound: Duration::from_secs(86_400),
        },
        ..GovernorConfig::default()
    };
    let gov = Governor::builder()
        .clock(clock.clone())
        .config(config)
        .seed(11)
        .build()
        .unwrap();
    let mut cfg = light_only();
    cfg.pacing
        .windows
        .push(WindowRule::new("tight", Selector::All, Measure::Requests, 10, ms(100)).smoothed(2));
    // P0 writes wait for a slot that P2's reads do not need: only the line keeps P2 back.
    cfg.pacing = cfg.pacing.with_write_spacing(ms(20));
    let core = gov.add_resource("core", cfg).unwrap();
    let plan = [
        (Priority::P0, 2, 60),
        (Priority::P1, 4, 60),
        (Priority::P2, 3, 40),
    ];
    let seen = Arc::new(Mutex::new(Vec::<Seen>::new()));
    let running = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut handles = Vec::new();
    for (p, agents, grants) in plan {
        for k in 0..agents {
            let agent = gov.register(&format!("{p}-{k}"), p).unwrap();
            let (gov, clock, seen, running, stop) = (
                gov.clone(),
                clock.clone(),
                seen.clone(),
                running.clone(),
                stop.clone(),
            );
            running.fetch_add(1, Ordering::SeqCst);
            handles.push(std::thread::spawn(move || {
                let req = if p == Priority::P0 {
                    Request::write()
                } else {
                    Request::read()
                };
                let mut done = 0;
                while done < grants && !stop.load(Ordering::Relaxed) {
                    let mut waited_from = None;
                    let mut d = gov.decide(agent, core, &req);
                    loop {
                        match d {
                            Decision::Go(g) => {
                                seen.lock().unwrap().push(Seen {
                                    priority: g.priority(),
                                    ledger: g.ledger(),
                                    waited_from,
                                });
                                gov.release(g);
                                done += 1;
                                break;
                            }
                            Decision::Wait(w) => {
                                waited_from.get_or_insert(w.ledger);
                                while clock.now() < w.until && !stop.load(Ordering::Relaxed) {
                                    std::thread::yield_now();
                                }
                                d = gov.resume(&w.ticket, &req);
                            }
                            Decision::Refuse(r) => panic!("unexpected refusal {r:?}"),
                        }
                    }
                }
                running.fetch_sub(1, Ordering::SeqCst);
            }));
        }
    }
    // Virtual time moves in 1 ms steps while the threads race.
    while running.load(Ordering::SeqCst) > 0 {
        clock.advance(ms(1));
        std::thread::yield_now();
        if clock.now() > Duration::from_secs(600) {
            stop.store(true, Ordering::SeqCst);
        }
    }
    for h in handles {
        h.join().unwrap();
    }
    assert!(
        !stop.load(Ordering::SeqCst),
        "did not finish in 10 virtual minutes"
    );
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2 * 60 + 4 * 60 + 3 * 40);
    let waited_p0 = seen
        .iter()
        .filter(|s| s.priority == Priority::P0 && s.waited_from.is_some())
        .count();
    assert!(
        waited_p0 > 10,
        "the test must create contention ({waited_p0})"
    );
    assert_eq!(inversions(&seen), 0);
    assert_eq!(gov.snapshot(core).unwrap().in_flight, 0);
}

fn arb_jobs() -> impl Strategy<Value = Vec<(usize, u8, u64)>> {
    // (agent 0..9, kind 0..3, arrival in ms)
    prop::collection::vec((0usize..9, 0u8..3, 0u64..120_000), 1..80)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Random squads on GitHub's rules (tightened, plus write spacing so that P0 writes wait
    /// for slots P2 reads do not need): every job is served, no P2 is served while a P0
    /// waits, and no minute sees more creations than the rule allows.
    #[test]
    fn g1_g6_g8_no_priority_inversions_in_random_squads(spec in arb_jobs(), block_at in 0u64..120_000) {
        squad_case(&spec, block_at)?;
    }
}

/// Random squads on GitHub's rules (see the proptest above): every job is served, no P2 is
/// served while a P0 waits, and no minute sees more creations than the rule allows.
fn squad_case(spec: &[(usize, u8, u64)], block_at: u64) -> Result<(), TestCaseError> {
    let mut cfg = ResourceConfig::github();
    cfg.pacing.windows[0].limit = 12; // tight enough to queue
    cfg.pacing.windows[0].p0_headroom = 2;
    cfg.pacing.windows[0].smooth_burst = Some(2);
    cfg.pacing = cfg.pacing.with_write_spacing(Duration::from_secs(2));
    let rig = Rig::new(cfg);
    let prio = |i: usize| match i {
        0 => Priority::P0,
        8 => Priority::P2,
        _ => Priority::P1,
    };
    let agents: Vec<_> = (0..9)
        .map(|i| rig.agent(&format!("a{i}"), prio(i)))
        .collect();
    let mut jobs: Vec<Job> = spec
        .iter()
        .map(|&(a, k, at)| {
            let req = [Request::read(), Request::write(), Request::create()][k as usize];
            Job::new(agents[a], prio(a), req, ms(at))
        })
        .collect();
    // One of them meets a secondary limit.
    let hit = (block_at as usize) % jobs.len();
    jobs[hit].response =
        resilience_core::governor::Observation::new(429).with_header("retry-after", "20");
    let (served, inv) = simulate(&rig, &jobs);
    prop_assert_eq!(inv, 0);
    prop_assert!(served.iter().all(|s| s.granted.is_some()));
    let creates: Vec<Duration> = served
        .iter()
        .filter(|s| jobs[s.job].req.kind() == resilience_core::governor::RequestKind::Create)
        .filter_map(|s| s.granted)
        .collect();
    for (i, &t) in creates.iter().enumerate() {
        let n = creates[i..]
            .iter()
            .take_while(|&&u| u < t + Duration::from_secs(60))
            .count();
        prop_assert!(n <= 12, "{} creations in a minute", n);
    }
    Ok(())
}

/// A case the random squads once shrank to (seen during the mutation-testing review): a P2
/// read granted while a P0 create waited 12 s more on the creation rule. The governor was
/// right (a read does not compete for a creation window, and that wait was past the 10 s
/// unrelated hold, so the read may go: `governor` module docs); the check was stricter than
/// that contract and now follows it (`simulate`). Kept so the case stays covered.
#[test]
fn g1_g6_g8_no_priority_inversion_in_a_squad_found_by_proptest() {
    let spec = SQUAD_FOUND_BY_PROPTEST;
    squad_case(&spec, 81_333).expect("no inversion, all served, creations within the rule");
}

const SQUAD_FOUND_BY_PROPTEST: [(usize, u8, u64); 71] = [
    (2, 2, 46502),
    (4, 0, 3484),
    (4, 0, 73685),
    (4, 0, 73670),
    (3, 2, 47651),
    (8, 2, 64446),
    (8, 1, 77820),
    (4, 2, 90134),
    (4, 0, 74524),
    (5, 2, 68207),
    (2, 1, 75112),
    (6, 2, 74431),
    (0, 2, 39273),
    (1, 2, 35394),
    (3, 0, 13822),
    (0, 1, 54654),
    (4, 2, 15532),
    (1, 2, 12431),
    (7, 0, 84326),
    (8, 1, 88422),
    (2, 2, 72310),
    (5, 1, 21709),
    (6, 2, 21789),
    (0, 2, 43961),
    (3, 2, 99292),
    (3, 0, 119518),
    (5, 1, 87689),
    (1, 1, 16986),
    (2, 0, 74252),
    (0, 0, 58437),
    (5, 0, 74243),
    (0, 2, 40161),
    (7, 1, 17266),
    (8, 2, 113679),
    (3, 2, 95689),
    (0, 0, 103105),
    (3, 0, 102029),
    (5, 0, 112470),
    (8, 0, 48368),
    (5, 2, 49385),
    (5, 2, 59554),
    (6, 2, 8724),
    (7, 2, 585),
    (0, 0, 96042),
    (8, 0, 72643),
    (5, 0, 2531),
    (3, 1, 39159),
    (0, 0, 105414),
    (2, 2, 644),
    (6, 2, 56738),
    (8, 2, 100538),
    (3, 0, 84852),
    (0, 2, 245),
    (4, 1, 2493),
    (4, 1, 116991),
    (8, 2, 1345),
    (0, 1, 114285),
    (0, 1, 108540),
    (0, 0, 17472),
    (6, 0, 77356),
    (7, 1, 93552),
    (0, 2, 22903),
    (2, 0, 55693),
    (8, 2, 76055),
    (1, 2, 29678),
    (1, 1, 6692),
    (0, 2, 65411),
    (6, 0, 2065),
    (1, 2, 35949),
    (0, 0, 283),
    (7, 0, 98383),
];

/// A second case the random squads shrank to (helper-15's mutation run, where it failed on
/// the unmutated governor too): a P2 write and a P0 read wanted at the same instant
/// (34.923 s), the write asking first. The governor cannot know of an ask not yet made, so
/// the check counts a P0 as waiting only once it has asked (`simulate`).
#[test]
fn g1_g6_g8_simultaneous_asks_in_a_squad_found_by_proptest() {
    let spec: [(usize, u8, u64); 40] = [
        (0, 0, 28),
        (5, 0, 28780),
        (5, 0, 77989),
        (8, 1, 34923),
        (7, 0, 100161),
        (4, 1, 117032),
        (6, 2, 7693),
        (5, 0, 106277),
        (8, 1, 17834),
        (3, 1, 11502),
        (8, 1, 52972),
        (8, 1, 24616),
        (7, 0, 43400),
        (7, 1, 16237),
        (6, 1, 85154),
        (6, 0, 77516),
        (8, 2, 73867),
        (7, 1, 102930),
        (8, 2, 88409),
        (8, 1, 92901),
        (8, 1, 95073),
        (5, 1, 66076),
        (0, 1, 19879),
        (8, 1, 25247),
        (6, 2, 98174),
        (6, 1, 28433),
        (2, 0, 28007),
        (8, 2, 72817),
        (0, 0, 34923),
        (0, 2, 85160),
        (4, 1, 9135),
        (3, 2, 52408),
        (3, 2, 43701),
        (0, 1, 2321),
        (6, 0, 59512),
        (4, 1, 107984),
        (3, 0, 49609),
        (0, 1, 105767),
        (6, 1, 28731),
        (0, 0, 54473),
    ];
    squad_case(&spec, 82_727).expect("no inversion, all served, creations within the rule");
}
