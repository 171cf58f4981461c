// M3: Rust lexes `30ms` as the number 30 with a suffix, and attribute tokens are never
// type-checked: the suffix must not be dropped silently (`total_timeout = 30ms` is not 30 s).
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

#[resilience::retry_service_operation(service = "plan_service", idempotent, total_timeout = 30ms, base_delay = 1.5s, max_delay = 2min)]
//~^ ERROR write `total_timeout = 0.03`
//~| ERROR write `base_delay = 1.5`
//~| ERROR write `max_delay = 120`
fn get_plan(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

#[resilience::retry_service_operation(service = "plan_service", idempotent, max_attempts = 3x, max_delay = 2.5f32, base_delay = 5parsecs)]
//~^ ERROR remove the suffix `x`
//~| ERROR with no unit suffix: e.g.
fn list_plans(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

fn main() {
    let _ = get_plan(1);
    let _ = list_plans(1);
}
