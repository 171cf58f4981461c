//! The emulator on loopback HTTP/1.1.
//!
//! Requests are read as GitHub would: the token from `Authorization: token …` or
//! `Bearer …`, the kind from method and path (override with `x-emu-kind: read|write|content`),
//! `If-None-Match` for conditional requests. Three headers only the emulator reads feed its log:
//! `x-agent`, `x-priority` (`P0`/`P1`/`P2`) and `x-emu-admitted-at` (when the client's
//! scheduler let the request go, in emulator seconds). Each request is held in flight for the
//! configured latency (the concurrency limit sees it), measured on the emulator's clock.
//! `GET /_emu/log` and `GET /_emu/lockouts` return the log and the lockouts as JSON.

use crate::model::Emulator;
use crate::request::{Kind, Priority, Request, Response};
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use resilience_core::sleep::AsyncSleeper;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// How long the emulated API takes to answer, per kind, in emulator time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Latency {
    /// Reads.
    pub read: Duration,
    /// Writes.
    pub write: Duration,
    /// Content-creating writes.
    pub content: Duration,
}

impl Latency {
    /// The latency of a request of `kind`.
    pub fn of(&self, kind: Kind) -> Duration {
        match kind {
            Kind::Read => self.read,
            Kind::Write => self.write,
            Kind::ContentCreating => self.content,
        }
    }
}

impl Default for Latency {
    fn default() -> Self {
        Self {
            read: Duration::from_millis(200),
            write: Duration::from_millis(500),
            content: Duration::from_millis(800),
        }
    }
}

/// A running loopback server; dropping it (or [`shutdown`](Self::shutdown)) stops accepting.
#[derive(Debug)]
pub struct EmulatorServer {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
}

impl EmulatorServer {
    /// Binds `127.0.0.1:0` and serves `emulator`, holding each request for `latency`
    /// through `sleeper` (so a scaled sleeper makes a scaled server).
    pub async fn start(
        emulator: Arc<Emulator>,
        latency: Latency,
        sleeper: Arc<dyn AsyncSleeper>,
    ) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let (stop, mut stopped) = watch::channel(false);
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    biased;
                    _ = stopped.changed() => break,
                    a = listener.accept() => a,
                };
                let Ok((stream, _)) = accepted else { continue };
                let (emu, sleeper) = (emulator.clone(), sleeper.clone());
                tokio::spawn(async move {
                    let service = service_fn(move |req| {
                        let (emu, sleeper) = (emu.clone(), sleeper.clone());
                        async move {
                            Ok::<_, Infallible>(serve_one(&emu, latency, &*sleeper, req).await)
                        }
                    });
                    // A client hanging up mid-request is its business; nothing to report.
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Ok(Self { addr, stop })
    }

    /// The bound address (`127.0.0.1:<ephemeral port>`).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL, e.g. `http://127.0.0.1:40123`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops accepting connections.
    pub fn shutdown(&self) {
        let _ = self.stop.send(true);
    }
}

impl Drop for EmulatorServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Ends the in-flight mark even if the connection is dropped mid-sleep.
struct InFlight<'a>(&'a Emulator, String);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.end(&self.1);
    }
}

async fn serve_one(
    emu: &Emulator,
    latency: Latency,
    sleeper: &dyn AsyncSleeper,
    req: hyper::Request<Incoming>,
) -> hyper::Response<Full<Bytes>> {
    let path = req
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    if req.method() == hyper::Method::GET {
        if path == "/_emu/log" {
            return json(serde_json::to_string(&emu.log()));
        }
        if path == "/_emu/lockouts" {
            return json(serde_json::to_string(&emu.lockouts()));
        }
    }
    let request = to_request(&req, path);
    let response = emu.arrive(&request);
    let _in_flight = InFlight(emu, request.token.clone());
    sleeper.sleep(latency.of(request.kind)).await;
    to_hyper(response)
}

fn header<'a>(req: &'a hyper::Request<Incoming>, name: &str) -> Option<&'a str> {
    req.headers().get(name).and_then(|v| v.to_str().ok())
}

fn to_request(req: &hyper::Request<Incoming>, path: String) -> Request {
    let token = header(req, "authorization")
        .map(|a| {
            a.trim_start_matches("token ")
                .trim_start_matches("Bearer ")
                .trim()
                .to_owned()
        })
        .unwrap_or_else(|| "anonymous".to_owned());
    let agent = header(req, "x-agent").unwrap_or("unknown").to_owned();
    let priority = header(req, "x-priority")
        .and_then(Priority::parse)
        .unwrap_or(Priority::P1);
    let mut request = Request::new(token, req.method().as_str(), path, agent, priority);
    match header(req, "x-emu-kind") {
        Some("read") => request.kind = Kind::Read,
        Some("write") => request.kind = Kind::Write,
        Some("content") => request.kind = Kind::ContentCreating,
        _ => {}
    }
    if let Some(etag) = header(req, "if-none-match") {
        request.if_none_match = Some(etag.to_owned());
    }
    request.admitted = header(req, "x-emu-admitted-at")
        .and_then(|s| s.parse::<f64>().ok())
        .and_then(|s| Duration::try_from_secs_f64(s).ok());
    request
}

fn to_hyper(response: Response) -> hyper::Response<Full<Bytes>> {
    let mut builder = hyper::Response::builder().status(response.status);
    for (k, v) in &response.headers {
        builder = builder.header(k, v);
    }
    if !response.body.is_empty() {
        builder = builder.header("content-type", "application/json; charset=utf-8");
    }
    builder
        .body(Full::new(Bytes::from(response.body)))
        .unwrap_or_else(|_| internal_error())
}

fn json(body: Result<String, serde_json::Error>) -> hyper::Response<Full<Bytes>> {
    match body {
        Ok(body) => hyper::Response::builder()
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body)))
            .unwrap_or_else(|_| internal_error()),
        Err(_) => internal_error(),
    }
}

fn internal_error() -> hyper::Response<Full<Bytes>> {
    let mut r = hyper::Response::new(Full::new(Bytes::from_static(
        b"{\"message\":\"emulator error\"}",
    )));
    *r.status_mut() = hyper::StatusCode::INTERNAL_SERVER_ERROR;
    r
}
