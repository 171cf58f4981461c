// M2: retry-tuning arguments on an operation that runs once are errors on their own span,
// with the fix (add `idempotent` or remove the argument) in the message.
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

#[resilience::retry_service_operation(service = "plan_service", max_attempts = 5, jitter = false)]
//~^ ERROR `max_attempts` tunes retries
//~| ERROR `jitter` tunes retries
fn apply_plan(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

#[resilience::retry_service_operation(service = "plan_service", backoff = "fixed", base_delay = 1, max_delay = 2)]
//~^ ERROR `backoff` tunes retries
//~| ERROR `base_delay` tunes retries
//~| ERROR `max_delay` tunes retries
fn delete_plan(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

fn main() {
    let _ = apply_plan(1);
    let _ = delete_plan(1);
}
