// M4: a retried fn's `mut` argument moves into each attempt's fresh copy; when the body does
// not mutate it, rustc's "remove this `mut`" must point at the user's `mut` token (so that
// `cargo fix` removes the keyword, not the name).
#![deny(unused_mut)]

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
fn name_len(mut name: String) -> Result<usize, ApiError> {
    Ok(name.len())
}

fn main() {
    let _ = name_len(String::new());
}
