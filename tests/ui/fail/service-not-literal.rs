// M3: a non-literal service (a const, a macro call) is an error on the value: attribute
// arguments are read at compile time.
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

const SERVICE: &str = "plan_service";

#[resilience::retry_service_operation(service = SERVICE, idempotent)]
//~^ ERROR `service` must be a string literal
fn get_plan(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

#[resilience::retry_service_operation(service = concat!("plan", "_service"))]
//~^ ERROR `service` must be a string literal
fn put_plan(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

fn main() {
    let _ = get_plan(1);
    let _ = put_plan(1);
    let _ = SERVICE;
}
