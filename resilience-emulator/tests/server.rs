//! The loopback HTTP server and the HTTP transport, end to end on real sockets.

use resilience_core::clock::ManualClock;
use resilience_core::sleep::AsyncSleeper;
use resilience_emulator::server::{EmulatorServer, Latency};
use resilience_emulator::squad::{Http, Transport};
use resilience_emulator::time::ScaledSleeper;
use resilience_emulator::{Emulator, Kind, Limits, Outcome, Priority, Request};
use std::sync::Arc;
use std::time::Duration;

fn no_latency() -> Latency {
    Latency {
        read: Duration::ZERO,
        write: Duration::ZERO,
        content: Duration::ZERO,
    }
}

async fn start(limits: Limits) -> (Arc<Emulator>, EmulatorServer, Http) {
    let clock = ManualClock::new();
    let emu = Arc::new(Emulator::new(limits, Arc::new(clock), 3).unwrap());
    let sleeper: Arc<dyn AsyncSleeper> = Arc::new(ScaledSleeper::new(1.0));
    let server = EmulatorServer::start(emu.clone(), no_latency(), sleeper)
        .await
        .unwrap();
    assert!(server.addr().ip().is_loopback());
    assert_ne!(server.addr().port(), 0);
    let http = Http::new(server.url());
    (emu, server, http)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_github_headers_and_logs_agent_and_priority() {
    let (emu, _server, http) = start(Limits::github()).await;
    let r = http
        .send(Request::new(
            "tok",
            "GET",
            "/repos/a/b",
            "picard",
            Priority::P0,
        ))
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("x-ratelimit-limit"), Some("5000"));
    assert_eq!(r.header("x-ratelimit-remaining"), Some("4999"));
    assert_eq!(r.header("x-ratelimit-resource"), Some("core"));
    assert!(r.header("x-ratelimit-reset").is_some());
    let log = emu.log();
    assert_eq!(log.len(), 1);
    assert_eq!(
        (log[0].agent.as_str(), log[0].priority),
        ("picard", Priority::P0)
    );
}

/// A client says when its scheduler admitted a request; the log keeps it beside the arrival
/// (the inversion measure dates requests by it), and a request that says nothing has none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_logs_the_admission_instant_a_client_sends() {
    let (emu, _server, http) = start(Limits::github()).await;
    let admitted = Duration::from_nanos(907_543_000_123);
    let req = Request::new("tok", "GET", "/repos/a/b", "ralph", Priority::P2);
    assert_eq!(
        http.send(req.clone().with_admitted(admitted)).await.status,
        200
    );
    assert_eq!(http.send(req).await.status, 200);
    let log = emu.log();
    assert_eq!(log[0].admitted, Some(admitted));
    assert_eq!(log[1].admitted, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secondary_limit_over_http_is_403_with_message_and_quota_left() {
    let limits = Limits {
        content_per_minute: 1,
        retry_after_probability: 1.0,
        ..Limits::github()
    };
    let (emu, _server, http) = start(limits).await;
    let pr = || Request::new("tok", "POST", "/repos/a/b/pulls", "data", Priority::P1);
    assert_eq!(http.send(pr()).await.status, 201);
    let r = http.send(pr()).await;
    assert_eq!(r.status, 403);
    assert!(r.body.contains("secondary rate limit"));
    assert_eq!(r.header("retry-after"), Some("60"));
    assert_eq!(r.header("x-ratelimit-remaining"), Some("4998"));
    assert_eq!(emu.log()[1].kind, Kind::ContentCreating);
    assert!(matches!(emu.log()[1].outcome, Outcome::SecondaryBreach(_)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conditional_requests_travel_as_if_none_match() {
    let (_emu, _server, http) = start(Limits::github()).await;
    let first = http
        .send(Request::new(
            "tok",
            "GET",
            "/repos/a/b/issues",
            "ralph",
            Priority::P2,
        ))
        .await;
    let etag = first.header("etag").unwrap().to_owned();
    let again = http
        .send(
            Request::new("tok", "GET", "/repos/a/b/issues", "ralph", Priority::P2)
                .with_if_none_match(etag),
        )
        .await;
    assert_eq!(again.status, 304);
    assert_eq!(again.header("x-ratelimit-remaining"), Some("4999"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrency_is_counted_while_requests_are_held_in_flight() {
    let limits = Limits {
        max_concurrency: 2,
        ..Limits::github()
    };
    let clock = ManualClock::new();
    let emu = Arc::new(Emulator::new(limits, Arc::new(clock), 3).unwrap());
    let slow = Latency {
        read: Duration::from_millis(300),
        ..no_latency()
    };
    let sleeper: Arc<dyn AsyncSleeper> = Arc::new(ScaledSleeper::new(1.0));
    let server = EmulatorServer::start(emu.clone(), slow, sleeper)
        .await
        .unwrap();
    let http = Arc::new(Http::new(server.url()));
    let mut set = tokio::task::JoinSet::new();
    for i in 0..3 {
        let http = http.clone();
        set.spawn(async move {
            http.send(Request::new(
                "tok",
                "GET",
                format!("/r/{i}"),
                "data",
                Priority::P1,
            ))
            .await
            .status
        });
    }
    let mut statuses = Vec::new();
    while let Some(s) = set.join_next().await {
        statuses.push(s.unwrap());
    }
    statuses.sort_unstable();
    assert_eq!(statuses, vec![200, 200, 403]);
    assert_eq!(emu.snapshot("tok", Duration::ZERO).unwrap().in_flight, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_endpoint_returns_json() {
    let (_emu, server, http) = start(Limits::github()).await;
    http.send(Request::new("tok", "GET", "/a", "troi", Priority::P1))
        .await;
    let r = http
        .send(Request::new("x", "GET", "/_emu/log", "x", Priority::P1))
        .await;
    assert_eq!(r.status, 200);
    let log: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(log[0]["agent"], "troi");
    server.shutdown();
}
