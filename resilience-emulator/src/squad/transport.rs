//! How agents reach the emulator: in process, or over loopback HTTP.

use crate::model::Emulator;
use crate::request::{Request, Response};
use crate::server::Latency;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use resilience_core::sleep::AsyncSleeper;
use std::future::Future;
use std::sync::Arc;

/// Sends a request and returns the answer.
pub trait Transport: Send + Sync + 'static {
    /// Sends `request`; a transport failure comes back as status 0.
    fn send(&self, request: Request) -> impl Future<Output = Response> + Send;
}

/// Calls the model directly, holding each request in flight for its latency.
#[derive(Debug, Clone)]
pub struct InProcess {
    emulator: Arc<Emulator>,
    latency: Latency,
    sleeper: Arc<dyn AsyncSleeper>,
}

impl InProcess {
    /// A transport to `emulator` whose requests take `latency` (slept on `sleeper`).
    pub fn new(emulator: Arc<Emulator>, latency: Latency, sleeper: Arc<dyn AsyncSleeper>) -> Self {
        Self {
            emulator,
            latency,
            sleeper,
        }
    }
}

impl Transport for InProcess {
    async fn send(&self, request: Request) -> Response {
        let response = self.emulator.arrive(&request);
        self.sleeper.sleep(self.latency.of(request.kind)).await;
        self.emulator.end(&request.token);
        response
    }
}

/// Calls an [`EmulatorServer`](crate::server::EmulatorServer) (or anything GitHub-shaped) over
/// HTTP/1.1, sending the agent's name and priority as `x-agent`/`x-priority`.
#[derive(Debug, Clone)]
pub struct Http {
    base: String,
    client: Client<HttpConnector, Full<Bytes>>,
}

impl Http {
    /// A transport to `base`, e.g. `http://127.0.0.1:40123`.
    pub fn new(base: impl Into<String>) -> Self {
        let client = Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(128)
            .build_http();
        Self {
            base: base.into(),
            client,
        }
    }
}

fn failure(message: String) -> Response {
    Response {
        status: 0,
        headers: Vec::new(),
        body: message,
    }
}

impl Transport for Http {
    async fn send(&self, request: Request) -> Response {
        let kind = match request.kind {
            crate::Kind::Read => "read",
            crate::Kind::Write => "write",
            crate::Kind::ContentCreating => "content",
        };
        let mut builder = hyper::Request::builder()
            .method(request.method.as_str())
            .uri(format!("{}{}", self.base, request.path))
            .header("authorization", format!("token {}", request.token))
            .header("x-agent", &request.agent)
            .header("x-priority", request.priority.to_string())
            .header("x-emu-kind", kind);
        if let Some(etag) = &request.if_none_match {
            builder = builder.header("if-none-match", etag);
        }
        if let Some(at) = request.admitted {
            builder = builder.header("x-emu-admitted-at", format!("{:.9}", at.as_secs_f64()));
        }
        let req = match builder.body(Full::new(Bytes::new())) {
            Ok(r) => r,
            Err(e) => return failure(format!("bad request: {e}")),
        };
        let resp = match self.client.request(req).await {
            Ok(r) => r,
            Err(e) => return failure(format!("transport error: {e}")),
        };
        let status = resp.status().as_u16();
        let headers = resp
            .headers()
            .iter()
            .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
            .collect();
        let body = match resp.into_body().collect().await {
            Ok(b) => String::from_utf8_lossy(&b.to_bytes()).into_owned(),
            Err(e) => return failure(format!("transport error: {e}")),
        };
        Response {
            status,
            headers,
            body,
        }
    }
}
