//! [`RedisQuotaError`] and the URL form safe to show.

use crate::grant::QuotaWaitReason;
use resilience_core::ResilienceError;
use std::fmt;
use std::time::Duration;

/// What went wrong with the shared quota. Every message names the Redis URL without its
/// password, and server text goes through [`resilience_core::sanitize()`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RedisQuotaError {
    /// Redis could not be reached (or the script not loaded) at start.
    Connect {
        /// The URL, password removed.
        url: String,
        /// Why, sanitized.
        reason: String,
    },
    /// Redis is unreachable and this process may not spend (fail-closed, or its degraded
    /// share is spent or its lease would have expired).
    Unavailable {
        /// The URL, password removed.
        url: String,
        /// When asking again can succeed.
        retry_after: Duration,
    },
    /// The cost is above the resource's whole limit: no window can grant it.
    CostTooLarge {
        /// The resource.
        resource: String,
        /// Requested cost.
        cost: u32,
        /// The quota per window.
        limit: u64,
    },
    /// A shared pacing rule ([`QuotaSpec::shared_pacing`](crate::QuotaSpec::shared_pacing))
    /// can never grant the request at this priority: it needs more units than the rule
    /// allows in a window (less its P0 headroom, below P0).
    RuleTooSmall {
        /// The resource.
        resource: String,
        /// The rule's name.
        rule: String,
        /// The units the request needs of it (1, its points or its cost).
        needs: u64,
        /// The most the rule grants this priority in a window.
        allows: u64,
    },
    /// Another process counts its grants of this resource against shared pacing rules
    /// ([`QuotaSpec::shared_pacing`](crate::QuotaSpec::shared_pacing)) and this one was given
    /// none, so its calls would not be counted in them. Its lease was ended: what it reported
    /// spending is settled, and its reservation returns to the pool, less what it may still
    /// spend unreported (all of it in degraded mode, else the express allowance). That part
    /// is held until the lease would have expired; the next call or heartbeat after that
    /// reports, and all but the express allowance returns. It spends nothing of the resource
    /// until the rules' counts have left their windows or it is given the same rules.
    PacedElsewhere {
        /// The resource.
        resource: String,
    },
    /// Waiting would exceed the caller's bound.
    WaitTooLong {
        /// The resource.
        resource: String,
        /// How long the wait would have been at least.
        wait: Duration,
        /// Why it waits.
        reason: QuotaWaitReason,
    },
    /// A setting is invalid.
    Config {
        /// The setting.
        field: &'static str,
        /// What is expected.
        reason: String,
    },
    /// Redis answered with an error (not a lost connection), sanitized.
    Server {
        /// The URL, password removed.
        url: String,
        /// The error text, sanitized.
        message: String,
    },
}

impl fmt::Display for RedisQuotaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Connect { url, reason } => {
                write!(
                    f,
                    "cannot use Redis at {url} for the shared quota: {reason}"
                )
            }
            Self::Unavailable { url, retry_after } => write!(
                f,
                "Redis at {url} is unreachable and this process may spend nothing more without it \
                 (fail-closed, or its local share spent or its lease run out); retry in {:.3}s",
                retry_after.as_secs_f64()
            ),
            Self::CostTooLarge {
                resource,
                cost,
                limit,
            } => write!(
                f,
                "cost {cost} is above the whole quota of `{resource}` ({limit} per window)"
            ),
            Self::RuleTooSmall {
                resource,
                rule,
                needs,
                allows,
            } => write!(
                f,
                "`{resource}`: the request needs {needs} units of shared rule `{rule}`, which \
                 grants at most {allows} per window at this priority: it can never be granted \
                 (split it, raise the rule's limit, or ask at P0 if only the P0 headroom is \
                 missing)"
            ),
            Self::WaitTooLong {
                resource,
                wait,
                reason,
            } => write!(
                f,
                "`{resource}`: the wait ({:.3}s: {}) exceeds the caller's bound",
                wait.as_secs_f64(),
                reason
            ),
            Self::Config { field, reason } => {
                write!(
                    f,
                    "invalid shared-quota setting `{field}`: expected {reason}"
                )
            }
            Self::Server { url, message } => write!(f, "Redis at {url} answered: {message}"),
            Self::PacedElsewhere { resource } => write!(
                f,
                "resource `{resource}` is paced by shared G8 rules in another process \
                 (QuotaSpec::shared_pacing) and this process has none: give every process \
                 sharing it the same rules"
            ),
        }
    }
}

