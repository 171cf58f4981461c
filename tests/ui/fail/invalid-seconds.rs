// M3 / R7: seconds must be finite and not negative (total_timeout: positive); a value that is
// not a number literal (a string, a const such as f64::NAN) is rejected with an example.
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

#[resilience::retry_service_operation(service = "plan_service", idempotent, base_delay = -1.5, total_timeout = 0)]
//~^ ERROR `base_delay` must be a finite number of seconds >= 0, got -1.5
//~| ERROR `total_timeout` must be a finite number of seconds > 0, got 0
fn get_plan(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

#[resilience::retry_service_operation(service = "plan_service", idempotent, max_delay = f64::NAN, total_timeout = 1e999)]
//~^ ERROR `max_delay` takes seconds as a number literal
//~| ERROR `total_timeout` must be a finite number of seconds > 0, got inf
fn list_plans(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

#[resilience::retry_service_operation(service = "plan_service", total_timeout = "30s")]
//~^ ERROR `total_timeout` takes seconds as a number literal
fn put_plan(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

fn main() {
    let _ = get_plan(1);
    let _ = list_plans(1);
    let _ = put_plan(1);
}
