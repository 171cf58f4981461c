//! G7 + G8: pacing rules shared through Redis (`QuotaSpec::shared_pacing`), judged by the
//! script for every process together, against a real redis-server. Times are the server's
//! (`QuotaGrant::granted_at_ms`), as the script counts them.

mod common;

use common::node::{cfg, go, MS};
use common::pacing::{client_with, reserving_with, rules, wait_of};
use common::server::{prefix, server};
use common::worker::{lines, run_if_worker, Job};
use resilience_core::governor::{
    Measure, Observation, Pacing, Priority, Request, Selector, WindowRule,
};
use resilience_redis::{QuotaWaitReason, RedisQuotaError};
use std::time::{Duration, Instant};

const WORKER_ARGS: [&str; 4] = ["g7_worker_entry", "--exact", "--ignored", "--nocapture"];

/// The body of every child process; does nothing in a normal test run.
#[test]
#[ignore = "run by the G7 tests as a child process"]
fn g7_worker_entry() {
    run_if_worker();
}

/// The most grants (server times, any order) inside any window of `span_ms`.
fn most_in_any_window(times: &mut [u64], span_ms: u64) -> usize {
    times.sort_unstable();
    let mut most = 0;
    let mut lo = 0;
    for hi in 0..times.len() {
        while times[hi] - times[lo] >= span_ms {
            lo += 1;
        }
        most = most.max(hi - lo + 1);
    }
    most
}

