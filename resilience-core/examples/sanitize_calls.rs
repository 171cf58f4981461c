//! Calls `sanitize` N times on one message, for instruction counts under callgrind:
//! `valgrind --tool=callgrind target/release/examples/sanitize_calls MSG N` (diff N=1 and N=1001).
//! Without N, prints the sanitized message.

fn main() {
    let mut args = std::env::args().skip(1);
    let msg = args.next().unwrap_or_default();
    let Some(n) = args.next().and_then(|n| n.parse::<usize>().ok()) else {
        // No count: show what `sanitize` makes of the message.
        println!("{}", resilience_core::sanitize(&msg));
        return;
    };
    let mut total = 0;
    for _ in 0..n {
        total += resilience_core::sanitize(std::hint::black_box(&msg)).len();
    }
    println!("{total}");
}
