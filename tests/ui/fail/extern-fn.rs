// M3: an `extern` fn cannot be guarded; the message says to guard a Rust fn it calls.
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
extern "C" fn get_plan(id: u64) -> Result<u64, ApiError> {
    //~^ ERROR cannot guard an `extern` fn
    Ok(id)
}

fn main() {
    let _ = get_plan(1);
}
