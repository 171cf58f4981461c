// M1 / M3: on a trait method declaration there is no body to guard; the message says to put it
// on the implementation (or on a default body).
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

pub trait Plans {
    #[resilience::retry_service_operation(service = "plan_service", idempotent)]
    fn get_plan(&self, id: u64) -> Result<u64, ApiError>;
    //~^ ERROR needs the fn's body
}

fn main() {}
