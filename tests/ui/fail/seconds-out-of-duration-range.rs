// M3, R7: a number of seconds the runtime cannot hold as a `Duration` (too large, or a total
// timeout that rounds to zero) is a compile error on the value. It used to compile, and at
// run time the fn's whole declared policy was dropped for its service's, with a log line.
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

#[resilience::retry_service_operation(service = "plan_service", idempotent, total_timeout = 1e20)]
//~^ ERROR `total_timeout` must be
fn get_plan(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

#[resilience::retry_service_operation(service = "plan_service", idempotent, max_delay = 1e30, total_timeout = 1e-10)]
//~^ ERROR `max_delay` must be
//~| ERROR `total_timeout` must be
fn list_plans(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

fn main() {
    let _ = get_plan(1);
    let _ = list_plans(1);
}
