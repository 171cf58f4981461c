//! When may a request go, by every pacing rule: G8 windows, spacing and concurrency, G1 red
//! pacing, G8 even spend, G3 throttling, G6 recovery pacing and G4 sequential mode.
//! [`Rules::earliest`] only reads (it may drop expired log entries); [`Rules::commit`]
//! records a grant.

use super::super::config::{Measure, Pacing, Selector, TrafficLight};
use super::super::decision::{Grant, WaitReason};
use super::super::priority::Priority;
use super::super::request::Request;
use super::super::store::Zone;
use super::endpoints::Endpoints;
use super::time::{ns, share_ceil, Nanos};
use super::window::{Shape, Window};
use std::sync::Arc;

/// Why the earliest time is what it is, cheap to carry on the fast path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Why {
    Now,
    Recovery,
    RedPacing,
    Predictive,
    EvenSpend,
    Window(u16),
    Spacing(u16),
    Concurrency,
    Sequential,
}

/// The state of the resource the rules depend on, for one decision.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Env {
    pub now: Nanos,
    pub priority: Priority,
    pub zone: Zone,
    pub breaker_open: bool,
    pub sequential: bool,
    pub recovering: bool,
    pub inflight: u32,
    /// Time to reset divided by remaining quota: the even-spend interval per unit of cost.
    pub sustain: Nanos,
    pub limit: u64,
}

struct RuleState {
    name: Arc<str>,
    selector: Selector,
    measure: Measure,
    shape: Shape,
    per_endpoint: bool,
    shared: Window,
    /// Indexed by endpoint id.
    by_endpoint: Vec<Window>,
}

impl std::fmt::Debug for RuleState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuleState")
            .field("name", &self.name)
            .field("endpoints", &self.by_endpoint.len())
            .finish_non_exhaustive()
    }
}

#[derive(Debug)]
struct SpaceState {
    name: Arc<str>,
    selector: Selector,
    gap: Nanos,
    last: Option<Nanos>,
}

/// Pacing state of one resource.
#[derive(Debug)]
pub(crate) struct Rules {
    windows: Vec<RuleState>,
    endpoints: Endpoints,
    any_per_endpoint: bool,
    spacings: Vec<SpaceState>,
    max_concurrent: u32,
    poll: Nanos,
    unrelated_hold: Nanos,
    even_spend: bool,
    even_burst: f64,
    red_p1_spacing: Nanos,
    release_spacing: Nanos,
    even_tat: Nanos,
    last_p1: Option<Nanos>,
    last_below_p0: Option<Nanos>,
    last_any: Option<Nanos>,
}

/// Most endpoints tracked per rule before empty windows are dropped.
const MAX_ENDPOINTS: usize = 1024;

impl Rules {
    pub fn new(p: &Pacing, light: &TrafficLight, release_spacing: Nanos) -> Self {
        let windows = p
            .windows
            .iter()
            .map(|w| {
                let span = ns(w.window).saturating_add(ns(w.margin));
                let shared_limit = u64::from(w.limit - w.p0_headroom.min(w.limit));
                let interval = w.smooth_burst.map(|_| span / shared_limit.max(1));
                RuleState {
                    name: w.name.clone(),
                    selector: w.selector,
                    measure: w.measure,
                    shape: Shape {
                        span,
                        limit: u64::from(w.limit),
                        shared_limit,
                        interval,
                        tolerance: interval
                            .map_or(0, |i| i * u64::from(w.smooth_burst.unwrap_or(0))),
                    },
                    per_endpoint: w.per_endpoint,
                    shared: Window::default(),
                    by_endpoint: Vec::new(),
                }
            })
            .collect();
        let spacings = p
            .spacings
            .iter()
            .map(|s| SpaceState {
                name: s.name.clone(),
                selector: s.selector,
                gap: ns(s.gap),
                last: None,
            })
            .collect();
        Self {
            windows,
            endpoints: Endpoints::default(),
            any_per_endpoint: p.windows.iter().any(|w| w.per_endpoint),
            spacings,
            max_concurrent: p.max_concurrent.unwrap_or(u32::MAX),
            poll: ns(p.poll_interval),
            unrelated_hold: ns(p.unrelated_hold),
            even_spend: p.even_spend,
            even_burst: p.even_spend_burst,
            red_p1_spacing: ns(light.red_p1_spacing),
            release_spacing,
            even_tat: 0,
            last_p1: None,
            last_below_p0: None,
            last_any: None,
        }
    }

