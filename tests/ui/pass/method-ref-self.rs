// M1: `&self` methods; the body borrows `self` and arguments, once per attempt.
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

pub struct PlanClient {
    plans: Vec<String>,
}

impl PlanClient {
    #[resilience::retry_service_operation(service = "plan_service", idempotent)]
    pub fn get_plan(&self, id: usize) -> Result<String, ApiError> {
        self.plans.get(id).cloned().ok_or(ApiError)
    }

    #[resilience::retry_service_operation(service = "plan_service", idempotent)]
    pub fn count(&self, filter: &str) -> Result<usize, ApiError> {
        Ok(self.plans.iter().filter(|p| p.contains(filter)).count())
    }

    #[resilience::retry_service_operation(service = "plan_service", idempotent)]
    pub fn typed_receiver(self: &Self) -> Result<usize, ApiError> {
        Ok(self.plans.len())
    }
}

fn main() {
    let c = PlanClient { plans: vec!["a".into(), "ab".into()] };
    assert_eq!(c.get_plan(1).unwrap(), "ab");
    assert_eq!(c.count("a").unwrap(), 2);
    assert_eq!(c.typed_receiver().unwrap(), 2);
}
