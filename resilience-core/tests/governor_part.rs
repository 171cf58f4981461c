//! One process's part of the secondary-limit budgets when several processes share a quota
//! (G7, G8): [`ResourceConfig::part`].

mod governor_support;

use governor_support::*;
use proptest::prelude::*;
use resilience_core::governor::{
    Decision, Measure, Priority, Request, ResourceConfig, Selector, WindowRule,
};
use std::time::Duration;

/// Three processes with a third each of GitHub's rules: together they stay within every
/// limit, and each part is a valid config.
#[test]
fn g7_g8_thirds_of_the_github_rules_add_up_to_no_more_than_the_rules() {
    let whole = ResourceConfig::github();
    let third = whole.part(1.0 / 3.0).unwrap();
    third.validate().unwrap();
    for (w, t) in whole.pacing.windows.iter().zip(&third.pacing.windows) {
        assert!(
            3 * t.limit <= w.limit,
            "{}: 3 × {} > {}",
            w.name,
            t.limit,
            w.limit
        );
        assert!(
            t.limit * 3 + 3 > w.limit,
            "{}: rounded down by at most one",
            w.name
        );
        assert!(3 * t.p0_headroom <= w.p0_headroom);
    }
    assert_eq!(third.pacing.max_concurrent, Some(33));
    assert_eq!(
        third.quota, whole.quota,
        "the primary quota is shared, not split"
    );
}

/// Spacing: three processes each keeping 3 s between mutations send, together, no more
/// than one every second.
#[test]
fn g7_g8_a_part_stretches_spacing_gaps() {
    let whole = ResourceConfig {
        pacing: resilience_core::governor::Pacing::github().with_write_spacing(secs(1)),
        ..ResourceConfig::default()
    };
    let third = whole.part(1.0 / 3.0).unwrap();
    let gap = third.pacing.spacings[0].gap;
    assert!(gap >= secs(3) && gap < secs(3) + ms(1), "{gap:?}");
}

/// A share that leaves a rule nothing is refused, naming the rule and what to do.
#[test]
fn g7_g8_a_part_too_small_for_a_rule_is_an_error_naming_it() {
    let e = ResourceConfig::github().part(1.0 / 100.0).unwrap_err();
    let text = e.to_string();
    assert_eq!(e.field(), "pacing.window.limit");
    assert!(text.contains("content_creating_per_minute"), "{text}");
    assert!(text.contains("larger share"), "{text}");
    let mut no_rules = ResourceConfig::github();
    no_rules.pacing.windows.clear();
    let e = no_rules.part(1.0 / 200.0).unwrap_err();
    assert_eq!(e.field(), "pacing.max_concurrent");
}

#[test]
fn g7_g8_a_share_outside_zero_to_one_is_an_error() {
    for share in [0.0, -0.5, 1.5, f64::NAN, f64::INFINITY] {
        let e = ResourceConfig::github().part(share).unwrap_err();
        assert_eq!(e.field(), "share", "{share}");
    }
    assert_eq!(
        ResourceConfig::github().part(1.0).unwrap(),
        ResourceConfig::github()
    );
}

/// Two governors (two processes), each with half of a rule of 4 creations per minute:
/// together they grant 4 in the minute, not 8.
#[test]
fn g7_g8_two_halves_of_a_rule_grant_together_what_the_rule_allows() {
    let mut whole = light_only();
    whole.pacing.windows.push(WindowRule::new(
        "creates",
        Selector::Creates,
        Measure::Requests,
        4,
        secs(60),
    ));
    let half = whole.part(0.5).unwrap();
    let granted: usize = (0..2)
        .map(|_| {
            let rig = Rig::new(half.clone());
            let a = rig.agent("builder", Priority::P1);
            let mut n = 0;
            while let Decision::Go(g) = rig.decide(a, &Request::create()) {
                rig.made(g);
                n += 1;
                assert!(n <= 4, "runaway");
            }
            rig.advance(secs(59));
            assert!(
                !matches!(rig.decide(a, &Request::create()), Decision::Go(_)),
                "still within the minute"
            );
            n
        })
        .sum();
    assert_eq!(granted, 4);
}

proptest! {
    /// However a quota's processes are weighted, parts whose shares add up to 1 add up to at
    /// most every limit, and each is valid or refused with an error (never a panic).
    #[test]
    fn g7_g8_weighted_parts_never_add_up_to_more_than_the_whole(
        weights in prop::collection::vec(1u32..100, 1..12),
        limit in 1u32..2000,
        headroom_pct in 0u32..50,
        burst in 1u32..200,
        cap in 1u32..200,
        gap_ms in 1u64..5000,
    ) {
        let mut whole = ResourceConfig::default();
        let headroom = (limit * headroom_pct / 100).min(limit - 1);
        let mut rule = WindowRule::new("r", Selector::All, Measure::Requests, limit, secs(60))
            .with_p0_headroom(headroom);
        rule = rule.smoothed(burst.min(limit - headroom));
        whole.pacing.windows.push(rule);
        whole.pacing.max_concurrent = Some(cap);
        whole.pacing = whole.pacing.with_write_spacing(ms(gap_ms));
        whole.validate().unwrap();
        let total: u32 = weights.iter().sum();
        let mut limits = 0;
        let mut caps = 0;
        let mut rate = 0.0;
        for w in &weights {
            match whole.part(f64::from(*w) / f64::from(total)) {
                Ok(p) => {
                    p.validate().unwrap();
                    limits += p.pacing.windows[0].limit;
                    caps += p.pacing.max_concurrent.unwrap();
                    rate += 1.0 / p.pacing.spacings[0].gap.as_secs_f64();
                }
                Err(e) => {
                    prop_assert!(
                        e.field() == "pacing.window.limit" || e.field() == "pacing.max_concurrent",
                        "{e}"
                    );
                }
            }
        }
        prop_assert!(limits <= limit);
        prop_assert!(caps <= cap);
        let whole_rate = 1.0 / Duration::from_millis(gap_ms).as_secs_f64();
        prop_assert!(rate <= whole_rate * (1.0 + 1e-9), "{rate} > {whole_rate}");
    }
}
