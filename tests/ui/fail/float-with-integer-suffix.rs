// M3: a float literal with an integer suffix (`1e3u32`) is refused as such, as rustc would
// refuse it in code; it was called a number too large for a `u32`.
#[derive(Debug)]
pub struct ApiError;
impl From<resilience::ResilienceError> for ApiError {
    fn from(_: resilience::ResilienceError) -> Self {
        ApiError
    }
}
impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("api error")
    }
}

#[resilience::retry_service_operation(service = "plan_service", idempotent, base_delay = 1e3u32, max_attempts = 2.0u8)]
//~^ ERROR `1e3u32` is a float literal with the integer suffix `u32`, which Rust refuses: write the number without it, e.g. `base_delay = 1e3`
//~| ERROR `2.0u8` is a float literal with the integer suffix `u8`, which Rust refuses, and `max_attempts` takes a whole number literal, e.g. `max_attempts = 3`
fn get_plan(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

fn main() {
    let _ = get_plan(1);
}
