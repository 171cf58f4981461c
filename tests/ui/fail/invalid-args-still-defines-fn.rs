// M3: after an error in the arguments the original fn is still emitted, so its callers
// compile and only the attribute error is reported (no "cannot find function").
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

impl PlanClient {
    #[resilience::retry_service_operation(service = "plan_service", idempotent, max_attempts = 0)]
    //~^ ERROR `max_attempts = 0` would never run the operation
    pub fn get_plan(&self, id: u64) -> Result<u64, ApiError> {
        Ok(id)
    }
}

#[resilience::retry_service_operation(servce = "plan_service")]
//~^ ERROR unknown argument `servce`: did you mean `service`?
fn list_plans() -> Result<Vec<u64>, ApiError> {
    Ok(vec![1, 2])
}

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
fn not_a_result() -> u64 {
    //~^ ERROR expected a `Result<T, E>` return type
    7
}

fn main() {
    let plan: Result<u64, ApiError> = PlanClient.get_plan(1);
    let plans: Vec<u64> = list_plans().unwrap_or_default();
    let n: u64 = not_a_result();
    let _ = (plan, plans, n);
}
