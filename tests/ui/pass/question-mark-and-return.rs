// M1: `?` and early `return` inside the body end the current attempt only; both infer
// against the declared error type.
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

#[derive(Debug)]
pub struct ParseError;

impl From<ParseError> for ApiError {
    fn from(_: ParseError) -> Self {
        ApiError
    }
}

fn parse(s: &str) -> Result<u64, ParseError> {
    s.parse().map_err(|_| ParseError)
}

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
fn get_plan(raw: &str) -> Result<u64, ApiError> {
    if raw.is_empty() {
        return Err(ApiError);
    }
    let id = parse(raw)?;
    if id == 0 {
        return Ok(0);
    }
    Ok(id * 2)
}

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
async fn get_plan_async(raw: &str) -> Result<u64, ApiError> {
    if raw.is_empty() {
        return Err(ApiError);
    }
    Ok(parse(raw)? + 1)
}

fn main() {
    assert_eq!(get_plan("4").unwrap(), 8);
    assert_eq!(get_plan("0").unwrap(), 0);
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    assert_eq!(rt.block_on(get_plan_async("4")).unwrap(), 5);
}
