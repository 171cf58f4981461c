// M3: a unit suffix is told its value in seconds, but that value is offered as the fix only
// when the argument takes it: `total_timeout = 0ms` is not told to write `total_timeout = 0`
// (refused: it must be > 0), and `-30ms` is seen as a unit through its `-`.
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

#[resilience::retry_service_operation(service = "plan_service", idempotent, total_timeout = 0ms, base_delay = -30ms)]
//~^ ERROR `0ms` is 0 seconds, and `total_timeout` must be
//~| ERROR `-30ms` is -0.03 seconds, and `base_delay` must be
fn get_plan(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

fn main() {
    let _ = get_plan(1);
}
