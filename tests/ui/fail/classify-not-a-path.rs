// R12: `classify` takes the path of a classifier (a unit struct, const or fn), not a string
// or a closure; the message says what to write.
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

#[resilience::retry_service_operation(service = "plan_service", idempotent, classify = "hint")]
//~^ ERROR `classify` takes the path of a classifier
fn get_plan(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

#[resilience::retry_service_operation(service = "plan_service", idempotent, classify = |_e: &ApiError| resilience::retry::ErrorClass::Permanent)]
//~^ ERROR `classify` takes the path of a classifier
fn list_plans(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

#[resilience::retry_service_operation(service = "plan_service", idempotent, classify)]
//~^ ERROR `classify` needs a value
fn count_plans(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

fn main() {
    let _ = (get_plan(1), list_plans(1), count_plans(1));
}
