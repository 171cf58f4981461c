//! Exact tests of every limit, on a manual clock.

use super::*;
use crate::limits::RejectStatus;
use crate::request::Priority;
use resilience_core::clock::ManualClock;

const ORIGIN: u64 = 1_767_225_600; // ManualClock's default wall-clock origin

fn emu(limits: Limits) -> (Emulator, ManualClock) {
    let clock = ManualClock::new();
    let emu = Emulator::new(limits, Arc::new(clock.clone()), 42).unwrap();
    (emu, clock)
}

fn get(path: &str) -> Request {
    Request::new("tok", "GET", path, "data", Priority::P1)
}

fn post(path: &str) -> Request {
    Request::new("tok", "POST", path, "data", Priority::P1)
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

#[test]
fn primary_headers_count_down_and_reset_is_anchored_at_first_request() {
    let (emu, clock) = emu(Limits::github());
    clock.advance(secs(10));
    let r = emu.handle(&get("/repos/a/b"));
    assert_eq!(r.status, 200);
    assert_eq!(r.header("x-ratelimit-limit"), Some("5000"));
    assert_eq!(r.header("x-ratelimit-remaining"), Some("4999"));
    assert_eq!(r.header("x-ratelimit-used"), Some("1"));
    assert_eq!(r.header_u64("x-ratelimit-reset"), Some(ORIGIN + 10 + 3_600));
    assert_eq!(r.header("x-ratelimit-resource"), Some("core"));
    // Still the same window one second before its end, a fresh one at the end.
    let r = emu.handle_at(&get("/repos/a/b"), secs(3_609));
    assert_eq!(r.header("x-ratelimit-remaining"), Some("4998"));
    let r = emu.handle_at(&get("/repos/a/b"), secs(3_610));
    assert_eq!(r.header("x-ratelimit-remaining"), Some("4999"));
    assert_eq!(
        r.header_u64("x-ratelimit-reset"),
        Some(ORIGIN + 3_610 + 3_600)
    );
}

#[test]
fn primary_exhaustion_rejects_with_remaining_zero_until_reset() {
    let limits = Limits {
        primary_limit: 3,
        primary_status: RejectStatus::TooManyRequests,
        ..Limits::github()
    };
    let (emu, _clock) = emu(limits);
    for i in 0..3 {
        let path = format!("/repos/a/b/issues/{i}");
        assert_eq!(emu.handle_at(&get(&path), secs(i)).status, 200);
    }
    let r = emu.handle_at(&get("/x"), secs(100));
    assert_eq!(r.status, 429);
    assert_eq!(r.header("x-ratelimit-remaining"), Some("0"));
    assert_eq!(r.header("retry-after"), None);
    assert!(r.body.contains("API rate limit exceeded for user ID"));
    assert_eq!(
        emu.lockouts(),
        vec![Lockout {
            start: secs(2),
            end: secs(3_600),
            cause: LockoutCause::Primary
        }]
    );
    assert_eq!(emu.handle_at(&get("/x"), secs(3_600)).status, 200);
}

#[test]
fn default_primary_budget_is_5000_and_403() {
    let (emu, _clock) = emu(Limits {
        points_per_window: u32::MAX,
        ..Limits::github()
    });
    for _ in 0..5_000 {
        assert_eq!(emu.handle(&get("/repos/a/b")).status, 200);
    }
    let r = emu.handle(&get("/repos/a/b"));
    assert_eq!(r.status, 403);
    assert_eq!(
        emu.log().last().map(|e| e.outcome),
        Some(Outcome::PrimaryExhausted)
    );
}

#[test]
fn arrive_counts_only_requests_that_arrived_before() {
    let limits = Limits {
        max_concurrency: 2,
        ..Limits::github()
    };
    let (emu, _clock) = emu(limits);
    // Two arrive and are served: neither is judged against a later arrival.
    assert_eq!(emu.arrive(&get("/a")).status, 200);
    assert_eq!(emu.arrive(&get("/b")).status, 200);
    let third = emu.arrive(&get("/c"));
    assert_eq!(third.status, 403);
    assert_eq!(
        emu.log().last().map(|e| e.outcome),
        Some(Outcome::SecondaryBreach(SecondaryCause::Concurrency))
    );
    for _ in 0..3 {
        emu.end("tok");
    }
    assert_eq!(emu.snapshot("tok", Duration::ZERO).unwrap().in_flight, 0);
}

#[test]
fn concurrency_over_100_in_flight_is_a_secondary_breach() {
    let (emu, _clock) = emu(Limits::github());
    for _ in 0..100 {
        emu.begin("tok");
    }
    assert_eq!(emu.handle(&get("/a")).status, 200); // the 100th in flight is fine
    emu.begin("tok");
    let r = emu.handle(&get("/a"));
    assert_eq!(r.status, 403);
    assert!(r.body.contains("exceeded a secondary rate limit"));
    assert_eq!(
        emu.log().last().map(|e| e.outcome),
        Some(Outcome::SecondaryBreach(SecondaryCause::Concurrency))
    );
    emu.end("tok");
    assert_eq!(
        emu.snapshot("tok", Duration::ZERO).map(|s| s.in_flight),
        Some(100)
    );
}

#[test]
fn points_per_endpoint_per_minute_read_1_write_5() {
    let limits = Limits {
        extend_penalty_on_blocked_request: false,
        ..Limits::github()
    };
    let (emu, _clock) = emu(limits);
    // 895 reads + one write (5 points) = 900 points on /repos/a/b/issues/{id}.
    for i in 0..895 {
        let r = emu.handle_at(&get(&format!("/repos/a/b/issues/{i}")), Duration::ZERO);
        assert_eq!(r.status, 200);
    }
    let write = Request::new("tok", "PATCH", "/repos/a/b/issues/7", "d", Priority::P1);
    assert_eq!(emu.handle_at(&write, secs(1)).status, 200);
    // Another endpoint has its own budget.
    assert_eq!(
        emu.handle_at(&get("/repos/a/b/pulls/1"), secs(2)).status,
        200
    );
    let r = emu.handle_at(&get("/repos/a/b/issues/1"), secs(3));
    assert_eq!(r.status, 403);
    assert_eq!(
        emu.log().last().map(|e| e.outcome),
        Some(Outcome::SecondaryBreach(SecondaryCause::Points))
    );
    // The penalty ends at 63 s; by then the reads of t = 0 have left the window.
    assert_eq!(
        emu.handle_at(&get("/repos/a/b/issues/1"), secs(63)).status,
        200
    );
}

#[test]
fn content_creation_80_per_minute() {
    let (emu, _clock) = emu(Limits::github());
    for i in 0..80 {
        let path = format!("/repos/a/b/issues/{i}/comments");
        assert_eq!(emu.handle_at(&post(&path), Duration::ZERO).status, 201);
    }
    let r = emu.handle_at(&post("/repos/a/b/issues/99/comments"), secs(59));
    assert_eq!(r.status, 403);
    assert!(r.body.contains("temporarily blocked from content creation"));
    assert_eq!(
        emu.log().last().map(|e| e.outcome),
        Some(Outcome::SecondaryBreach(SecondaryCause::ContentPerMinute))
    );
}

#[test]
fn content_creation_500_per_hour() {
    let (emu, _clock) = emu(Limits::github());
    // 50 a minute for 10 minutes: under 80/min, but 500 in the hour.
    for i in 0..500u64 {
        let at = Duration::from_millis(i * 1_200);
        let path = format!("/repos/a/b/issues/{i}/comments");
        assert_eq!(emu.handle_at(&post(&path), at).status, 201, "request {i}");
    }
    let r = emu.handle_at(&post("/repos/a/b/issues/1/comments"), secs(1_000));
    assert_eq!(r.status, 403);
    assert_eq!(
        emu.log().last().map(|e| e.outcome),
        Some(Outcome::SecondaryBreach(SecondaryCause::ContentPerHour))
    );
}

#[test]
fn penalty_box_rejects_until_it_ends_and_primary_headers_show_quota_left() {
    let limits = Limits {
        content_per_minute: 1,
        extend_penalty_on_blocked_request: false,
        retry_after_probability: 1.0,
        ..Limits::github()
    };
    let (emu, _clock) = emu(limits);
    assert_eq!(emu.handle_at(&post("/r/a/b/issues"), secs(0)).status, 201);
    let r = emu.handle_at(&post("/r/a/b/issues"), secs(10));
    assert_eq!(r.status, 403);
    assert_eq!(r.header("retry-after"), Some("60"));
    // Any request, even a read, is in the box; the quota still shows plenty left.
    let r = emu.handle_at(&get("/r/a/b"), Duration::from_millis(30_500));
    assert_eq!(r.status, 403);
    assert_eq!(r.header("retry-after"), Some("40")); // 39.5 s, rounded up
    assert_eq!(r.header("x-ratelimit-remaining"), Some("4997"));
    assert_eq!(
        emu.log().last().map(|e| e.outcome),
        Some(Outcome::PenaltyBox)
    );
    assert_eq!(emu.handle_at(&get("/r/a/b"), secs(70)).status, 200);
    assert_eq!(emu.lockouts()[0].length(), secs(60));
}

#[test]
fn penalty_extends_while_requests_keep_coming_when_configured() {
    let limits = Limits {
        content_per_minute: 1,
        penalty: secs(30),
        ..Limits::github()
    };
    let (emu, _clock) = emu(limits);
    emu.handle_at(&post("/r/a/b/issues"), secs(0));
    emu.handle_at(&post("/r/a/b/issues"), secs(1)); // breach: blocked until 31
    assert_eq!(emu.handle_at(&get("/r"), secs(20)).status, 403); // now until 50
    assert_eq!(emu.handle_at(&get("/r"), secs(40)).status, 403); // now until 70
    assert_eq!(emu.handle_at(&get("/r"), secs(70)).status, 200);
    assert_eq!(emu.lockouts()[0].start, secs(1));
    assert_eq!(emu.lockouts()[0].end, secs(70));
}

#[test]
fn retry_after_is_sent_with_the_configured_probability_reproducibly() {
    let run = |p: f64, seed: u64| {
        let limits = Limits {
            content_per_minute: 0,
            extend_penalty_on_blocked_request: false,
            retry_after_probability: p,
            ..Limits::github()
        };
        let clock = ManualClock::new();
        let emu = Emulator::new(limits, Arc::new(clock), seed).unwrap();
        (0..400)
            .map(|_| {
                emu.handle(&post("/r/a/b/issues"))
                    .header("retry-after")
                    .is_some()
            })
            .collect::<Vec<_>>()
    };
    assert!(run(0.0, 1).iter().all(|sent| !sent));
    assert!(run(1.0, 1).iter().all(|sent| *sent));
    let half = run(0.5, 9);
    let sent = half.iter().filter(|s| **s).count();
    assert!((140..=260).contains(&sent), "sent {sent} of 400");
    assert_eq!(half, run(0.5, 9), "same seed, same answers");
}

#[test]
fn rejected_requests_spend_primary_quota_only_if_configured() {
    for (spend, expected) in [(true, "4998"), (false, "4999")] {
        let limits = Limits {
            content_per_minute: 1,
            rejected_use_primary: spend,
            ..Limits::github()
        };
        let (emu, _clock) = emu(limits);
        emu.handle(&post("/r/a/b/issues"));
        let r = emu.handle(&post("/r/a/b/issues"));
        assert_eq!(r.status, 403);
        assert_eq!(r.header("x-ratelimit-remaining"), Some(expected));
    }
}

#[test]
fn not_modified_costs_no_primary_quota_and_etag_follows_writes() {
    let (emu, _clock) = emu(Limits::github());
    let first = emu.handle(&get("/repos/a/b/issues"));
    let etag = first.header("etag").unwrap().to_owned();
    let again = emu.handle(&get("/repos/a/b/issues").with_if_none_match(etag.clone()));
    assert_eq!(again.status, 304);
    assert_eq!(again.header("x-ratelimit-remaining"), Some("4999"));
    assert_eq!(
        emu.handle(&post("/repos/a/b/issues/3/comments")).status,
        201
    );
    let changed = emu.handle(&get("/repos/a/b/issues").with_if_none_match(etag));
    assert_eq!(changed.status, 200);
    assert_eq!(changed.header("x-ratelimit-remaining"), Some("4997"));
}

#[test]
fn not_modified_is_charged_when_conditional_requests_are_not_free() {
    let (emu, _clock) = emu(Limits {
        conditional_requests_free: false,
        ..Limits::github()
    });
    let etag = emu.handle(&get("/a")).header("etag").unwrap().to_owned();
    let r = emu.handle(&get("/a").with_if_none_match(etag));
    assert_eq!(r.status, 304);
    assert_eq!(r.header("x-ratelimit-remaining"), Some("4998"));
}

#[test]
fn scripted_block_rejects_everything_inside_its_window() {
    let (emu, _clock) = emu(Limits {
        retry_after_probability: 1.0,
        ..Limits::github()
    });
    emu.script_block(secs(100), secs(60));
    assert_eq!(emu.handle_at(&get("/a"), secs(99)).status, 200);
    let r = emu.handle_at(&get("/a"), secs(130));
    assert_eq!(r.status, 403);
    assert_eq!(r.header("retry-after"), Some("30"));
    assert_eq!(emu.log().last().map(|e| e.outcome), Some(Outcome::Scripted));
    assert_eq!(emu.handle_at(&get("/a"), secs(160)).status, 200);
}

#[test]
fn tokens_have_separate_budgets() {
    let (emu, _clock) = emu(Limits::github());
    emu.handle(&get("/a"));
    let other = Request::new("other", "GET", "/a", "ralph", Priority::P2);
    assert_eq!(
        emu.handle(&other).header("x-ratelimit-remaining"),
        Some("4999")
    );
}

#[test]
fn log_records_agent_priority_time_and_status() {
    let (emu, clock) = emu(Limits::github());
    clock.advance(secs(5));
    emu.handle(&Request::new("t", "GET", "/a", "picard", Priority::P0));
    let log = emu.log();
    assert_eq!(log.len(), 1);
    assert_eq!(
        (
            log[0].agent.as_str(),
            log[0].priority,
            log[0].at,
            log[0].status
        ),
        ("picard", Priority::P0, secs(5), 200)
    );
}

#[test]
fn invalid_limits_name_the_field() {
    let clock = ManualClock::new();
    let err = Emulator::new(
        Limits {
            retry_after_probability: 1.5,
            ..Limits::github()
        },
        Arc::new(clock),
        1,
    )
    .unwrap_err();
    assert_eq!(err.field, "retry_after_probability");
    assert!(err.to_string().contains("retry_after_probability"));
}

#[test]
fn kinds_are_inferred_from_method_and_path() {
    assert_eq!(Kind::infer("GET", "/repos/a/b/pulls"), Kind::Read);
    assert_eq!(
        Kind::infer("POST", "/repos/a/b/pulls"),
        Kind::ContentCreating
    );
    assert_eq!(
        Kind::infer("post", "/repos/a/b/pulls/3/reviews"),
        Kind::ContentCreating
    );
    assert_eq!(Kind::infer("PUT", "/repos/a/b/contents/x.rs"), Kind::Write);
    assert_eq!(Kind::infer("POST", "/repos/a/b/git/refs"), Kind::Write);
}

#[test]
fn g8_points_writes_to_different_files_share_the_contents_endpoint() {
    // `PUT /repos/{owner}/{repo}/contents/{path}` is one endpoint whatever the file: 180
    // commits of 5 points fill its 900 points a minute, the 181st breaches.
    let (emu, _clock) = emu(Limits::github());
    for i in 0..180 {
        let put = Request::new(
            "tok",
            "PUT",
            format!("/repos/a/b/contents/src/pr{i}/f{i}.rs"),
            "d",
            Priority::P1,
        );
        assert_eq!(emu.handle_at(&put, secs(i / 4)).status, 200, "file {i}");
    }
    let put = Request::new(
        "tok",
        "PUT",
        "/repos/a/b/contents/README.md",
        "d",
        Priority::P1,
    );
    assert_eq!(emu.handle_at(&put, secs(50)).status, 403);
    assert_eq!(
        emu.log().last().map(|e| e.outcome),
        Some(Outcome::SecondaryBreach(SecondaryCause::Points))
    );
}

#[test]
fn g8_a_filtered_list_changes_when_an_item_below_it_is_written() {
    // Ralph polls `/issues?state=open`: a comment on one of those issues changes the list,
    // so the next conditional poll is a 200 that costs quota, not a free 304.
    let (emu, _clock) = emu(Limits::github());
    let first = emu.handle(&get("/repos/a/b/issues?state=open"));
    let etag = first.header("etag").unwrap().to_owned();
    assert_eq!(
        emu.handle(&post("/repos/a/b/issues/3/comments")).status,
        201
    );
    let again = emu.handle(&get("/repos/a/b/issues?state=open").with_if_none_match(etag));
    assert_eq!(again.status, 200);
    assert_eq!(again.header("x-ratelimit-remaining"), Some("4997"));
}
