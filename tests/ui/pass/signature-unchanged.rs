// M1: the signature is unchanged: guarded fns coerce to the same fn pointer types and satisfy
// the same trait signatures as the unguarded originals.
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
    pub fn get_plan(&self, id: u64) -> Result<u64, ApiError> {
        Ok(id)
    }

    #[resilience::retry_service_operation(service = "plan_service")]
    pub fn set_plan(&mut self, id: u64) -> Result<u64, ApiError> {
        Ok(id)
    }
}

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
pub fn get_plan(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

fn main() {
    let f: fn(u64) -> Result<u64, ApiError> = get_plan;
    let m: fn(&Client, u64) -> Result<u64, ApiError> = Client::get_plan;
    let w: for<'a> fn(&'a mut Client, u64) -> Result<u64, ApiError> = Client::set_plan;
    assert_eq!(f(1).unwrap() + m(&Client, 2).unwrap() + w(&mut Client, 3).unwrap(), 6);
}
