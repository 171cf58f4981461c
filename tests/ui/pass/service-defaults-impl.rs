// M5: #[service_defaults] on an impl block gives every annotated method its service and
// settings; per-fn arguments override them; writes ignore inherited retry tuning; all three
// spellings of the inner attribute path are recognised, with or without arguments.
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

use resilience::{retry_service_operation, service_defaults};

pub struct PlanClient;

#[service_defaults(service = "plan_service", total_timeout = 30, max_attempts = 4, backoff = "fixed", base_delay = 0.5)]
impl PlanClient {
    #[retry_service_operation(idempotent)]
    pub fn get_plan(&self, id: u64) -> Result<u64, ApiError> {
        Ok(id)
    }

    #[resilience::retry_service_operation(idempotent, max_attempts = 2, service = "plan_cache")]
    pub async fn get_cached(&self, id: u64) -> Result<u64, ApiError> {
        Ok(id)
    }

    // A write: inherits the service and total_timeout, not the retry tuning (M2 holds).
    #[::resilience::retry_service_operation]
    pub fn apply_plan(&self, id: u64) -> Result<u64, ApiError> {
        Ok(id)
    }

    #[retry_service_operation(not_idempotent, operation = "apply")]
    pub fn apply_named(&self, id: u64) -> Result<u64, ApiError> {
        Ok(id)
    }

    pub fn unguarded(&self) -> u64 {
        0
    }
}

fn main() {
    let c = PlanClient;
    assert_eq!(c.get_plan(1).unwrap(), 1);
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    assert_eq!(rt.block_on(c.get_cached(2)).unwrap(), 2);
    assert_eq!(c.apply_plan(3).unwrap(), 3);
    assert_eq!(c.apply_named(4).unwrap(), 4);
    assert_eq!(c.unguarded(), 0);
}
