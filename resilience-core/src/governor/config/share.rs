//! One process's part of the pacing rules when several processes share one quota (G7).
//!
//! The primary quota can be shared exactly (through Redis, `resilience-redis`), but each
//! process's governor paces the secondary limits on its own. Either `resilience-redis`
//! shares them too (`QuotaSpec::shared_pacing`, given the *whole* rules: then do not also
//! cut them with [`ResourceConfig::part`]), or each process gets a part of them,
//! and the parts must add up to no more than the real limits: window limits and the
//! concurrency cap are rounded *down*, and spacing gaps are stretched, so N processes that
//! each keep a gap of `gap / share` send no more often, together, than one keeping `gap`.

use super::ResourceConfig;
use crate::error::PolicyError;

impl ResourceConfig {
    /// This config cut to `share` (in `(0, 1]`) of every secondary-limit budget: window
    /// rule limits, their P0 headroom and smoothing burst, and the concurrency cap scaled
    /// and rounded down; spacing gaps divided by `share`. The primary quota, thresholds and
    /// everything else are unchanged.
    ///
    /// Give each process sharing a quota its share of the work (its number of agents over
    /// all of them, say); as long as the shares add up to at most 1, the processes together
    /// never pace past the real limits.
    ///
    /// # Errors
    ///
    /// `share` outside `(0, 1]`, or so small that a rule or the concurrency cap would be
    /// left with nothing: the error names the rule.
    ///
    /// ```
    /// use resilience_core::governor::ResourceConfig;
    ///
    /// // Three processes, one token: each paces to a third of GitHub's secondary limits.
    /// let third = ResourceConfig::github().part(1.0 / 3.0).unwrap();
    /// let creations = &third.pacing.windows[0];
    /// assert_eq!(creations.name.as_ref(), "content_creating_per_minute");
    /// assert_eq!(creations.limit, 26); // of 80: 3 × 26 = 78, never 81
    /// assert_eq!(third.pacing.max_concurrent, Some(33));
    ///
    /// assert!(ResourceConfig::github().part(1.0 / 200.0).is_err()); // 80 / 200 < 1
    /// ```
    pub fn part(&self, share: f64) -> Result<Self, PolicyError> {
        if !(share > 0.0 && share <= 1.0) {
            return Err(PolicyError::new(
                "share",
                share,
                "must be more than 0 and at most 1",
            ));
        }
        let mut out = self.clone();
        for rule in &mut out.pacing.windows {
            let limit = down(rule.limit, share);
            if limit == 0 {
                return Err(PolicyError::new(
                    "pacing.window.limit",
                    format!(
                        "{} × {share} (rule `{}`)",
                        rule.limit,
                        rule.name.escape_debug()
                    ),
                    "a process's share leaves it less than one unit of this rule: \
                     give it a larger share, or run fewer processes on this quota",
                ));
            }
            // Headroom stays below the limit, and the burst within what P1/P2 may use, as
            // validation requires of any rule.
            let headroom = down(rule.p0_headroom, share).min(limit - 1);
            rule.smooth_burst = rule
                .smooth_burst
                .map(|b| down(b, share).clamp(1, limit - headroom));
            rule.limit = limit;
            rule.p0_headroom = headroom;
        }
        if let Some(cap) = out.pacing.max_concurrent {
            let part = down(cap, share);
            if part == 0 {
                return Err(PolicyError::new(
                    "pacing.max_concurrent",
                    format!("{cap} × {share}"),
                    "a process's share leaves it no call in flight: \
                     give it a larger share, or run fewer processes on this quota",
                ));
            }
            out.pacing.max_concurrent = Some(part);
        }
        for spacing in &mut out.pacing.spacings {
            // Rounded up to the nanosecond, so the parts' rates never add up to more.
            let nanos = (spacing.gap.as_nanos() as f64 / share).ceil();
            if nanos >= u64::MAX as f64 {
                return Err(PolicyError::new(
                    "pacing.spacing.gap",
                    format!(
                        "{:?} / {share} (rule `{}`)",
                        spacing.gap,
                        spacing.name.escape_debug()
                    ),
                    "the stretched gap is too long to represent: give this process a larger share",
                ));
            }
            spacing.gap = std::time::Duration::from_nanos(nanos as u64);
        }
        Ok(out)
    }
}

/// `units × share`, rounded down (shares that add up to 1 never add up to more units).
fn down(units: u32, share: f64) -> u32 {
    // Exact for every u32 and a share in (0, 1]; a hair under an integer is that integer
    // less one, which errs on the safe side.
    (f64::from(units) * share).floor() as u32
}
