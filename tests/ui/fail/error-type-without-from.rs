// §3 / M3: the error type must carry the framework's refusals. A missing
// `From<resilience::ResilienceError>` is reported in words, on the error type, exactly once
// per fn: sync or async, retried or not, `async fn` or `impl Future`.

#[derive(Debug)]
pub struct BareError;

impl std::fmt::Display for BareError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("bare")
    }
}

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
fn get_plan(id: u64) -> Result<u64, BareError> {
    //~^ ERROR `BareError` cannot be the error type of a guarded fn
    Ok(id)
}

#[resilience::retry_service_operation(service = "plan_service")]
async fn put_plan(id: u64) -> Result<u64, BareError> {
    //~^ ERROR `BareError` cannot be the error type of a guarded fn
    Ok(id)
}

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
async fn list_plans() -> Result<Vec<u64>, BareError> {
    //~^ ERROR `BareError` cannot be the error type of a guarded fn
    Ok(Vec::new())
}

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
fn stream_plans() -> impl std::future::Future<Output = Result<u64, BareError>> {
    //~^ ERROR `BareError` cannot be the error type of a guarded fn
    async { Ok(1) }
}

#[resilience::retry_service_operation(service = "plan_service")]
fn push_plan() -> impl std::future::Future<Output = Result<u64, BareError>> {
    //~^ ERROR `BareError` cannot be the error type of a guarded fn
    async { Ok(1) }
}

fn main() {
    let _ = stream_plans();
    let _ = push_plan();
    let _ = get_plan(1);
    let _ = put_plan(1);
    let _ = list_plans();
}