impl std::error::Error for RedisQuotaError {}

impl RedisQuotaError {
    /// The framework's refusal of a call to `resource` for this error: a refusal that can
    /// pass (Redis unreachable, a wait past the caller's bound, a server error) is the
    /// governor shedding the call, with when to come back; one that cannot (a cost above the
    /// whole quota, a rule too small for the request, the shared rules missing, a bad
    /// setting) is [`ResilienceError::GovernorRejected`], with this error's text, so a
    /// retry layer does not wait on it.
    pub fn into_refusal(self, resource: &str) -> ResilienceError {
        let shed = |retry_after| ResilienceError::GovernorShed {
            resource: resource.into(),
            retry_after,
        };
        match self {
            Self::Unavailable { retry_after, .. } => shed(retry_after),
            Self::WaitTooLong { wait, .. } => shed(wait),
            Self::Connect { .. } | Self::Server { .. } => shed(Duration::from_secs(1)),
            Self::CostTooLarge { .. }
            | Self::RuleTooSmall { .. }
            | Self::PacedElsewhere { .. }
            | Self::Config { .. } => ResilienceError::GovernorRejected {
                resource: resource.into(),
                reason: self.to_string().into(),
            },
        }
    }

    /// Resource `name` exists in Redis with windows of `stored_ms`, and `spec` asks for
    /// others.
    pub(crate) fn window_conflict(
        prefix: &str,
        name: &str,
        stored_ms: u64,
        spec: &crate::QuotaSpec,
    ) -> Self {
        Self::Config {
            field: "window",
            reason: format!(
                "the window resource `{name}` already has in Redis ({:.3}s, made by another \
                 process's spec; this one gave {:.3}s): give every process the same spec, \
                 or, to change it, delete the keys `{{{prefix}:{name}}}:*` while no process \
                 uses them",
                Duration::from_millis(stored_ms).as_secs_f64(),
                spec.window.as_secs_f64()
            ),
        }
    }

    /// The resource the error names, if it names one.
    fn resource(&self) -> Option<&str> {
        match self {
            Self::CostTooLarge { resource, .. }
            | Self::RuleTooSmall { resource, .. }
            | Self::PacedElsewhere { resource }
            | Self::WaitTooLong { resource, .. } => Some(resource),
            Self::Connect { .. }
            | Self::Unavailable { .. }
            | Self::Config { .. }
            | Self::Server { .. } => None,
        }
    }
}

impl From<RedisQuotaError> for ResilienceError {
    /// [`RedisQuotaError::into_refusal`] for the resource the error names (`shared quota`
    /// if it names none).
    fn from(e: RedisQuotaError) -> Self {
        let resource = e.resource().unwrap_or("shared quota").to_owned();
        e.into_refusal(&resource)
    }
}

