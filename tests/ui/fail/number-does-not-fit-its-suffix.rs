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
//~| ERROR `1e40f32` does not fit in a `f32`, and `max_delay` must be a number of seconds a `Duration` can hold
//~| ERROR `-1u32` does not fit in a `u32`, and `base_delay` must be a finite number of seconds >= 0
fn get_plan(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

// Named as written (`0x100u8`, not `256u8`); the bare number is offered only when the
// argument accepts it, else the argument's own rule is said (`1e40` is past a `Duration`,
// `1e309` is infinite).
#[resilience::retry_service_operation(service = "plan_service", idempotent, max_attempts = 0x100u8, total_timeout = 1e309f64, base_delay = 1e40f32)]
//~^ ERROR `0x100u8` does not fit in a `u8`: write the number without a type suffix, e.g. `max_attempts = 0x100`
//~| ERROR `1e309f64` does not fit in a `f64`, and `total_timeout` must be a finite number of seconds > 0
//~| ERROR `1e40f32` does not fit in a `f32`, and `base_delay` must be a number of seconds a `Duration` can hold
fn get_plans(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

// Suffixes that fit are fine.
#[resilience::retry_service_operation(service = "plan_service", idempotent, max_attempts = 5u8, max_delay = 2.5f32)]
fn list_plans(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

fn main() {
    let _ = get_plan(1);
    let _ = get_plans(1);
    let _ = list_plans(1);
}