    /// Drops endpoints whose windows count nothing any more (bounded memory).
    #[cold]
    fn compact(&mut self, now: Nanos) {
        let windows = &mut self.windows;
        let old = self.endpoints.retain(|id| {
            windows.iter_mut().any(|r| {
                let span = r.shape.span;
                r.by_endpoint
                    .get_mut(id as usize)
                    .is_some_and(|w| !w.is_idle(now, span))
            })
        });
        for r in &mut self.windows {
            let mut taken = std::mem::take(&mut r.by_endpoint);
            r.by_endpoint = old
                .iter()
                .map(|&id| {
                    taken
                        .get_mut(id as usize)
                        .map(std::mem::take)
                        .unwrap_or_default()
                })
                .collect();
        }
    }

    /// Whether no window, spacing or concurrency rule is configured.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.windows.is_empty() && self.spacings.is_empty() && self.max_concurrent == u32::MAX
    }

    /// The re-ask interval for waits with no known end.
    pub fn poll(&self) -> Nanos {
        self.poll
    }

    /// The reason a `Why` names, for a wait.
    pub fn reason(&self, why: Why) -> WaitReason {
        match why {
            Why::Now | Why::Recovery => WaitReason::Recovery,
            Why::RedPacing => WaitReason::RedPacing,
            Why::Predictive => WaitReason::Predictive,
            Why::EvenSpend => WaitReason::EvenSpend,
            Why::Window(i) => WaitReason::Rule(self.windows[usize::from(i)].name.clone()),
            Why::Spacing(i) => WaitReason::Rule(self.spacings[usize::from(i)].name.clone()),
            Why::Concurrency => WaitReason::Concurrency,
            Why::Sequential => WaitReason::Sequential,
        }
    }

    /// The requests a wait for `why` competes with: a window's or spacing's selector, or
    /// `None` for everything.
    pub fn scope(&self, why: Why) -> Option<Selector> {
        match why {
            Why::Window(i) => Some(self.windows[usize::from(i)].selector),
            Why::Spacing(i) => Some(self.spacings[usize::from(i)].selector),
            _ => None,
        }
    }

    /// See [`Pacing::unrelated_hold`].
    pub fn unrelated_hold(&self) -> Nanos {
        self.unrelated_hold
    }

    fn even_interval(env: &Env, cost: u64) -> Nanos {
        env.sustain.saturating_mul(cost)
    }

    /// The earliest time every rule admits `req` at `env.priority`.
    #[inline]
    pub fn earliest(&mut self, req: &Request<'_>, env: &Env) -> (Nanos, Why) {
        let now = env.now;
        let mut best = (now, Why::Now);
        let mut bump = |at: Nanos, why: Why| {
            if at > best.0 {
                best = (at, why);
            }
        };
        let p0 = env.priority == Priority::P0;
        let kind = req.kind();
        let endpoint = match req.endpoint() {
            Some(e) if self.any_per_endpoint => self.endpoints.find(e),
            _ => None,
        };
        for (i, r) in self.windows.iter_mut().enumerate() {
            if !r.selector.matches(kind) {
                continue;
            }
            let units = units(r.measure, req);
            let w = match (r.per_endpoint, req.endpoint(), endpoint) {
                (true, Some(_), Some(id)) => match r.by_endpoint.get_mut(id as usize) {
                    Some(w) => w,
                    None => continue,
                },
                // A new endpoint: its windows are empty.
                (true, Some(_), None) => continue,
                _ => &mut r.shared,
            };
            bump(w.earliest(now, units, &r.shape, p0), Why::Window(i as u16));
        }
        for (i, s) in self.spacings.iter().enumerate() {
            if let (Some(last), true) = (s.last, s.selector.matches(kind)) {
                bump(last.saturating_add(s.gap), Why::Spacing(i as u16));
            }
        }
        if env.inflight >= self.max_concurrent {
            bump(now.saturating_add(self.poll), Why::Concurrency);
        }
        if env.sequential && env.inflight > 0 {
            bump(now.saturating_add(self.poll), Why::Sequential);
        }
        if env.recovering {
            if let Some(last) = self.last_any {
                bump(last.saturating_add(self.release_spacing), Why::Recovery);
            }
        }
        if !p0 {
            let cost = u64::from(req.cost());
            if env.zone == Zone::Red && env.priority == Priority::P1 {
                if let Some(last) = self.last_p1 {
                    bump(last.saturating_add(self.red_p1_spacing), Why::RedPacing);
                }
            }
            if env.breaker_open {
                if let Some(last) = self.last_below_p0 {
                    bump(
                        last.saturating_add(Self::even_interval(env, cost.max(1))),
                        Why::Predictive,
                    );
                }
            }
            if self.even_spend && env.zone != Zone::Green {
                let step = Self::even_interval(env, cost);
                let tau = (Self::even_interval(env, 1))
                    .saturating_mul(share_ceil(env.limit, self.even_burst))
                    .max(step);
                bump(
                    self.even_tat.saturating_add(step).saturating_sub(tau),
                    Why::EvenSpend,
                );
            }
        }
        best
    }

    /// Records a grant of `req` at `env.now`.
    #[inline]
    pub fn commit(&mut self, req: &Request<'_>, env: &Env) {
        let now = env.now;
        let kind = req.kind();
        let endpoint = match req.endpoint() {
            Some(e) if self.any_per_endpoint => {
                if self.endpoints.len() >= MAX_ENDPOINTS && self.endpoints.find(e).is_none() {
                    self.compact(now);
                }
                Some(self.endpoints.get_or_insert(e) as usize)
            }
            _ => None,
        };
        for r in &mut self.windows {
            if !r.selector.matches(kind) {
                continue;
            }
            let units = units(r.measure, req);
            let w = match (r.per_endpoint, endpoint) {
                (true, Some(id)) => {
                    if r.by_endpoint.len() <= id {
                        r.by_endpoint.resize_with(id + 1, Window::default);
                    }
                    &mut r.by_endpoint[id]
                }
                _ => &mut r.shared,
            };
            w.commit(now, units, &r.shape, env.priority == Priority::P0);
        }
        for s in &mut self.spacings {
            if s.selector.matches(kind) {
                s.last = Some(now);
            }
        }
        self.last_any = Some(now);
        if env.priority != Priority::P0 {
            self.last_below_p0 = Some(now);
            if env.priority == Priority::P1 {
                self.last_p1 = Some(now);
            }
            if self.even_spend && env.zone != Zone::Green {
                let step = Self::even_interval(env, u64::from(req.cost()));
                self.even_tat = self.even_tat.max(now).saturating_add(step);
            }
        }
    }
}

