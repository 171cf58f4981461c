// M3 / R3: the return type must be a `Result` (any path ending in `Result`), or for a
// non-async fn `impl Future<Output = Result<..>>`; the error is on the offending type.
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

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
fn get_plan(id: u64) -> Option<u64> {
    //~^ ERROR expected a `Result<T, E>` return type
    Some(id)
}

#[resilience::retry_service_operation(service = "plan_service")]
fn ping() {}
//~^ ERROR which returns `()`

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
async fn count_plans() -> usize {
    //~^ ERROR expected a `Result<T, E>` return type
    0
}

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
fn stream_plans() -> impl std::future::Future<Output = Vec<u64>> {
    //~^ ERROR expected a `Result<T, E>` return type
    async { Vec::new() }
}

fn main() {
    let _ = get_plan(1);
    ping();
    let _ = count_plans();
    let _ = stream_plans();
}
