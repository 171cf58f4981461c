// M3 / R3: a `Result` alias is recognised by its name; one not named `Result` is an error on
// the type that says how to name it (pass/result-alias.rs shows the accepted forms).
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

type PlanResult<T> = Result<T, ApiError>;

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
fn aliased(id: u64) -> PlanResult<u64> {
    //~^ ERROR an alias of `Result` is recognised when it is named `Result`
    Ok(id)
}

fn main() {
    let _ = aliased(1);
}
