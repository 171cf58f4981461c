// M2: retry tuning on an operation marked `not_idempotent` is an error on the tuning argument,
// saying the operation is marked to run once.
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

#[resilience::retry_service_operation(service = "plan_service", not_idempotent, max_attempts = 2)]
//~^ ERROR `max_attempts` tunes retries, but this operation is marked `not_idempotent`
fn delete_plan(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

fn main() {
    let _ = delete_plan(1);
}
