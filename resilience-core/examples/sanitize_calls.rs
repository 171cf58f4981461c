//! Calls `sanitize` N times on one message, for instruction counts under callgrind:
//! `valgrind --tool=callgrind target/release/examples/sanitize_calls MSG N` (diff N=1 and N=1001).

fn main() {
    let mut args = std::env::args().skip(1);
    let msg = args.next().unwrap_or_default();
    let n: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(1);
    let mut total = 0;
    for _ in 0..n {
        total += resilience_core::sanitize(std::hint::black_box(&msg)).len();
    }
    println!("{total}");
}
