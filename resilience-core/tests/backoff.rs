//! Wait strategies (DESIGN.md R4, R5): exact schedules, floors, the hard cap after jitter,
//! and the validation of config input.

use proptest::prelude::*;
use resilience_core::backoff::{Backoff, BackoffStrategy, JitterRng};
use std::time::Duration;

const ALL: [BackoffStrategy; 5] = BackoffStrategy::ALL;

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

fn backoff(strategy: BackoffStrategy, base: f64, max: f64, jitter: bool) -> Backoff {
    match Backoff::from_secs(strategy, base, max, jitter) {
        Ok(b) => b,
        Err(e) => panic!("valid input rejected: {e}"),
    }
}

/// Delays before retries 1..=n with a generator seeded with `seed`.
fn schedule(b: &Backoff, seed: u64, n: u32) -> Vec<Duration> {
    let mut rng = JitterRng::seeded(seed);
    (1..=n).map(|retry| b.delay(retry, &mut rng)).collect()
}

/// The draws a generator seeded with `seed` yields, to predict seeded schedules.
fn draws(seed: u64, n: usize) -> Vec<f64> {
    let mut rng = JitterRng::seeded(seed);
    (0..n).map(|_| rng.unit()).collect()
}

/// `base · 2^(n-1)`, saturating at `Duration::MAX`, from the documented formula.
fn doubled(base: Duration, retry: u32) -> Duration {
    let shift = retry.max(1) - 1;
    let nanos = base.as_nanos();
    if nanos == 0 {
        return Duration::ZERO;
    }
    if shift >= nanos.leading_zeros() {
        return Duration::MAX;
    }
    let grown = nanos << shift;
    match u64::try_from(grown / 1_000_000_000) {
        Ok(s) => Duration::new(s, (grown % 1_000_000_000) as u32),
        Err(_) => Duration::MAX,
    }
}

// ---- R4: exact schedules ----

#[test]
fn r4_exponential_doubles_from_base_until_max_delay() {
    let b = backoff(BackoffStrategy::Exponential, 0.5, 10.0, false);
    let want = [0.5, 1.0, 2.0, 4.0, 8.0, 10.0, 10.0].map(secs);
    assert_eq!(schedule(&b, 1, 7), want);
}

#[test]
fn r4_linear_is_a_constant_delay() {
    let b = backoff(BackoffStrategy::Linear, 3.0, 60.0, false);
    assert_eq!(schedule(&b, 1, 6), [secs(3.0); 6]);
}

#[test]
fn r4_fixed_is_a_constant_delay() {
    let b = backoff(BackoffStrategy::Fixed, 0.25, 60.0, false);
    assert_eq!(schedule(&b, 1, 6), [secs(0.25); 6]);
}

#[test]
fn r4_none_never_waits_even_with_jitter() {
    for jitter in [false, true] {
        let b = backoff(BackoffStrategy::None, 5.0, 60.0, jitter);
        assert_eq!(schedule(&b, 9, 6), [Duration::ZERO; 6]);
    }
}

#[test]
fn r4_jitter_strategy_is_full_jitter_over_the_doubling_range() {
    let (base, max) = (secs(1.0), secs(5.0));
    let floor = BackoffStrategy::Jitter.floor();
    for jitter_flag in [false, true] {
        let b = Backoff::new(BackoffStrategy::Jitter, base, max, jitter_flag);
        let got = schedule(&b, 42, 6);
        let want: Vec<Duration> = draws(42, 6)
            .into_iter()
            .enumerate()
            .map(|(i, u)| {
                let top = doubled(base, i as u32 + 1).min(max);
                floor + (top - floor).mul_f64(u)
            })
            .collect();
        // The flag changes nothing on a strategy that is random already.
        assert_eq!(got, want, "jitter flag {jitter_flag}");
    }
}

#[test]
fn r4_jitter_flag_adds_up_to_one_base_delay_on_the_deterministic_strategies() {
    let base = secs(1.0);
    let max = secs(1000.0);
    for strategy in [
        BackoffStrategy::Exponential,
        BackoffStrategy::Linear,
        BackoffStrategy::Fixed,
    ] {
        let plain = Backoff::new(strategy, base, max, false);
        let jittered = Backoff::new(strategy, base, max, true);
        let eff = jittered.base_delay();
        let got = schedule(&jittered, 7, 6);
        let want: Vec<Duration> = schedule(&plain, 7, 6)
            .into_iter()
            .zip(draws(7, 6))
            .map(|(d, u)| (d + eff.mul_f64(u)).min(max))
            .collect();
        assert_eq!(got, want, "{strategy}");
        assert!(got.iter().zip(schedule(&plain, 7, 6)).any(|(j, p)| *j > p));
    }
}