/// `url` without its password (and without anything unparsable after the scheme).
pub fn safe_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return "<unparsable redis url>".into();
    };
    // The userinfo runs to the last `@`: a password may hold an unencoded `/`, `?` or `#`,
    // which would otherwise end the authority inside it. (An `@` in the path only hides
    // more.)
    let (userinfo, after) = match rest.rsplit_once('@') {
        Some((userinfo, after)) => (Some(userinfo), after),
        None => (None, rest),
    };
    // The host ends at a path, a query or a fragment, whichever comes first.
    let (host, path) = match after.find(['/', '?', '#']) {
        Some(i) => after.split_at(i),
        None => (after, ""),
    };
    let host = match userinfo {
        Some(userinfo) => match userinfo.split_once(':') {
            Some((user, _)) if !user.is_empty() && !user.contains(['/', '?', '#']) => {
                format!("{user}:***@{host}")
            }
            _ => format!("***@{host}"),
        },
        None => host.to_owned(),
    };
    // Query strings (and fragments) may carry credentials too.
    let path = path.split(['?', '#']).next().unwrap_or("");
    format!("{scheme}://{host}{path}")
}

/// Server or I/O error text, safe for logs and errors.
pub(crate) fn clean(e: &redis::RedisError) -> String {
    resilience_core::sanitize(&e.to_string()).into_owned()
}

/// Why a first connection failed, saying which kind of fix it needs: the URL, the
/// credentials, the server's answer, or reaching it at all.
pub(crate) fn connect_reason(e: &redis::RedisError, parsing: bool) -> String {
    let text = clean(e);
    match e.kind() {
        redis::ErrorKind::InvalidClientConfig if parsing => format!(
            "invalid Redis URL (expected redis://[user[:password]@]host[:port][/db] or \
             redis+unix:///path): {text}"
        ),
        _ if e.code() == Some("NOAUTH") => {
            format!("Redis needs a password the URL does not give: {text}")
        }
        _ if e.kind() == redis::ErrorKind::AuthenticationFailed
            || matches!(e.code(), Some("WRONGPASS" | "NOPERM")) =>
        {
            format!("Redis refused the credentials in the URL: {text}")
        }
        redis::ErrorKind::Server(_) | redis::ErrorKind::Extension => {
            format!("Redis answered with an error: {text}")
        }
        _ if e.is_io_error() || e.is_timeout() || e.is_connection_refusal() => {
            format!("unreachable: {text}")
        }
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g7_a_wait_too_long_says_why_it_waits() {
        let e = RedisQuotaError::WaitTooLong {
            resource: "core".into(),
            wait: Duration::from_millis(59_800),
            reason: QuotaWaitReason::Exhausted,
        };
        assert_eq!(
            e.to_string(),
            "`core`: the wait (59.800s: the window's quota is spent until its reset) exceeds \
             the caller's bound"
        );
    }

    #[test]
    fn g7_urls_are_shown_without_password() {
        assert_eq!(
            safe_url("redis://alice:s3cret@cache:6379/2"),
            "redis://alice:***@cache:6379/2"
        );
        assert_eq!(
            safe_url("rediss://:hunter2@10.0.0.1:6380"),
            "rediss://***@10.0.0.1:6380"
        );
        assert_eq!(
            safe_url("redis://127.0.0.1:6379/0?password=x"),
            "redis://127.0.0.1:6379/0"
        );
        assert_eq!(safe_url("nonsense"), "<unparsable redis url>");
        // A password holding `/`, `?` or `#` unencoded (found in review: it came back whole).
        assert_eq!(
            safe_url("redis://default:ab/cd+ef==@cache:6379/0"),
            "redis://default:***@cache:6379/0"
        );
        assert_eq!(
            safe_url("redis://default:p?a#s/s@cache:6379"),
            "redis://default:***@cache:6379"
        );
        // A query or fragment with no path before it (it used to be kept as part of the host).
        assert_eq!(
            safe_url("redis://cache:6379?password=hunter2"),
            "redis://cache:6379"
        );
        assert_eq!(
            safe_url("rediss://u:pw@cache:6380#hunter2"),
            "rediss://u:***@cache:6380"
        );
        let e = RedisQuotaError::Connect {
            url: safe_url("redis://u:pw@h:1"),
            reason: "refused".into(),
        };
        assert!(!e.to_string().contains("pw@"), "{e}");
        assert!(e.to_string().contains("redis://u:***@h:1"), "{e}");
    }
}
