//! Cost of `sanitize` on a typical 200-character error message, with and without secrets.

use criterion::{criterion_group, criterion_main, Criterion};
use resilience_core::sanitize;
use std::hint::black_box;

/// 200 chars, two secrets (a URL password and an `api_key=` value).
fn with_two_secrets() -> String {
    let msg = format!(
        "request to https://svc:hunter2@api.internal/v1/plans failed after 3 attempts: \
         upstream said 503 Service Unavailable; api_key=sk-live-4f9a8b7c6d5e retrying later, \
         trace id 0a1b2c3d4e5f{}",
        "."
    );
    pad_to_200(msg)
}

/// 200 chars, nothing to redact.
fn clean() -> String {
    pad_to_200(
        "request to https://api.internal/v1/plans failed after 3 attempts: upstream said 503 \
         Service Unavailable; retry budget exhausted for service plan_service, operation \
         list_plans, trace id 0a1b2c3d4e5f"
            .to_owned(),
    )
}

fn pad_to_200(mut s: String) -> String {
    while s.chars().count() < 200 {
        s.push(' ');
    }
    s.chars().take(200).collect()
}

fn bench(c: &mut Criterion) {
    let dirty = with_two_secrets();
    let clean = clean();
    assert_eq!(dirty.chars().count(), 200);
    assert_eq!(clean.chars().count(), 200);
    assert_eq!(
        sanitize(&dirty).matches("***").count(),
        2,
        "{}",
        sanitize(&dirty)
    );
    assert_eq!(sanitize(&clean), clean);

    let mut group = c.benchmark_group("sanitize_200_chars");
    group.bench_function("two_secrets", |b| b.iter(|| sanitize(black_box(&dirty))));
    group.bench_function("clean", |b| b.iter(|| sanitize(black_box(&clean))));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
