//! What a response said: status, rate-limit headers, and whether it was a rate limit.
//!
//! Build an [`Observation`] from a status and the response's headers; hand it to
//! [`Governor::observe`](super::Governor::observe). Headers read:
//!
//! - `x-ratelimit-limit`, `-remaining`, `-used`, `-reset` (epoch seconds; values below
//!   10⁹ are read as delta seconds, as some APIs send), `-resource`;
//! - `retry-after`, in delay-seconds or as an HTTP-date;
//! - the IETF `RateLimit` / `RateLimit-Policy` fields (and the older `RateLimit-Limit`,
//!   `-Remaining`, `-Reset`); `x-ratelimit-*` wins where both are present.
//!
//! A malformed value is ignored with a `debug` event naming the header (its value
//! sanitized) and counted in [`Observation::ignored_headers`]; nothing here panics.
//!
//! A 429 is always a rate limit. A 403 is one only when the headers say so (remaining 0,
//! or a `retry-after`) or the body does ("secondary rate limit", "rate limit exceeded", …);
//! a plain 403 is a permission error. A 200 whose body carries GraphQL's `"RATE_LIMITED"`
//! error type is a primary limit.

mod httpdate;
pub(crate) mod ietf;

use std::time::Duration;

/// When the quota window resets, as the server said it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetAt {
    /// Seconds since the Unix epoch (GitHub's `x-ratelimit-reset`).
    Epoch(u64),
    /// Seconds from the response (IETF `t` / `reset`).
    After(u64),
}

/// How long the server asked to wait, as it said it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryAfter {
    /// A delay from the response.
    Delay(Duration),
    /// An HTTP-date, as seconds since the Unix epoch.
    At(u64),
}

/// Which limit a rate-limited response hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LimitKind {
    /// The window's quota is spent (remaining 0): wait for reset.
    Primary,
    /// A secondary limit (concurrency, points, content creation) while quota remains.
    Secondary,
}

/// What the body said, from a cheap phrase scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodySignal {
    Secondary,
    Primary,
    Generic,
    GraphqlRateLimited,
}

/// A response as the governor needs it.
///
/// ```
/// use resilience_core::governor::{LimitKind, Observation};
///
/// let obs = Observation::from_headers(403, [
///     ("x-ratelimit-remaining", "4290"),
///     ("retry-after", "60"),
///     ("x-ratelimit-limit", "not-a-number"), // ignored, counted
/// ]);
/// assert_eq!(obs.limit_kind(), Some(LimitKind::Secondary));
/// assert_eq!(obs.ignored_headers(), 1);
/// assert_eq!(Observation::new(403).limit_kind(), None); // a plain permission error
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Observation {
    status: u16,
    limit: Option<u64>,
    remaining: Option<u64>,
    used: Option<u64>,
    reset: Option<ResetAt>,
    resource: Option<Box<str>>,
    retry_after: Option<RetryAfter>,
    ietf_limit: Option<u64>,
    ietf_remaining: Option<u64>,
    ietf_reset: Option<u64>,
    ietf_policy_name: Option<String>,
    ietf_policies: Vec<ietf::Policy>,
    body: Option<BodySignal>,
    ignored: u32,
}

impl Observation {
    /// A response with this status and no headers yet.
    pub fn new(status: u16) -> Self {
        Self {
            status,
            ..Self::default()
        }
    }

    /// No response came back after the request may have been sent: a timeout, a connection
    /// reset. The call counts as spent, and as still on its way until its call bound: the
    /// server may count it after calls granted later, whose readings would not count it.
    /// (A response without rate-limit headers, [`new`](Self::new), did reach the server.)
    /// Its status is 0, and any observation of status 0 is one; it is neither a good
    /// response nor a limit. A request known not to have gone out (a refused connection) is
    /// better released: its quota comes back.
    ///
    /// ```
    /// use resilience_core::governor::Observation;
    ///
    /// let timed_out = Observation::no_response();
    /// assert!(!timed_out.answered());
    /// assert!(Observation::new(500).answered());
    /// ```
    pub fn no_response() -> Self {
        Self::default()
    }

    /// Whether a response came back (not [`no_response`](Self::no_response)).
    pub fn answered(&self) -> bool {
        self.status != 0
    }

    /// A response from its status and headers; names are matched case-insensitively,
    /// values that are not UTF-8 are ignored like any malformed value.
    pub fn from_headers<I, K, V>(status: u16, headers: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<[u8]>,
    {
        let mut obs = Self::new(status);
        for (k, v) in headers {
            obs.add_header_bytes(k.as_ref(), v.as_ref());
        }
        obs
    }

    /// Adds one header (builder form).
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.add_header(name, value);
        self
    }

