// R12 / M5: a `classify` declared in #[service_defaults] is checked where each annotated fn
// inherits it, a write too (its classifier picks what reaches the service's Retry-After
// sink), against that fn's error type, and reported on the value. A value that is not a
// path is reported once, at the defaults.
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

#[resilience::service_defaults(service = "plan_service", classify = resilience::retry::ByHint)]
impl PlanClient {
    #[resilience::retry_service_operation(idempotent)]
    pub fn get_plan(&self, id: u64) -> Result<u64, ApiError> {
        Ok(id)
    }

    #[resilience::retry_service_operation]
    pub fn apply_plan(&self, id: u64) -> Result<u64, ApiError> {
        Ok(id)
    }
}

#[resilience::service_defaults(service = "plan_service", classify = "hint")]
impl PlanClient {
    #[resilience::retry_service_operation(idempotent)]
    pub fn list_plans(&self, id: u64) -> Result<u64, ApiError> {
        Ok(id)
    }

    #[resilience::retry_service_operation(idempotent)]
    pub fn count_plans(&self, id: u64) -> Result<u64, ApiError> {
        Ok(id)
    }
}

fn main() {
    let _ = PlanClient.get_plan(1);
    let _ = PlanClient.apply_plan(1);
    let _ = PlanClient.list_plans(1);
    let _ = PlanClient.count_plans(1);
}