#[test]
fn r4_same_seed_same_schedule_other_seed_other_schedule() {
    let b = backoff(BackoffStrategy::Exponential, 1.0, 600.0, true);
    assert_eq!(schedule(&b, 3, 8), schedule(&b, 3, 8));
    assert_ne!(schedule(&b, 3, 8), schedule(&b, 4, 8));
}

#[test]
fn r4_retry_zero_is_treated_as_retry_one() {
    for strategy in ALL {
        let b = backoff(strategy, 1.0, 60.0, true);
        let mut a = JitterRng::seeded(5);
        let mut c = JitterRng::seeded(5);
        assert_eq!(b.delay(0, &mut a), b.delay(1, &mut c), "{strategy}");
    }
}

#[test]
fn r4_max_delay_is_a_hard_cap_applied_after_jitter() {
    // base 1 s, cap 1.5 s: from retry 2 on, the doubled delay alone reaches the cap, so a cap
    // applied before jitter would give 1.5 s plus up to 1 s.
    let b = backoff(BackoffStrategy::Exponential, 1.0, 1.5, true);
    let got = schedule(&b, 11, 40);
    assert!(got.iter().all(|d| *d <= secs(1.5)), "{got:?}");
    assert!(got[1..].iter().all(|d| *d == secs(1.5)), "{got:?}");
    // Retry 1 is base plus jitter: over the base, capped.
    assert!(got[0] > secs(1.0));
    // Same for the constant strategies.
    for strategy in [BackoffStrategy::Fixed, BackoffStrategy::Linear] {
        let b = backoff(strategy, 3.0, 3.2, true);
        assert!(schedule(&b, 11, 40).iter().all(|d| *d <= secs(3.2)));
    }
}

#[test]
fn r4_exponential_keeps_doubling_past_2_pow_32_under_a_huge_cap() {
    let base = secs(0.1);
    let b = Backoff::new(BackoffStrategy::Exponential, base, Duration::MAX, false);
    let mut rng = JitterRng::seeded(0);
    for retry in [32, 33, 34, 40, 64, 65, 70] {
        assert_eq!(
            b.delay(retry, &mut rng),
            doubled(base, retry),
            "retry {retry}"
        );
    }
    assert_eq!(b.delay(200, &mut rng), Duration::MAX);
}

#[test]
fn r4_accessors_report_the_strategy_cap_and_jitter_flag_as_built() {
    for strategy in ALL {
        for jitter in [false, true] {
            let b = backoff(strategy, 1.0, 7.5, jitter);
            assert_eq!(b.strategy(), strategy);
            assert_eq!(b.max_delay(), secs(7.5), "{strategy}");
            assert_eq!(b.jitter(), jitter, "{strategy}");
        }
    }
}

// ---- R5: floors ----

#[test]
fn r5_floors_per_strategy() {
    assert_eq!(BackoffStrategy::Exponential.floor(), secs(0.1));
    assert_eq!(BackoffStrategy::Fixed.floor(), secs(0.1));
    assert_eq!(BackoffStrategy::Jitter.floor(), secs(0.1));
    assert_eq!(BackoffStrategy::Linear.floor(), secs(2.0));
    assert_eq!(BackoffStrategy::None.floor(), Duration::ZERO);
}

#[test]
fn r5_exponential_base_below_0_1s_clamps_to_0_1s() {
    let b = backoff(BackoffStrategy::Exponential, 0.05, 60.0, false);
    assert_eq!(b.base_delay(), secs(0.1));
    assert_eq!(schedule(&b, 0, 4), [0.1, 0.2, 0.4, 0.8].map(secs));
}

#[test]
fn r5_fixed_is_at_least_0_1s() {
    let b = backoff(BackoffStrategy::Fixed, 0.0, 60.0, false);
    assert_eq!(schedule(&b, 0, 3), [secs(0.1); 3]);
}

#[test]
fn r5_linear_is_at_least_2s_and_constant() {
    let b = backoff(BackoffStrategy::Linear, 0.5, 60.0, false);
    assert_eq!(b.base_delay(), secs(2.0));
    assert_eq!(schedule(&b, 0, 5), [secs(2.0); 5]);
}

