// M4: a retried fn whose body consumes an argument by value cannot give the next attempt a
// fresh one; rustc rejects it with "value moved here, in previous iteration of loop", naming
// the argument. This is the intended, documented outcome: take the argument by reference
// (or clone it inside the body), or drop `idempotent` if the operation must run once (see
// pass/not-idempotent-moves-arg.rs).
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

fn send(body: String) -> Result<usize, ApiError> {
    Ok(body.len())
}

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
fn upload(body: String) -> Result<usize, ApiError> {
    send(body)
    //~^ ERROR use of moved value: `body`
}

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
async fn upload_async(body: String) -> Result<usize, ApiError> {
    send(body)
    //~^ ERROR use of moved value: `body`
}

fn main() {
    let _ = upload(String::new());
    let _ = upload_async(String::new());
}