#[test]
fn g7_g8_window_rule_holds_across_processes() {
    let Some(srv) = server() else { return };
    let p = prefix("pace-procs");
    let jobs: Vec<Job> = (0..3)
        .map(|i| {
            let mut j = Job::new("spend", &srv.url, &p, &format!("w{i}"));
            (j.limit, j.window_ms, j.run_ms, j.tasks) = (1_000_000, 3_600_000, 2_000, 4);
            j.ttl_ms = 10_000;
            j.pacing = "window:12:400".into();
            j
        })
        .collect();
    let mut children: Vec<_> = jobs.iter().map(|j| j.spawn(&WORKER_ARGS)).collect();
    let outs: Vec<_> = children.iter_mut().map(lines).collect();
    let mut times = Vec::new();
    let mut per_process = Vec::new();
    for (mut c, rx) in children.into_iter().zip(outs) {
        assert!(c.wait().expect("worker exit").success());
        let mut n = 0;
        for line in rx.iter() {
            let f: Vec<&str> = line.split_whitespace().collect();
            match f.as_slice() {
                ["GRANT", .., server_ms] => {
                    times.push(server_ms.parse::<u64>().expect("server ms"));
                    n += 1;
                }
                ["ERROR", ..] | ["CONNECT_ERROR", ..] => panic!("{line}"),
                _ => {}
            }
        }
        per_process.push(n);
    }
    let most = most_in_any_window(&mut times, 400);
    eprintln!("g7/g8 window across processes: {per_process:?} grants, at most {most} in 400 ms");
    assert!(most <= 12, "{most} grants in one 400 ms window, limit 12");
    // Real contention: every process was served, and the rule was filled, not starved
    // (2 s is five windows: at most 5 × 12 + 12, at least a window's worth of each).
    assert!(per_process.iter().all(|&n| n > 0), "{per_process:?}");
    let total: usize = per_process.iter().sum();
    assert!(total >= 40, "only {total} grants in 2 s at 12 per 400 ms");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_write_spacing_holds_across_clients() {
    let Some(srv) = server() else { return };
    let p = prefix("pace-space");
    let gap = 150;
    let spacing = || Pacing::default().with_write_spacing(MS(gap));
    let (_ra, a) = client_with(cfg(&srv.url, &p, "a"), Some(spacing())).await;
    let (_rb, b) = client_with(cfg(&srv.url, &p, "b"), Some(spacing())).await;
    let stop = Instant::now() + MS(1_000);
    let mut tasks = Vec::new();
    for q in [a.clone(), b.clone(), a.clone(), b.clone()] {
        tasks.push(tokio::spawn(async move {
            let mut times = Vec::new();
            while Instant::now() < stop {
                let g = q
                    .acquire_request(&Request::write(), Priority::P1, Some(MS(400)))
                    .await;
                if let Ok(g) = g {
                    times.push(g.granted_at_ms());
                }
            }
            times
        }));
    }
    // Reads are not spaced: one goes through at once while the writers wait on each other.
    let t = Instant::now();
    let r = go(b
        .try_acquire_request(&Request::read(), Priority::P1)
        .await
        .expect("read"));
    assert!(r.granted_at_ms() > 0 && t.elapsed() < MS(100));
    let mut times = Vec::new();
    for h in tasks {
        times.extend(h.await.expect("task"));
    }
    times.sort_unstable();
    eprintln!("g7/g8 write spacing: {} writes at {times:?}", times.len());
    assert!(times.len() >= 5, "{times:?}");
    for w in times.windows(2) {
        assert!(
            w[1] - w[0] >= gap,
            "two writes {} ms apart, gap {gap}: {times:?}",
            w[1] - w[0]
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_concurrency_cap_holds_across_clients_and_an_unsettled_grant_frees_after_the_call_bound(
) {
    let Some(srv) = server() else { return };
    let p = prefix("pace-cap");
    let cap = || Pacing {
        max_concurrent: Some(3),
        ..Pacing::default()
    };
    let bound = MS(200);
    let (_ra, a) = client_with(cfg(&srv.url, &p, "a").call_bound(bound), Some(cap())).await;
    let (_rb, b) = client_with(cfg(&srv.url, &p, "b").call_bound(bound), Some(cap())).await;
    let read = Request::read();
    let g1 = go(a.try_acquire_request(&read, Priority::P1).await.expect("1"));
    let _g2 = go(a.try_acquire_request(&read, Priority::P1).await.expect("2"));
    let _g3 = go(b.try_acquire_request(&read, Priority::P1).await.expect("3"));
    // A fourth, from either client, waits for a slot.
    for q in [&a, &b] {
        let w = wait_of(q.try_acquire_request(&read, Priority::P1).await.expect("4"));
        assert_eq!(w.reason, QuotaWaitReason::InFlight);
        assert!(
            w.delay > Duration::ZERO && w.delay <= bound.mul_f64(1.25) + MS(20),
            "{w:?}"
        );
    }
    // A settled grant frees its slot, and wakes the waiter of the other client.
    let waiter = {
        let b = b.clone();
        tokio::spawn(async move {
            let t = Instant::now();
            let g = b
                .acquire_request(&Request::read(), Priority::P1, Some(MS(2_000)))
                .await
                .expect("a slot");
            (g, t.elapsed())
        })
    };
    tokio::time::sleep(MS(30)).await;
    a.observe(
        Some(g1),
        &Observation::from_headers(200, [("x-ratelimit-remaining", "999000")]),
    )
    .await
    .expect("observe");
    let (_g4, waited) = waiter.await.expect("waiter");
    assert!(
        waited < MS(200),
        "woken by the settlement, not the bound: {waited:?}"
    );
    // Three unsettled grants hold every slot: until the call bound, no fourth.
    let w = wait_of(a.try_acquire_request(&read, Priority::P1).await.expect("5"));
    assert_eq!(w.reason, QuotaWaitReason::InFlight);
    // Past the bound (at most 1.25 × it), nobody settled them, and they stop counting.
    let t = Instant::now();
    let g = a
        .acquire_request(&read, Priority::P1, Some(MS(1_000)))
        .await
        .expect("a slot after the call bound");
    assert!(g.granted_at_ms() > 0);
    assert!(
        t.elapsed() <= bound.mul_f64(1.25) + MS(150),
        "{:?}",
        t.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_p0_headroom_is_usable_by_p0_only() {
    let Some(srv) = server() else { return };
    let p = prefix("pace-p0");
    let rule = || {
        rules(vec![WindowRule::new(
            "creates",
            Selector::Creates,
            Measure::Requests,
            5,
            Duration::from_secs(60),
        )
        .with_p0_headroom(2)])
    };
    // The express lane is on in the config: with shared rules it must not serve P0 from the
    // reservation, past the rules.
    let c = |n| cfg(&srv.url, &p, n).express(Some(Priority::P0), 8);
    let (_ra, a) = reserving_with(c("a"), Some(rule())).await;
    let (_rb, b) = reserving_with(c("b"), Some(rule())).await;
    let create = Request::create();
    for q in [&a, &b, &a] {
        let _ = go(q
            .try_acquire_request(&create, Priority::P1)
            .await
            .expect("P1"));
    }
    for (q, pr) in [(&b, Priority::P1), (&a, Priority::P2)] {
        let w = wait_of(q.try_acquire_request(&create, pr).await.expect("P1/P2"));
        assert_eq!(w.reason, QuotaWaitReason::Paced, "{pr:?} in the headroom");
    }
    // Once the subscription is up, the lane would be open (a lease, an anchored window, a
    // reservation): only the shared rules keep P0 off it.
    tokio::time::sleep(MS(200)).await;
    for q in [&b, &a] {
        let g = q
            .acquire_request(&create, Priority::P0, Some(MS(100)))
            .await
            .expect("P0 in the headroom");
        assert!(!g.is_express(), "an express grant skips the shared rules");
    }
    assert!(a
        .acquire_request(&create, Priority::P0, Some(MS(50)))
        .await
        .is_err());
    let w = wait_of(
        b.try_acquire_request(&create, Priority::P0)
            .await
            .expect("P0"),
    );
    assert_eq!(w.reason, QuotaWaitReason::Paced, "the whole limit is spent");
    // Reads are not counted by a creation rule.
    let _ = go(a
        .try_acquire_request(&Request::read(), Priority::P2)
        .await
        .expect("read"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_a_rule_wait_reports_the_delay_until_a_unit_frees_and_the_waiter_sleeps() {
    let Some(srv) = server() else { return };
    let p = prefix("pace-delay");
    let rule = rules(vec![WindowRule::new(
        "all",
        Selector::All,
        Measure::Requests,
        2,
        MS(1_000),
    )]);
    let (_r, q) = client_with(cfg(&srv.url, &p, "a"), Some(rule)).await;
    let read = Request::read();
    let first = go(q.try_acquire_request(&read, Priority::P1).await.expect("1"));
    let _ = go(q.try_acquire_request(&read, Priority::P1).await.expect("2"));
    let w = wait_of(q.try_acquire_request(&read, Priority::P1).await.expect("3"));
    assert_eq!(w.reason, QuotaWaitReason::Paced);
    // Ten buckets of 100 ms: the first grant's bucket leaves the window 1 000 ms after it
    // began, at most 100 ms after the grant's own time.
    assert!(
        w.delay > MS(500) && w.delay <= MS(1_100),
        "the delay until a unit frees: {w:?}"
    );
    let before = srv.calls("evalsha");
    let t = Instant::now();
    let g = q
        .acquire_request(&read, Priority::P1, Some(MS(3_000)))
        .await
        .expect("granted once the first grant leaves the window");
    let asks = srv.calls("evalsha") - before;
    assert!(g.granted_at_ms() >= first.granted_at_ms() + 1_000);
    assert!(t.elapsed() < MS(1_400), "{:?}", t.elapsed());
    if srv.owned() {
        assert!(
            asks <= 3,
            "{asks} asks: the waiter polled instead of sleeping"
        );
    }
    // A wait longer than `max_wait` is refused at once, not slept.
    let _ = go(q
        .try_acquire_request(&read, Priority::P1)
        .await
        .expect("2nd of the window"));
    let t = Instant::now();
    let e = q
        .acquire_request(&read, Priority::P1, Some(MS(50)))
        .await
        .unwrap_err();
    assert!(t.elapsed() < MS(50), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_without_rules_nothing_is_paced_and_no_rule_state_is_kept() {
    let Some(srv) = server() else { return };
    let p = prefix("pace-none");
    let (_r, q) = client_with(cfg(&srv.url, &p, "a"), None).await;
    for _ in 0..5 {
        let _ = go(q
            .try_acquire_request(&Request::create(), Priority::P1)
            .await
            .expect("create"));
    }
    if srv.owned() {
        let key = format!("{{{p}:core}}:p");
        let exists = srv.cmd(&format!("EXISTS {key}")).expect("exists");
        assert_eq!(exists.trim(), ":0", "{exists}");
    }
}

/// A process without the rules would not be counted in them: while another process's
/// counts are live, its acquires are refused by name instead of passing past the rules.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_a_process_without_the_shared_rules_is_refused_by_name() {
    let Some(srv) = server() else { return };
    let p = prefix("pace-mixed");
    let rule = rules(vec![WindowRule::new(
        "all",
        Selector::All,
        Measure::Requests,
        2,
        MS(60_000),
    )]);
    let (_ra, a) = client_with(cfg(&srv.url, &p, "a"), Some(rule)).await;
    let (_rb, b) = client_with(cfg(&srv.url, &p, "b"), None).await;
    let _ = go(b
        .try_acquire(1, Priority::P1)
        .await
        .expect("no rules counted yet"));
    let _ = go(a
        .try_acquire_request(&Request::read(), Priority::P1)
        .await
        .expect("paced"));
    let e = b.try_acquire(1, Priority::P1).await.unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, RedisQuotaError::PacedElsewhere { .. }), "{e:?}");
    assert!(
        text.contains("shared_pacing") && text.contains("`core`"),
        "{text}"
    );
}

/// `acquire_shared` carries the request (its kind here) to the shared rules: two processes'
/// governors, each with GitHub's whole rules locally, together create no more than the
/// shared rule allows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_acquire_shared_counts_each_request_by_kind_in_the_shared_rules() {
    use resilience_core::governor::{Governor, ResourceConfig};
    use resilience_redis::acquire_shared;
    let Some(srv) = server() else { return };
    let p = prefix("pace-gov");
    let rule = || {
        rules(vec![WindowRule::new(
            "creates",
            Selector::Creates,
            Measure::Requests,
            3,
            Duration::from_secs(60),
        )])
    };
    let (_ra, qa) = client_with(cfg(&srv.url, &p, "a"), Some(rule())).await;
    let (_rb, qb) = client_with(cfg(&srv.url, &p, "b"), Some(rule())).await;
    let mut created = 0;
    let mut refused = 0;
    for q in [&qa, &qb] {
        let gov = Governor::builder().seed(7).build().expect("governor");
        let core = gov
            .add_resource("core", ResourceConfig::github())
            .expect("resource");
        let agent = gov.register("writer", Priority::P1).expect("agent");
        for _ in 0..3 {
            let create = Request::create().with_max_wait(MS(50));
            match acquire_shared(&gov, q, agent, core, create).await {
                Ok(permit) => {
                    created += 1;
                    let _ = permit.observe(&Observation::new(201)).await;
                }
                Err(_) => refused += 1,
            }
        }
        // Reads are not counted by the creation rule.
        let permit = acquire_shared(&gov, q, agent, core, Request::read())
            .await
            .expect("a read");
        let _ = permit.observe(&Observation::new(200)).await;
    }
    assert_eq!((created, refused), (3, 3));
}

/// Offline spending would grant past every other process's rules: a resource with shared
/// rules spends nothing while Redis is down, even in degraded mode with a reservation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_shared_rules_spend_nothing_while_redis_is_down() {
    let Some(mut srv) = server() else { return };
    if !srv.owned() {
        return; // kills its redis-server
    }
    let p = prefix("pace-down");
    let c = cfg(&srv.url, &p, "a")
        .reserve_share_permille(200)
        .on_loss(resilience_redis::OnLoss::Degraded);
    let rule = Pacing::default().with_write_spacing(MS(100));
    let (_r, q) = reserving_with(c, Some(rule)).await;
    let _ = go(q
        .try_acquire_request(&Request::read(), Priority::P1)
        .await
        .expect("online"));
    assert!(q.snapshot().await.expect("snapshot").reserved > 0);
    srv.kill();
    for _ in 0..3 {
        let d = q.try_acquire_request(&Request::write(), Priority::P0).await;
        assert!(
            matches!(d, Err(RedisQuotaError::Unavailable { .. })),
            "{d:?}"
        );
    }
}

/// A request that no window of a shared rule could ever grant at its priority is refused at
/// once, naming the rule and its numbers (it used to be `CostTooLarge` with the quota's
/// limit, which said nothing of the rule); the P0 headroom counts only below P0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_g8_a_request_no_rule_window_can_grant_is_refused_naming_the_rule() {
    let Some(srv) = server() else { return };
    let p = prefix("pace-never");
    let points = |limit, headroom| {
        rules(vec![WindowRule::new(
            "points",
            Selector::All,
            Measure::Points,
            limit,
            Duration::from_secs(60),
        )
        .with_p0_headroom(headroom)])
    };
    let (_r, q) = client_with(cfg(&srv.url, &p, "a"), Some(points(8, 4))).await;
    // A creation is 5 points: P1 may use 8 - 4 of them, P0 all 8.
    let err = q
        .try_acquire_request(&Request::create(), Priority::P1)
        .await
        .expect_err("5 points where P1 gets 4");
    assert_eq!(
        err,
        RedisQuotaError::RuleTooSmall {
            resource: "core".into(),
            rule: "points".into(),
            needs: 5,
            allows: 4,
        }
    );
    let text = err.to_string();
    assert!(
        text.contains("`points`") && text.contains("5 units") && text.contains("at most 4"),
        "{text}"
    );
    let _ = go(q
        .try_acquire_request(&Request::read(), Priority::P2)
        .await
        .expect("a read of one point fits"));
    let _ = go(q
        .try_acquire_request(&Request::create(), Priority::P0)
        .await
        .expect("P0 may use the headroom: 1 + 5 of 8"));

    let p = prefix("pace-never-p0");
    let (_r, q) = client_with(cfg(&srv.url, &p, "b"), Some(points(4, 0))).await;
    assert!(matches!(
        q.try_acquire_request(&Request::create(), Priority::P0)
            .await,
        Err(RedisQuotaError::RuleTooSmall {
            needs: 5,
            allows: 4,
            ..
        })
    ));
}