#[test]
fn r5_jitter_is_at_least_0_1s() {
    let b = backoff(BackoffStrategy::Jitter, 0.01, 60.0, false);
    assert_eq!(b.base_delay(), secs(0.1));
    // Retry 1: the range [0.1 s, 0.1 s) is empty, so exactly the floor.
    assert_eq!(schedule(&b, 0, 1), [secs(0.1)]);
    assert!(schedule(&b, 8, 30).iter().all(|d| *d >= secs(0.1)));
}

#[test]
fn r5_base_above_the_floor_is_kept() {
    for (strategy, base) in [
        (BackoffStrategy::Exponential, 0.3),
        (BackoffStrategy::Fixed, 0.3),
        (BackoffStrategy::Jitter, 0.3),
        (BackoffStrategy::Linear, 2.5),
    ] {
        assert_eq!(
            backoff(strategy, base, 60.0, false).base_delay(),
            secs(base)
        );
    }
}

#[test]
fn r5_a_max_delay_below_the_floor_still_caps() {
    for strategy in [
        BackoffStrategy::Exponential,
        BackoffStrategy::Fixed,
        BackoffStrategy::Jitter,
        BackoffStrategy::Linear,
    ] {
        let b = backoff(strategy, 5.0, 0.05, true);
        assert_eq!(schedule(&b, 2, 5), [secs(0.05); 5], "{strategy}");
    }
}

// ---- validation ----

#[test]
fn r4_from_secs_rejects_nan_infinite_and_negative_naming_the_field() {
    for bad in [
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        -1.0,
        -1e-9,
        1e300,
    ] {
        for strategy in ALL {
            let err = Backoff::from_secs(strategy, bad, 60.0, false).expect_err("bad base");
            assert_eq!(err.field(), "base_delay", "{bad}");
            assert!(err.to_string().contains("base_delay"), "{err}");

            let err = Backoff::from_secs(strategy, 1.0, bad, false).expect_err("bad max");
            assert_eq!(err.field(), "max_delay", "{bad}");
            assert!(err.to_string().contains("max_delay"), "{err}");
        }
    }
}

#[test]
fn r4_from_secs_reports_base_delay_first_when_both_are_bad() {
    let err =
        Backoff::from_secs(BackoffStrategy::Fixed, f64::NAN, -1.0, false).expect_err("both bad");
    assert_eq!(err.field(), "base_delay");
}

#[test]
fn r4_from_secs_accepts_zero_and_keeps_max_as_given() {
    let b = backoff(BackoffStrategy::Exponential, 0.0, 0.0, false);
    assert_eq!(b.max_delay(), Duration::ZERO);
    assert_eq!(schedule(&b, 0, 3), [Duration::ZERO; 3]);
}

#[test]
fn r4_strategy_names_parse_and_round_trip() {
    for (name, strategy) in [
        ("exponential", BackoffStrategy::Exponential),
        ("linear", BackoffStrategy::Linear),
        ("fixed", BackoffStrategy::Fixed),
        ("jitter", BackoffStrategy::Jitter),
        ("none", BackoffStrategy::None),
    ] {
        assert_eq!(name.parse::<BackoffStrategy>(), Ok(strategy));
        assert_eq!(strategy.to_string(), name);
        let shouted = format!("  {}\t", name.to_uppercase());
        assert_eq!(shouted.parse::<BackoffStrategy>(), Ok(strategy));
    }
}

#[test]
fn r4_unknown_strategy_is_rejected_listing_the_five_names() {
    for bad in ["", "expo", "random", "exponential-backoff", "nonee"] {
        let err = bad.parse::<BackoffStrategy>().expect_err("unknown name");
        let msg = err.to_string();
        assert!(msg.contains(&format!("`{bad}`")), "{msg}");
        for name in ["exponential", "linear", "fixed", "jitter", "none"] {
            assert!(msg.contains(name), "{msg} lacks {name}");
        }
    }
}

// ---- properties ----

fn any_strategy() -> impl Strategy<Value = BackoffStrategy> {
    prop::sample::select(ALL.to_vec())
}

