// M3: an argument given twice is an error on the second occurrence, for every key alike
// (one set-once path in args.rs).
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

#[resilience::retry_service_operation(service = "plan_service", idempotent, service = "other", idempotent, max_attempts = 2, max_attempts = 3)]
//~^ ERROR duplicate argument `service`
//~| ERROR duplicate argument `idempotent`
//~| ERROR duplicate argument `max_attempts`
fn get_plan(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

fn main() {
    let _ = get_plan(1);
}
