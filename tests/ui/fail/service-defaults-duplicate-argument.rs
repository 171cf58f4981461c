// M5 / M3: an argument given twice in #[service_defaults] is an error on the second one.
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

#[resilience::service_defaults(service = "plan_service", total_timeout = 5, total_timeout = 6)]
//~^ ERROR duplicate argument `total_timeout`
impl PlanClient {
    #[resilience::retry_service_operation(idempotent)]
    pub fn get_plan(&self, id: u64) -> Result<u64, ApiError> {
        Ok(id)
    }
}

fn main() {
    let _ = PlanClient.get_plan(1);
}
