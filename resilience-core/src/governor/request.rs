//! What an agent asks the governor for.

use std::time::Duration;

/// The kind of HTTP call, which decides which pacing rules (G8) count it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RequestKind {
    /// GET, HEAD, OPTIONS: one secondary-limit point on GitHub.
    Read,
    /// POST, PATCH, PUT, DELETE that creates no content: five points, a mutation.
    Write,
    /// A content-creating write (a PR, issue, comment, review): five points, a mutation, and
    /// counted by GitHub's content-creation limits (80/min, 500/h).
    Create,
}

impl RequestKind {
    /// Whether this is a mutation (write or create).
    #[inline]
    pub const fn is_write(self) -> bool {
        !matches!(self, Self::Read)
    }
}

/// One call an agent wants to make: its kind, its primary-quota cost, its secondary-limit
/// points, optionally the endpoint (for per-endpoint rules) and the longest it will wait.
///
/// ```
/// use resilience_core::governor::{Request, RequestKind};
/// use std::time::Duration;
///
/// let r = Request::create()
///     .with_endpoint("POST /repos/{owner}/{repo}/pulls")
///     .with_max_wait(Duration::from_secs(5));
/// assert_eq!(r.kind(), RequestKind::Create);
/// assert_eq!((r.cost(), r.points()), (1, 5));
/// assert_eq!(Request::from_method("get").points(), 1);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request<'a> {
    kind: RequestKind,
    cost: u32,
    points: u32,
    endpoint: Option<&'a str>,
    max_wait: Option<Duration>,
}

impl<'a> Request<'a> {
    /// A request of `kind` with GitHub's default weights: cost 1, points 1 for reads and 5
    /// for writes.
    #[inline]
    pub const fn new(kind: RequestKind) -> Self {
        Self {
            kind,
            cost: 1,
            points: if kind.is_write() { 5 } else { 1 },
            endpoint: None,
            max_wait: None,
        }
    }

    /// A read (GET): cost 1, 1 point.
    #[inline]
    pub const fn read() -> Self {
        Self::new(RequestKind::Read)
    }

    /// A mutation that creates no content: cost 1, 5 points.
    #[inline]
    pub const fn write() -> Self {
        Self::new(RequestKind::Write)
    }

    /// A content-creating mutation: cost 1, 5 points, counted by content-creation rules.
    #[inline]
    pub const fn create() -> Self {
        Self::new(RequestKind::Create)
    }

    /// A read for GET/HEAD/OPTIONS (any case), otherwise a write. Whether a write creates
    /// content is not visible from the method; use [`create`](Self::create) for those.
    pub fn from_method(method: &str) -> Self {
        let read = ["GET", "HEAD", "OPTIONS"]
            .iter()
            .any(|m| m.eq_ignore_ascii_case(method.trim()));
        if read {
            Self::read()
        } else {
            Self::write()
        }
    }

    /// Sets the primary-quota cost (requests counted against `x-ratelimit-limit`).
    #[inline]
    pub const fn with_cost(mut self, cost: u32) -> Self {
        self.cost = cost;
        self
    }

    /// Sets the secondary-limit points.
    #[inline]
    pub const fn with_points(mut self, points: u32) -> Self {
        self.points = points;
        self
    }

    /// Names the endpoint (e.g. a route template), used by per-endpoint pacing rules.
    #[inline]
    pub const fn with_endpoint(mut self, endpoint: &'a str) -> Self {
        self.endpoint = Some(endpoint);
        self
    }

    /// The longest this request will wait in total: a longer wait is refused as shed, with
    /// the time it would have taken as the retry hint.
    #[inline]
    pub const fn with_max_wait(mut self, max_wait: Duration) -> Self {
        self.max_wait = Some(max_wait);
        self
    }

    /// The kind.
    #[inline]
    pub const fn kind(&self) -> RequestKind {
        self.kind
    }

    /// The primary-quota cost.
    #[inline]
    pub const fn cost(&self) -> u32 {
        self.cost
    }

    /// The secondary-limit points.
    #[inline]
    pub const fn points(&self) -> u32 {
        self.points
    }

    /// The endpoint, if named.
    #[inline]
    pub const fn endpoint(&self) -> Option<&'a str> {
        self.endpoint
    }

    /// The longest total wait accepted, if bounded.
    #[inline]
    pub const fn max_wait(&self) -> Option<Duration> {
        self.max_wait
    }
}
