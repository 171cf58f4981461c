// M5: #[service_defaults] takes what is shared by a block; idempotency and the operation name
// are per-fn decisions and are rejected there, once, with the fix. The fns still compile.
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

#[resilience::service_defaults(service = "plan_service", idempotent, operation = "get")]
//~^ ERROR `idempotent` cannot be a default
//~| ERROR `operation` cannot be a default
impl PlanClient {
    #[resilience::retry_service_operation(idempotent)]
    pub fn get_plan(&self, id: u64) -> Result<u64, ApiError> {
        Ok(id)
    }
}

fn main() {
    let _ = PlanClient.get_plan(1);
}