    /// Adds one header whose value may not be UTF-8.
    pub fn add_header_bytes(&mut self, name: &str, value: &[u8]) {
        match std::str::from_utf8(value) {
            Ok(v) => self.add_header(name, v),
            Err(_) if is_rate_header(name) => self.ignore(name, "<non-UTF-8 bytes>"),
            Err(_) => {}
        }
    }

    /// Adds one header. Unknown names are skipped silently; known ones with bad values are
    /// ignored with a debug event.
    pub fn add_header(&mut self, name: &str, value: &str) {
        let name = name.trim();
        let v = value.trim();
        let lower = name.to_ascii_lowercase();
        let ok = match lower.as_str() {
            "x-ratelimit-limit" => set(&mut self.limit, ietf::int(v)),
            "x-ratelimit-remaining" => set(&mut self.remaining, ietf::int(v)),
            "x-ratelimit-used" => set(&mut self.used, ietf::int(v)),
            "x-ratelimit-reset" => set(
                &mut self.reset,
                ietf::int(v).map(|n| {
                    if n >= 1_000_000_000 {
                        ResetAt::Epoch(n)
                    } else {
                        ResetAt::After(n)
                    }
                }),
            ),
            "x-ratelimit-resource" => {
                let good =
                    !v.is_empty() && v.len() <= 64 && v.bytes().all(|b| b.is_ascii_graphic());
                set(&mut self.resource, good.then(|| v.into()))
            }
            "retry-after" => set(&mut self.retry_after, parse_retry_after(v)),
            "ratelimit-limit" => set(&mut self.ietf_limit, leading_int(v)),
            "ratelimit-remaining" => set(&mut self.ietf_remaining, leading_int(v)),
            "ratelimit-reset" => set(&mut self.ietf_reset, leading_int(v)),
            "ratelimit" => match ietf::parse_current(v) {
                Some(c) => {
                    self.ietf_remaining = c.remaining.or(self.ietf_remaining);
                    self.ietf_reset = c.reset_after.or(self.ietf_reset);
                    self.ietf_limit = c.limit.or(self.ietf_limit);
                    self.ietf_policy_name = ietf::current_policy_name(v);
                    true
                }
                None => false,
            },
            "ratelimit-policy" => {
                let p = ietf::parse_policies(v);
                let ok = !p.is_empty();
                self.ietf_policies.extend(p);
                ok
            }
            _ => true,
        };
        if !ok {
            self.ignore(name, v);
        }
    }

    fn ignore(&mut self, name: &str, value: &str) {
        self.ignored = self.ignored.saturating_add(1);
        tracing::debug!(
            header = %crate::sanitize(name),
            value = %crate::sanitize(value),
            "ignoring malformed rate-limit header"
        );
    }

    /// Scans the body (its first 4 KiB) for rate-limit phrases, so a 403 that says
    /// "secondary rate limit" counts as one.
    pub fn with_body(mut self, body: &str) -> Self {
        let mut end = body.len().min(4096);
        while !body.is_char_boundary(end) {
            end -= 1;
        }
        let head = &body[..end];
        let lower = head.to_ascii_lowercase();
        self.body = if head.contains("\"RATE_LIMITED\"") {
            Some(BodySignal::GraphqlRateLimited)
        } else if lower.contains("secondary rate limit")
            || lower.contains("abuse detection")
            || lower.contains("blocked from content creation")
        {
            Some(BodySignal::Secondary)
        } else if lower.contains("api rate limit exceeded") {
            Some(BodySignal::Primary)
        } else if lower.contains("rate limit exceeded") || lower.contains("too many requests") {
            Some(BodySignal::Generic)
        } else {
            self.body
        };
        self
    }

    /// Sets `remaining` directly (simulators, tests).
    pub fn with_remaining(mut self, remaining: u64) -> Self {
        self.remaining = Some(remaining);
        self
    }
    /// Sets `limit` directly.
    pub fn with_limit(mut self, limit: u64) -> Self {
        self.limit = Some(limit);
        self
    }
    /// Sets `used` directly.
    pub fn with_used(mut self, used: u64) -> Self {
        self.used = Some(used);
        self
    }
    /// Sets the reset time directly.
    pub fn with_reset(mut self, reset: ResetAt) -> Self {
        self.reset = Some(reset);
        self
    }
    /// Sets `retry-after` directly.
    pub fn with_retry_after(mut self, delay: Duration) -> Self {
        self.retry_after = Some(RetryAfter::Delay(delay));
        self
    }
    /// Sets `x-ratelimit-resource` directly.
    pub fn with_resource(mut self, resource: &str) -> Self {
        self.resource = Some(resource.into());
        self
    }

