//! Any headers, status and body a server may send: observing them never panics, whatever
//! the state (G1 readings, G6 blocks, G3/G4 reactions).

mod governor_support;

use governor_support::*;
use resilience_core::governor::{Decision, Observation, Priority, Request, ResourceConfig};

mod fuzz {
    use super::*;
    use proptest::prelude::*;
    const NAMES: [&str; 10] = [
        "x-ratelimit-limit",
        "x-ratelimit-remaining",
        "x-ratelimit-reset",
        "x-ratelimit-used",
        "retry-after",
        "ratelimit",
        "ratelimit-policy",
        "ratelimit-reset",
        "ratelimit-limit",
        "x-ratelimit-resource",
    ];
    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]
        #[test]
        fn g1_g6_observing_any_headers_never_panics(hs in prop::collection::vec((0usize..10, "[0-9a-zA-Z ,;=\"\\.:-]{0,40}|[0-9]{1,20}"), 0..8),
                                status in prop::sample::select(vec![200u16, 304, 403, 429, 500]),
                                body in prop::option::of("(secondary rate limit|API rate limit exceeded|\"RATE_LIMITED\"|x)")) {
            let rig = Rig::new(ResourceConfig::github());
            let agents: Vec<_> = (0..3).map(|i| rig.agent(&format!("a{i}"), Priority::from_index(i).unwrap())).collect();
            let mut obs = Observation::from_headers(status, hs.iter().map(|(i, v)| (NAMES[*i], v.clone())));
            if let Some(b) = body { obs = obs.with_body(&b); }
            for round in 0..3 {
                for &a in &agents {
                    match rig.decide(a, &Request::create()) {
                        Decision::Go(g) => { let _ = rig.gov.observe(g, &obs); }
                        Decision::Wait(w) => rig.gov.cancel(&w.ticket),
                        Decision::Refuse(_) => {}
                    }
                }
                rig.advance(secs(7 * round + 1));
            }
            let s = rig.gov.snapshot(rig.core).unwrap();
            prop_assert!(s.remaining <= s.limit, "{s:?}");
            prop_assert!(s.blocked_for.is_none_or(|b| b <= secs(7 * 86_400)), "{s:?}");
        }
    }
}