impl Rules {
    /// Takes back what `grant` counted in the windows (released unused). Per-endpoint windows
    /// keep the slot (the grant does not carry its endpoint), and so do spacing rules: both
    /// err on the side of fewer calls.
    pub fn refund(&mut self, grant: &Grant) {
        let Some(fp) = grant.footprint() else {
            return;
        };
        let at = ns(grant.granted_at());
        let p0 = grant.priority() == Priority::P0;
        for r in &mut self.windows {
            if !r.selector.matches(fp.kind) || (r.per_endpoint && fp.endpoint) {
                continue;
            }
            let units = match r.measure {
                Measure::Requests => 1,
                Measure::Points => fp.points,
                Measure::Cost => grant.cost(),
            };
            r.shared.refund(at, units, p0);
        }
    }
}

#[inline]
fn units(m: Measure, req: &Request<'_>) -> u32 {
    match m {
        Measure::Requests => 1,
        Measure::Points => req.points(),
        Measure::Cost => req.cost(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::config::WindowRule;
    use super::super::time::NANOS_PER_SEC;
    use super::*;
    use std::time::Duration;

    #[test]
    fn g8_per_endpoint_windows_stay_bounded_as_idle_endpoints_are_dropped() {
        let mut p = Pacing::default();
        p.windows.push(
            WindowRule::new(
                "points",
                Selector::All,
                Measure::Points,
                900,
                Duration::from_secs(60),
            )
            .per_endpoint(),
        );
        let mut rules = Rules::new(&p, &TrafficLight::default(), 0);
        // A new endpoint every second: each window is idle a minute after its grant, so
        // at most a minute's worth of them need to be kept.
        for i in 0..3000 {
            let env = Env {
                now: i * NANOS_PER_SEC,
                priority: Priority::P1,
                zone: Zone::Green,
                breaker_open: false,
                sequential: false,
                recovering: false,
                inflight: 0,
                sustain: 0,
                limit: 5000,
            };
            let name = format!("/e/{i}");
            rules.commit(&Request::read().with_endpoint(&name), &env);
            assert!(
                rules.endpoints.len() <= MAX_ENDPOINTS,
                "{} endpoints kept after {i}",
                rules.endpoints.len()
            );
        }
    }
}
