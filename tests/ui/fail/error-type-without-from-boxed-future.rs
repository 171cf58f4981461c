// §3 / M3: a fn returning `Pin<Box<dyn Future<…>>>` (what `#[async_trait]` writes) whose error
// type lacks `From<resilience::ResilienceError>` gets the readable error once, as the other
// shapes do (error-type-without-from.rs), retried or not.
use std::future::Future;
use std::pin::Pin;

#[derive(Debug)]
pub struct BareError;

impl std::fmt::Display for BareError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("bare")
    }
}

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
fn stream_plans() -> Pin<Box<dyn Future<Output = Result<u64, BareError>> + Send>> {
    //~^ ERROR `BareError` cannot be the error type of a guarded fn
    Box::pin(async { Ok(1) })
}

#[resilience::retry_service_operation(service = "plan_service")]
fn push_plan() -> Pin<Box<dyn Future<Output = Result<u64, BareError>> + Send>> {
    //~^ ERROR `BareError` cannot be the error type of a guarded fn
    Box::pin(async { Ok(1) })
}

pub struct Plans;

impl Plans {
    #[resilience::retry_service_operation(service = "plan_service", idempotent)]
    fn fetch<'a>(&'a self, id: &'a str) -> Pin<Box<dyn Future<Output = Result<usize, BareError>> + Send + 'a>> {
        //~^ ERROR `BareError` cannot be the error type of a guarded fn
        Box::pin(async move { Ok(id.len()) })
    }
}

fn main() {
    let _ = Plans.fetch("x");
    let _ = stream_plans();
    let _ = push_plan();
}
