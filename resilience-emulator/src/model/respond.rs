//! Building responses: GitHub's headers and message bodies.

use crate::request::Response;
use std::time::Duration;

const DOCS: &str = "https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api";

/// The primary-limit headers every response carries.
pub(crate) struct RateHeaders<'a> {
    pub(crate) limit: u32,
    pub(crate) remaining: u32,
    pub(crate) used: u32,
    /// Epoch seconds.
    pub(crate) reset_epoch: u64,
    pub(crate) resource: &'a str,
    pub(crate) request_id: u64,
}

impl RateHeaders<'_> {
    fn into_vec(self) -> Vec<(String, String)> {
        vec![
            ("x-ratelimit-limit".into(), self.limit.to_string()),
            ("x-ratelimit-remaining".into(), self.remaining.to_string()),
            ("x-ratelimit-used".into(), self.used.to_string()),
            ("x-ratelimit-reset".into(), self.reset_epoch.to_string()),
            ("x-ratelimit-resource".into(), self.resource.to_owned()),
            (
                "x-github-request-id".into(),
                format!("EMU0:{:08X}", self.request_id),
            ),
        ]
    }
}

pub(crate) fn served(status: u16, rate: RateHeaders<'_>, etag: Option<String>) -> Response {
    let mut headers = rate.into_vec();
    if let Some(etag) = etag {
        headers.push(("etag".into(), etag));
    }
    let body = if status == 304 || status == 204 {
        String::new()
    } else {
        "{\"ok\":true}".to_owned()
    };
    Response {
        status,
        headers,
        body,
    }
}

pub(crate) fn primary_exhausted(status: u16, rate: RateHeaders<'_>, user_id: u64) -> Response {
    let body = serde_json::json!({
        "message": format!(
            "API rate limit exceeded for user ID {user_id}. If you reach out to GitHub Support \
             for help, please include the request ID."
        ),
        "documentation_url": DOCS,
    });
    Response {
        status,
        headers: rate.into_vec(),
        body: body.to_string(),
    }
}

pub(crate) fn secondary(
    status: u16,
    rate: RateHeaders<'_>,
    content: bool,
    retry_after: Option<Duration>,
) -> Response {
    let message = if content {
        "You have exceeded a secondary rate limit and have been temporarily blocked from \
         content creation. Please retry your request again later."
    } else {
        "You have exceeded a secondary rate limit. Please wait a few minutes before you try \
         again. If you reach out to GitHub Support for help, please include the request ID."
    };
    let mut headers = rate.into_vec();
    if let Some(after) = retry_after {
        headers.push(("retry-after".into(), ceil_secs(after).to_string()));
    }
    let body = serde_json::json!({ "message": message, "documentation_url": DOCS });
    Response {
        status,
        headers,
        body: body.to_string(),
    }
}

/// Whole seconds, rounded up (a client waiting that long is past the block).
pub(crate) fn ceil_secs(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}
