// M5: #[service_defaults] goes on an impl block, inline mod or trait; on a fn or struct it
// says where it belongs.
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

#[resilience::service_defaults(service = "plan_service")]
//~^ ERROR #[service_defaults] goes on an `impl` block or inline `mod`
fn get_plan(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

#[resilience::service_defaults(service = "plan_service")]
//~^ ERROR #[service_defaults] goes on an `impl` block, an inline `mod` or a trait
pub struct PlanClient;

fn main() {
    let _ = get_plan(1);
    let _ = PlanClient;
}
