//! Per-token state: the primary window, secondary counters and the penalty box.

use super::window::SlidingWindow;
use crate::limits::Limits;
use std::collections::BTreeMap;
use std::time::Duration;

/// Everything the emulator remembers about one token.
#[derive(Debug)]
pub(crate) struct TokenState {
    /// A stable fake user id, for the primary-limit message.
    pub(crate) user_id: u64,
    /// Start of the current primary window; `None` until the first request.
    pub(crate) window_start: Option<Duration>,
    pub(crate) used: u32,
    pub(crate) in_flight: u32,
    /// Points per endpoint template.
    pub(crate) points: BTreeMap<String, SlidingWindow>,
    pub(crate) content_minute: SlidingWindow,
    pub(crate) content_hour: SlidingWindow,
    /// End of the penalty box, and the index of its entry in the lockout record.
    pub(crate) blocked: Option<(Duration, usize)>,
}

impl TokenState {
    pub(crate) fn new(user_id: u64) -> Self {
        Self {
            user_id,
            window_start: None,
            used: 0,
            in_flight: 0,
            points: BTreeMap::new(),
            content_minute: SlidingWindow::new(Duration::from_secs(60)),
            content_hour: SlidingWindow::new(Duration::from_secs(3_600)),
            blocked: None,
        }
    }

    /// Starts a new primary window at `now` if none is running (GitHub anchors the window at
    /// the first request after the previous one expired); returns the reset instant.
    pub(crate) fn roll_window(&mut self, now: Duration, limits: &Limits) -> Duration {
        match self.window_start {
            Some(start) if now < start.saturating_add(limits.primary_window) => {}
            _ => {
                self.window_start = Some(now);
                self.used = 0;
            }
        }
        self.window_start
            .unwrap_or(now)
            .saturating_add(limits.primary_window)
    }

    pub(crate) fn remaining(&self, limits: &Limits) -> u32 {
        limits.primary_limit.saturating_sub(self.used)
    }

    pub(crate) fn penalty_end(&self, now: Duration) -> Option<Duration> {
        self.blocked.map(|(end, _)| end).filter(|end| *end > now)
    }

    pub(crate) fn endpoint_points(
        &mut self,
        template: &str,
        limits: &Limits,
    ) -> &mut SlidingWindow {
        self.points
            .entry(template.to_owned())
            .or_insert_with(|| SlidingWindow::new(limits.points_window))
    }
}

/// The endpoint a path belongs to for the per-endpoint points limit: numeric and
/// commit-hash-like segments become `{id}` (`/repos/a/b/pulls/12` → `/repos/a/b/pulls/{id}`),
/// and a file path after `/contents/` becomes `{path}` (one endpoint for every file).
pub(crate) fn endpoint_template(path: &str) -> String {
    let path = path.split('?').next().unwrap_or(path);
    if let Some((repo, _file)) = path.split_once("/contents/") {
        return format!("{}/contents/{{path}}", endpoint_template(repo));
    }
    path.split('/')
        .map(|seg| {
            let numeric = !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_digit());
            let hashlike = seg.len() >= 7 && seg.bytes().all(|b| b.is_ascii_hexdigit());
            if numeric || hashlike {
                "{id}"
            } else {
                seg
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_collapse_ids_and_shas() {
        assert_eq!(
            endpoint_template("/repos/acme/app/pulls/12/reviews"),
            "/repos/acme/app/pulls/{id}/reviews"
        );
        assert_eq!(
            endpoint_template("/repos/acme/app/git/blobs/deadbeef01?x=1"),
            "/repos/acme/app/git/blobs/{id}"
        );
        assert_eq!(endpoint_template("/repos/acme/app"), "/repos/acme/app");
    }

    #[test]
    fn g8_templates_fold_a_contents_path_into_one_endpoint() {
        assert_eq!(
            endpoint_template("/repos/acme/app/contents/src/data/pr101/f0.rs"),
            "/repos/acme/app/contents/{path}"
        );
        assert_eq!(
            endpoint_template("/repos/acme/app/contents/README.md?ref=main"),
            "/repos/acme/app/contents/{path}"
        );
    }
}
