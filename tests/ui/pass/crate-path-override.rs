// §3 `crate = "path"`: the expansion reaches the runtime through the given path instead of
// `::resilience`, for crates that re-export the facade under another name. (That the override
// is really used is shown by tests/macro_declared.rs,
// `crate_path_override_routes_the_expansion_through_the_given_path`.)
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

mod platform {
    pub use ::resilience as resilience;
}

#[resilience::retry_service_operation(service = "plan_service", idempotent, crate = "crate::platform::resilience")]
fn get_plan(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

#[resilience::retry_service_operation(service = "plan_service", crate = "::resilience")]
async fn put_plan(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

fn main() {
    assert_eq!(get_plan(1).unwrap(), 1);
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    assert_eq!(rt.block_on(put_plan(2)).unwrap(), 2);
}
