// M3: `crate` takes a module path; generic arguments (`"resilience<u8>"`) are refused on the
// literal, instead of parser errors ("comparison operators cannot be chained") reported on
// the fn's own return type.
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

#[resilience::retry_service_operation(service = "plan_service", idempotent, crate = "resilience<u8>")]
//~^ ERROR `crate` must be a path to the resilience facade
fn get_plan(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

fn main() {
    let _ = get_plan(1);
}