    /// The HTTP status.
    pub fn status(&self) -> u16 {
        self.status
    }
    /// The window's quota (`x-ratelimit-limit`, else IETF).
    pub fn limit(&self) -> Option<u64> {
        self.limit.or(self.ietf_limit).or_else(|| self.ietf_quota())
    }
    /// Requests left in the window (`x-ratelimit-remaining`, else IETF).
    pub fn remaining(&self) -> Option<u64> {
        self.remaining.or(self.ietf_remaining)
    }
    /// Requests used in the window (`x-ratelimit-used`).
    pub fn used(&self) -> Option<u64> {
        self.used
    }
    /// When the window resets (`x-ratelimit-reset`, else IETF).
    pub fn reset(&self) -> Option<ResetAt> {
        self.reset.or(self.ietf_reset.map(ResetAt::After))
    }
    /// The quota bucket named by `x-ratelimit-resource`.
    pub fn resource(&self) -> Option<&str> {
        self.resource.as_deref()
    }
    /// Whether the response names a bucket other than `bucket` (a resource's
    /// [`bucket`](crate::governor::ResourceConfig::bucket)): then its quota headers and rate
    /// limit are about that other bucket. `false` if either is not named.
    pub fn names_another_bucket(&self, bucket: Option<&str>) -> bool {
        self.resource()
            .zip(bucket)
            .is_some_and(|(named, ours)| named != ours)
    }
    /// `retry-after`, as sent.
    pub fn retry_after(&self) -> Option<RetryAfter> {
        self.retry_after
    }
    /// How many rate-limit headers were malformed and ignored.
    pub fn ignored_headers(&self) -> u32 {
        self.ignored
    }

    fn ietf_quota(&self) -> Option<u64> {
        let name = self.ietf_policy_name.as_deref();
        let named = self
            .ietf_policies
            .iter()
            .find(|p| Some(p.name.as_str()) == name);
        match (named, self.ietf_policies.as_slice()) {
            (Some(p), _) => Some(p.quota),
            (None, [only]) => Some(only.quota),
            _ => None,
        }
    }

    /// Whether this response is a rate limit, and which. See the module docs for the rules.
    pub fn limit_kind(&self) -> Option<LimitKind> {
        let exhausted = self.remaining() == Some(0);
        let by_remaining = if exhausted {
            LimitKind::Primary
        } else {
            LimitKind::Secondary
        };
        match (self.status, self.body) {
            (429, Some(BodySignal::Secondary)) => Some(LimitKind::Secondary),
            (429, Some(BodySignal::Primary | BodySignal::GraphqlRateLimited)) => {
                Some(LimitKind::Primary)
            }
            (429, _) => Some(by_remaining),
            (403, _) if exhausted => Some(LimitKind::Primary),
            (403, Some(BodySignal::Secondary)) => Some(LimitKind::Secondary),
            (403, Some(BodySignal::Primary | BodySignal::GraphqlRateLimited)) => {
                Some(LimitKind::Primary)
            }
            (403, Some(BodySignal::Generic)) => Some(by_remaining),
            (403, None) if self.retry_after.is_some() => Some(LimitKind::Secondary),
            (200, Some(BodySignal::GraphqlRateLimited)) => Some(LimitKind::Primary),
            _ => None,
        }
    }
}

fn set<T>(slot: &mut Option<T>, v: Option<T>) -> bool {
    match v {
        Some(v) => {
            *slot = Some(v);
            true
        }
        None => false,
    }
}

/// The integer before any `,` or `;` (early drafts allowed `100, 100;w=60`).
fn leading_int(v: &str) -> Option<u64> {
    ietf::int(v.split([',', ';']).next().unwrap_or(v))
}

fn is_rate_header(name: &str) -> bool {
    let n = name.trim().to_ascii_lowercase();
    n.starts_with("x-ratelimit-") || n.starts_with("ratelimit") || n == "retry-after"
}

/// The longest one rate limit blocks a resource (G6), however it is reported: a
/// `Retry-After` header, a reset, or a hint noted through
/// [`Governor::note_retry_after`](super::Governor::note_retry_after). A bogus value (a
/// misbehaving proxy, a reset in the wrong unit) would otherwise block every agent for years,
/// with nothing to shorten it.
pub const LONGEST_BLOCK: std::time::Duration = std::time::Duration::from_secs(7 * 86_400);

