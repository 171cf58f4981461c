//! `resilience-config`: explain and check the effective configuration.

fn main() {
    eprintln!("resilience-config: not implemented yet");
    std::process::exit(2);
}
