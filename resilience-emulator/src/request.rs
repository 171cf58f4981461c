//! What a client sends and what the emulator answers.

use std::fmt;
use std::time::Duration;

/// How a request counts against the secondary limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Kind {
    /// GET/HEAD/OPTIONS: 1 point.
    Read,
    /// POST/PATCH/PUT/DELETE that creates no content: 5 points.
    Write,
    /// A write that creates content (issue, comment, pull request, review): 5 points and a
    /// slot of the content-creation limits.
    ContentCreating,
}

impl Kind {
    /// The kind GitHub would assign to `method` on `path`: GETs read; POSTs that open pull
    /// requests, issues, comments or reviews create content; other mutations write.
    pub fn infer(method: &str, path: &str) -> Self {
        match method.to_ascii_uppercase().as_str() {
            "GET" | "HEAD" | "OPTIONS" => Self::Read,
            "POST"
                if ["/pulls", "/issues", "/comments", "/reviews"]
                    .iter()
                    .any(|s| path.trim_end_matches('/').ends_with(s)) =>
            {
                Self::ContentCreating
            }
            _ => Self::Write,
        }
    }

    /// Whether this kind mutates (costs write points).
    pub fn is_write(self) -> bool {
        !matches!(self, Self::Read)
    }
}

/// An agent's priority, recorded in the request log (P0 critical … P2 background).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum Priority {
    /// Critical (Picard).
    P0,
    /// Standard.
    P1,
    /// Background (Ralph).
    P2,
}

impl Priority {
    /// 0, 1 or 2.
    pub fn index(self) -> usize {
        self as usize
    }

    /// Parses `0`/`1`/`2` or `P0`/`P1`/`P2`, case-insensitively.
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().trim_start_matches(['P', 'p']) {
            "0" => Some(Self::P0),
            "1" => Some(Self::P1),
            "2" => Some(Self::P2),
            _ => None,
        }
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "P{}", self.index())
    }
}

/// One API request as the emulator sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The token the request authenticates with; limits are kept per token.
    pub token: String,
    /// HTTP method, e.g. `GET`.
    pub method: String,
    /// Path, e.g. `/repos/acme/app/pulls`.
    pub path: String,
    /// How it counts against secondary limits.
    pub kind: Kind,
    /// The calling agent, for the log.
    pub agent: String,
    /// The calling agent's priority, for the log.
    pub priority: Priority,
    /// An `If-None-Match` validator, if the request is conditional.
    pub if_none_match: Option<String>,
    /// When the client's rate-limit scheduler let this request go, on the emulator's clock,
    /// if the client says so (header `x-emu-admitted-at`, in seconds). Only the log reads it:
    /// a request admitted before a P0 call was wanted, but still on its way when the P0 call
    /// waits, was not put ahead of that call by the scheduler.
    pub admitted: Option<Duration>,
}

impl Request {
    /// A request whose kind is inferred from method and path.
    pub fn new(
        token: impl Into<String>,
        method: impl Into<String>,
        path: impl Into<String>,
        agent: impl Into<String>,
        priority: Priority,
    ) -> Self {
        let method = method.into();
        let path = path.into();
        Self {
            kind: Kind::infer(&method, &path),
            token: token.into(),
            method,
            path,
            agent: agent.into(),
            priority,
            if_none_match: None,
            admitted: None,
        }
    }

    /// The same request with an explicit kind.
    pub fn with_kind(mut self, kind: Kind) -> Self {
        self.kind = kind;
        self
    }

    /// The same request stamped with the instant its client's scheduler admitted it.
    pub fn with_admitted(mut self, at: Duration) -> Self {
        self.admitted = Some(at);
        self
    }

    /// The same request made conditional on `etag`.
    pub fn with_if_none_match(mut self, etag: impl Into<String>) -> Self {
        self.if_none_match = Some(etag.into());
        self
    }
}

/// The emulator's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// HTTP status.
    pub status: u16,
    /// Headers, lower-case names, in the order sent.
    pub headers: Vec<(String, String)>,
    /// JSON body.
    pub body: String,
}

impl Response {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// A header parsed as an unsigned number.
    pub fn header_u64(&self, name: &str) -> Option<u64> {
        self.header(name)?.trim().parse().ok()
    }

    /// Whether the request succeeded (2xx or 304).
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status) || self.status == 304
    }

    /// Whether this is a rate-limit rejection (403/429 carrying a rate-limit message).
    pub fn is_rate_limited(&self) -> bool {
        (self.status == 403 || self.status == 429) && self.body.contains("rate limit")
    }
}
