// M3: a number whose type suffix cannot hold it is refused, as rustc would refuse the literal
// in code; it was read as if the suffix were not there (`300u8` as 300 attempts).
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

#[resilience::retry_service_operation(service = "plan_service", idempotent, max_attempts = 300u8, max_delay = 1e40f32, base_delay = -1u32)]
//~^ ERROR `300u8` does not fit in a `u8`
//~| ERROR `1e40f32` does not fit in a `f32`
//~| ERROR `-1u32` does not fit in a `u32`
fn get_plan(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

// Suffixes that fit are fine.
#[resilience::retry_service_operation(service = "plan_service", idempotent, max_attempts = 5u8, max_delay = 2.5f32)]
fn list_plans(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

fn main() {
    let _ = get_plan(1);
    let _ = list_plans(1);
}
