// M3: a negative or oversized integer is reported as what it is (out of range), not as "not
// a number literal" or a parser's "invalid digit found in string".
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

#[resilience::retry_service_operation(service = "plan_service", idempotent, max_attempts = -1)]
//~^ ERROR `max_attempts` must be
fn get_plan(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

#[resilience::retry_service_operation(service = "plan_service", idempotent, total_timeout = -5, base_delay = 99999999999999999999999)]
//~^ ERROR `total_timeout` must be
//~| ERROR `base_delay` must be
fn list_plans(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

fn main() {
    let _ = get_plan(1);
    let _ = list_plans(1);
}
