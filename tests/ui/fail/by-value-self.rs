// M3: a retried fn cannot take `self` by value (the first attempt would consume it); the
// same receiver is fine on a fn that runs once.
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

pub struct Client;

impl Client {
    #[resilience::retry_service_operation(service = "plan_service", idempotent)]
    fn get_plan(self, id: u64) -> Result<u64, ApiError> {
        //~^ ERROR a retried fn cannot take `self` by value
        Ok(id)
    }

    #[resilience::retry_service_operation(service = "plan_service", idempotent)]
    fn get_plans(self: Self, id: u64) -> Result<u64, ApiError> {
        //~^ ERROR a retried fn cannot take `self` by value
        Ok(id)
    }

    // Not retried: runs once, so consuming `self` is fine.
    #[resilience::retry_service_operation(service = "plan_service")]
    fn close(self) -> Result<(), ApiError> {
        Ok(())
    }
}

fn main() {
    let _ = Client.get_plan(1);
    let _ = Client.get_plans(1);
    let _ = Client.close();
}
