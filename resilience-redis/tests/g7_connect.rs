//! G7 at start: connecting to something that is not a usable Redis (a port that never
//! answers, another protocol, a wrong password, a bad URL) fails in time with an error that
//! names the URL and never shows the password.

mod common;

use common::node::{cfg, MS};
use common::server::{server, skip};
use resilience_redis::{RedisQuota, RedisQuotaError};
use std::time::{Duration, Instant};

/// A loopback listener that accepts connections and answers each with `reply` (nothing if
/// empty), keeping the socket open; its port.
async fn fake_server(reply: &'static [u8]) -> (u16, tokio::task::JoinHandle<()>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let l = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = l.local_addr().expect("addr").port();
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((mut s, _)) = l.accept().await {
            let mut buf = [0_u8; 1024];
            let _ = tokio::time::timeout(MS(200), s.read(&mut buf)).await;
            if !reply.is_empty() {
                let _ = s.write_all(reply).await;
            }
            held.push(s);
        }
    });
    (port, task)
}

async fn connect_error(url: &str) -> (RedisQuotaError, Duration) {
    let t = Instant::now();
    let e = tokio::time::timeout(
        Duration::from_secs(10),
        RedisQuota::connect(cfg(url, "p", "n")),
    )
    .await
    .expect("connect hung for 10 s")
    .expect_err("connected to something that is not Redis");
    (e, t.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_connect_to_a_port_that_never_answers_fails_in_time_naming_the_url() {
    let (port, task) = fake_server(b"").await;
    let url = format!("redis://bob:pa55word@127.0.0.1:{port}/0");
    let (e, took) = connect_error(&url).await;
    let text = e.to_string();
    assert!(matches!(e, RedisQuotaError::Connect { .. }), "{e:?}");
    assert!(took < Duration::from_secs(3), "took {took:?}");
    assert!(
        text.contains(&format!("redis://bob:***@127.0.0.1:{port}/0")),
        "{text}"
    );
    assert!(!text.contains("pa55word"), "{text}");
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_connect_to_a_non_redis_port_fails_in_time_naming_the_url() {
    let (port, task) = fake_server(b"HTTP/1.1 400 Bad Request\r\n\r\n").await;
    let url = format!("redis://:pa55word@127.0.0.1:{port}");
    let (e, took) = connect_error(&url).await;
    let text = e.to_string();
    assert!(matches!(e, RedisQuotaError::Connect { .. }), "{e:?}");
    assert!(took < Duration::from_secs(3), "took {took:?}");
    assert!(
        text.contains(&format!("redis://***@127.0.0.1:{port}")),
        "{text}"
    );
    assert!(!text.contains("pa55word"), "{text}");
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g7_connect_with_a_wrong_password_or_a_bad_url_never_shows_the_password() {
    let Some(srv) = server() else { return };
    if !srv.owned() {
        return skip("needs a redis-server it can configure: RESILIENCE_REDIS_URL is set");
    }
    srv.cmd("CONFIG SET requirepass right-one")
        .expect("requirepass");
    let host = srv.url.trim_start_matches("redis://").to_owned();
    for url in [
        format!("redis://:wr0ngpass@{host}"),
        format!("redis://default:wr0ngpass@{host}/0"),
        format!("redis://ghost:wr0ngpass@{host}"),
        format!("redis://{host}"),
        "redis://default:wr0ngpass@127.0.0.1:99999".to_owned(),
        "redis://default:wr0ngpass@[::1".to_owned(),
        "redis://default:wr0ngpass@127.0.0.1:6379/notadb".to_owned(),
        "http://default:wr0ngpass@127.0.0.1:6379".to_owned(),
        "redis://default:wr0ngpass@127.0.0.1:1/0?password=wr0ngpass".to_owned(),
        "rediss://default:wr0ngpass@127.0.0.1:1".to_owned(),
        "redis+unix:///nonexistent/redis.sock?pass=wr0ngpass".to_owned(),
        "unix:///nonexistent/redis.sock?user=u&pass=wr0ngpass".to_owned(),
        "redis://default:wr0ngpass@x@127.0.0.1:1".to_owned(),
        "wr0ngpass".to_owned(),
    ] {
        let (e, took) = connect_error(&url).await;
        let text = e.to_string();
        assert!(matches!(e, RedisQuotaError::Connect { .. }), "{url}: {e:?}");
        assert!(took < Duration::from_secs(3), "{url}: took {took:?}");
        assert!(!text.contains("wr0ngpass"), "{url}: {text}");
        assert!(!format!("{e:?}").contains("wr0ngpass"), "{url}: {e:?}");
        eprintln!("{url}: {text}");
    }
    // Each says which fix it needs.
    for (url, says) in [
        (
            format!("redis://default:wr0ngpass@{host}"),
            "refused the credentials",
        ),
        (
            format!("redis://:right-one@{host}/99"),
            "answered with an error",
        ),
        (format!("redis://{host}"), "needs a password"),
        ("redis://127.0.0.1:1".to_owned(), "unreachable"),
        ("127.0.0.1:6379".to_owned(), "expected redis://"),
    ] {
        let (e, _) = connect_error(&url).await;
        eprintln!("{url}: {e}");
        assert!(e.to_string().contains(says), "{url}: {e}");
    }
}
