// R12: `classify = ByHint` on an error type that does not implement `RetryHint`, or a
// classifier fn for another error type, is one readable error on the `classify` value.
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

use resilience::retry::{ByHint, ErrorClass};

#[resilience::retry_service_operation(service = "plan_service", idempotent, classify = ByHint)]
fn get_plan(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

#[resilience::retry_service_operation(service = "plan_service", idempotent, classify = ByHint)]
async fn list_plans(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

fn io_class(_: &std::io::Error) -> ErrorClass {
    ErrorClass::Transient
}

#[resilience::retry_service_operation(service = "plan_service", idempotent, classify = io_class)]
fn count_plans(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

fn main() {
    let _ = (get_plan(1), list_plans(1), count_plans(1));
}
