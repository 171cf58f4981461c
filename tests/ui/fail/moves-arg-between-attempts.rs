// M4: each attempt of a retried fn starts from a clone of every by-value argument, so a body
// may consume them; an argument whose type is not `Clone` is an error on that argument (the
// snippet names it), with the fixes (take it by reference, make it `Clone`, or drop `idempotent`; see
// pass/not-idempotent-moves-arg.rs and pass/retried-moves-arg.rs).
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

pub struct Payload(String);

fn send(body: Payload) -> Result<usize, ApiError> {
    Ok(body.0.len())
}

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
fn upload(body: Payload) -> Result<usize, ApiError> {
    send(body)
}

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
async fn upload_async(id: u64, mut body: Payload) -> Result<usize, ApiError> {
    body.0.push_str("!");
    let _ = id;
    send(body)
}

fn main() {
    let _ = upload(Payload(String::new()));
    let _ = upload_async(1, Payload(String::new()));
}
