// M3: the attribute applies to fns; on anything else it says what to use instead, and the item
// is kept.
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

#[resilience::retry_service_operation(service = "plan_service")]
//~^ ERROR #[retry_service_operation] goes on a fn or method with a body
pub struct PlanClient;

fn main() {
    let _ = PlanClient;
}
