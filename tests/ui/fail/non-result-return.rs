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
    //~^ ERROR needs a fn returning `Result<T, E>`
    Some(id)
}

#[resilience::retry_service_operation(service = "plan_service")]
fn ping() {}
//~^ ERROR `ping` returns `()`

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
async fn count_plans() -> usize {
    //~^ ERROR needs a fn returning `Result<T, E>`
    0
}

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
fn stream_plans() -> impl std::future::Future<Output = Vec<u64>> {
    //~^ ERROR needs a fn returning `Result<T, E>`
    async { Vec::new() }
}

type PlanResult<T> = Result<T, ApiError>;

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
fn aliased(id: u64) -> PlanResult<u64> {
    //~^ ERROR a type alias of `Result` is accepted when its name is `Result`
    Ok(id)
}

fn main() {
    let _ = get_plan(1);
    ping();
    let _ = count_plans();
    let _ = stream_plans();
    let _ = aliased(1);
}
