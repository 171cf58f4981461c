// M5 / M3: an unknown argument in #[service_defaults] is an error on its span, with the
// closest valid name; the fns inside still compile.
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

#[resilience::service_defaults(service = "plan_service", max_atempts = 2)]
//~^ ERROR unknown argument `max_atempts`
impl PlanClient {
    #[resilience::retry_service_operation(idempotent)]
    pub fn get_plan(&self, id: u64) -> Result<u64, ApiError> {
        Ok(id)
    }
}

fn main() {
    let _ = PlanClient.get_plan(1);
}