/// Config-sized values and the extremes (zero, tiny, huge, `Duration::MAX`).
fn any_duration() -> impl Strategy<Value = Duration> {
    prop_oneof![
        4 => (0.0..1000.0f64).prop_map(secs),
        1 => (0u64..1_000_000).prop_map(Duration::from_nanos),
        1 => (any::<u64>(), 0u32..1_000_000_000).prop_map(|(s, n)| Duration::new(s, n)),
        1 => Just(Duration::ZERO),
        1 => Just(Duration::MAX),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    /// R4 + R5: whatever the input, a delay never exceeds `max_delay` (after jitter), never
    /// falls below the floor (unless the cap is lower), and nothing panics, up to retry 70.
    #[test]
    fn r4_r5_delay_is_capped_after_jitter_and_floored(
        strategy in any_strategy(),
        base in any_duration(),
        max in any_duration(),
        jitter in any::<bool>(),
        retry in 0u32..=70,
        seed in any::<u64>(),
    ) {
        let b = Backoff::new(strategy, base, max, jitter);
        let d = b.delay(retry, &mut JitterRng::seeded(seed));
        prop_assert!(d <= max, "{d:?} > {max:?}");
        if strategy == BackoffStrategy::None {
            prop_assert_eq!(d, Duration::ZERO);
        } else {
            prop_assert!(d >= strategy.floor().min(max), "{d:?} under the floor");
        }
    }

    /// R4 + R5 through the config entry point: seconds as config gives them.
    #[test]
    fn r4_r5_from_secs_delays_are_bounded(
        strategy in any_strategy(),
        base in 0.0..1e6f64,
        max in 0.0..1e6f64,
        jitter in any::<bool>(),
        retry in 0u32..=70,
        seed in any::<u64>(),
    ) {
        let b = Backoff::from_secs(strategy, base, max, jitter).expect("finite, >= 0");
        let d = b.delay(retry, &mut JitterRng::seeded(seed));
        prop_assert!(d <= secs(max));
        if strategy != BackoffStrategy::None {
            prop_assert!(d >= strategy.floor().min(secs(max)));
        }
    }

    /// R4: without jitter, exponential is exactly `min(base · 2^(n-1), max)` (base floored).
    #[test]
    fn r4_exponential_is_exactly_doubling_then_capped(
        base in any_duration(),
        max in any_duration(),
        retry in 1u32..=130,
    ) {
        let b = Backoff::new(BackoffStrategy::Exponential, base, max, false);
        let eff = base.max(secs(0.1));
        prop_assert_eq!(b.delay(retry, &mut JitterRng::seeded(0)), doubled(eff, retry).min(max));
    }

    /// R4: with jitter, exponential stays within `[grown, grown + base]`, then capped.
    #[test]
    fn r4_jittered_exponential_stays_within_one_base_of_the_schedule(
        base in 0.0..100.0f64,
        max in 0.0..10_000.0f64,
        retry in 1u32..=70,
        seed in any::<u64>(),
    ) {
        let b = backoff(BackoffStrategy::Exponential, base, max, true);
        let eff = b.base_delay();
        let grown = doubled(eff, retry);
        let d = b.delay(retry, &mut JitterRng::seeded(seed));
        prop_assert!(d >= grown.min(secs(max)));
        prop_assert!(d <= grown.saturating_add(eff).min(secs(max)));
    }

    /// R4: the jitter strategy draws from `[floor, min(base · 2^(n-1), max))`.
    #[test]
    fn r4_jitter_strategy_stays_in_its_range(
        base in 0.0..100.0f64,
        max in 0.2..10_000.0f64,
        retry in 1u32..=70,
        seed in any::<u64>(),
    ) {
        let b = backoff(BackoffStrategy::Jitter, base, max, false);
        let top = doubled(b.base_delay(), retry).min(secs(max));
        let d = b.delay(retry, &mut JitterRng::seeded(seed));
        prop_assert!(d >= secs(0.1));
        prop_assert!(d <= top.max(secs(0.1)));
    }

    /// R4: `from_secs` never panics, and any rejection names one of the two fields.
    #[test]
    fn r4_from_secs_never_panics_and_names_the_field(
        strategy in any_strategy(),
        base in any::<f64>(),
        max in any::<f64>(),
        jitter in any::<bool>(),
    ) {
        match Backoff::from_secs(strategy, base, max, jitter) {
            Ok(b) => prop_assert!(b.base_delay() >= strategy.floor()),
            Err(e) => prop_assert!(["base_delay", "max_delay"].contains(&e.field())),
        }
    }
}
