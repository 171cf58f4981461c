// M3: unknown arguments are errors on their span, with the closest valid name when there is
// one and the full list otherwise; every unknown argument is reported in the same build.
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

#[resilience::retry_service_operation(service = "plan_service", idempotent, max_attempt = 5, retries = 2, colour = "blue")]
//~^ ERROR unknown argument `max_attempt`: did you mean `max_attempts`?
//~| ERROR unknown argument `retries`: did you mean `max_attempts`?
//~| ERROR unknown argument `colour`: valid arguments are
fn get_plan(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

fn main() {
    let _ = get_plan(1);
}
