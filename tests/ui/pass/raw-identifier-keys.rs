// M3: argument keys written as raw identifiers (`r#idempotent`, as a `macro_rules!` may pass
// them on) are the keys themselves, not "unknown argument `idempotent`: did you mean
// `idempotent`?".
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

#[resilience::retry_service_operation(r#service = "plan_service", r#idempotent, r#max_attempts = 2)]
fn get_plan(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

fn main() {
    assert_eq!(get_plan(1).unwrap(), 1);
}