/// `retry-after`: delay-seconds (fractions tolerated, at most a week) or an HTTP-date.
fn parse_retry_after(v: &str) -> Option<RetryAfter> {
    const WEEK: f64 = LONGEST_BLOCK.as_secs() as f64;
    if let Some(n) = ietf::int(v) {
        return Some(RetryAfter::Delay(Duration::from_secs(n.min(WEEK as u64))));
    }
    if v.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        let secs: f64 = v.parse().ok()?;
        return (secs.is_finite() && secs >= 0.0)
            .then(|| RetryAfter::Delay(Duration::from_secs_f64(secs.min(WEEK))));
    }
    httpdate::parse_http_date(v).map(RetryAfter::At)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn github_primary_headers() {
        let o = Observation::from_headers(
            200,
            [
                ("X-RateLimit-Limit", "5000"),
                ("x-ratelimit-remaining", "4999"),
                ("x-ratelimit-used", "1"),
                ("x-ratelimit-reset", "1767229200"),
                ("x-ratelimit-resource", "core"),
            ],
        );
        assert_eq!(o.limit(), Some(5000));
        assert_eq!(o.remaining(), Some(4999));
        assert_eq!(o.used(), Some(1));
        assert_eq!(o.reset(), Some(ResetAt::Epoch(1_767_229_200)));
        assert_eq!(o.resource(), Some("core"));
        assert_eq!(o.limit_kind(), None);
        assert_eq!(o.ignored_headers(), 0);
    }

    #[test]
    fn retry_after_forms() {
        let at = |v: &str| {
            Observation::new(429)
                .with_header("Retry-After", v)
                .retry_after()
        };
        assert_eq!(at("120"), Some(RetryAfter::Delay(Duration::from_secs(120))));
        assert_eq!(
            at("1.5"),
            Some(RetryAfter::Delay(Duration::from_millis(1500)))
        );
        assert_eq!(
            at("Thu, 01 Jan 2026 00:01:00 GMT"),
            Some(RetryAfter::At(1_767_225_660))
        );
        assert_eq!(at("-5"), None);
        assert_eq!(at("soon"), None);
        assert_eq!(at("NaN"), None);
    }

    #[test]
    fn classification_403_needs_evidence() {
        assert_eq!(Observation::new(403).limit_kind(), None);
        let r0 = Observation::new(403).with_remaining(0);
        assert_eq!(r0.limit_kind(), Some(LimitKind::Primary));
        let sec = Observation::new(403)
            .with_remaining(4290)
            .with_body(r#"{"message":"You have exceeded a secondary rate limit."}"#);
        assert_eq!(sec.limit_kind(), Some(LimitKind::Secondary));
        let generic = Observation::new(403).with_body("Rate limit exceeded");
        assert_eq!(generic.limit_kind(), Some(LimitKind::Secondary));
        let perm = Observation::new(403).with_body("Resource not accessible by integration");
        assert_eq!(perm.limit_kind(), None);
        let ra = Observation::new(403).with_retry_after(Duration::from_secs(60));
        assert_eq!(ra.limit_kind(), Some(LimitKind::Secondary));
    }

    #[test]
    fn classification_429_and_graphql() {
        assert_eq!(
            Observation::new(429).limit_kind(),
            Some(LimitKind::Secondary)
        );
        assert_eq!(
            Observation::new(429).with_remaining(0).limit_kind(),
            Some(LimitKind::Primary)
        );
        let gql = Observation::new(200).with_body(r#"{"errors":[{"type":"RATE_LIMITED"}]}"#);
        assert_eq!(gql.limit_kind(), Some(LimitKind::Primary));
        // A 200 whose content merely mentions rate limits is a success.
        let text = Observation::new(200).with_body("docs: secondary rate limit exceeded");
        assert_eq!(text.limit_kind(), None);
    }

    #[test]
    fn ietf_fields_fill_in_when_x_headers_are_absent() {
        let o = Observation::from_headers(
            200,
            [
                ("RateLimit", r#""default";r=50;t=30"#),
                ("RateLimit-Policy", r#""default";q=100;w=60"#),
            ],
        );
        assert_eq!((o.limit(), o.remaining()), (Some(100), Some(50)));
        assert_eq!(o.reset(), Some(ResetAt::After(30)));
        let old = Observation::from_headers(
            200,
            [
                ("RateLimit-Limit", "100, 100;w=60"),
                ("RateLimit-Remaining", "7"),
                ("RateLimit-Reset", "12"),
            ],
        );
        assert_eq!((old.limit(), old.remaining()), (Some(100), Some(7)));
        assert_eq!(old.reset(), Some(ResetAt::After(12)));
        let both = o.with_header("x-ratelimit-remaining", "3");
        assert_eq!(both.remaining(), Some(3));
    }

    #[test]
    fn malformed_values_are_counted_and_ignored() {
        let o = Observation::from_headers(
            200,
            [
                ("x-ratelimit-limit", "5k"),
                ("x-ratelimit-remaining", "-1"),
                ("x-ratelimit-reset", "99999999999999999999999"),
                ("x-ratelimit-resource", ""),
                ("retry-after", "later"),
                ("RateLimit", "nonsense"),
                ("content-type", "text/html"),
            ],
        );
        assert_eq!(o.ignored_headers(), 6);
        assert_eq!((o.limit(), o.remaining(), o.reset()), (None, None, None));
        let bytes = Observation::from_headers(200, [("x-ratelimit-limit", &[0xff_u8, 0xfe][..])]);
        assert_eq!(bytes.ignored_headers(), 1);
    }
}
