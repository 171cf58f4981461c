// M5 / M3: values in #[service_defaults] are checked once, there: `max_attempts = 0` is an
// error on the value, and the fns inside still compile without a second report.
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

pub struct PlanClient;

#[resilience::service_defaults(service = "plan_service", max_attempts = 0)]
//~^ ERROR `max_attempts = 0` would never run the operation
impl PlanClient {
    #[resilience::retry_service_operation(idempotent)]
    pub fn get_plan(&self, id: u64) -> Result<u64, ApiError> {
        Ok(id)
    }
}

fn main() {
    let _ = PlanClient.get_plan(1);
}
