// M1: `impl Trait` in argument position, and in the `Ok` type (erased to `_` where the
// expansion annotates the attempt type). By-value arguments of a retried fn are `Clone`:
// each attempt starts from its own clone (M4).
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

use std::fmt::Display;

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
fn shout(s: impl AsRef<str> + Clone, n: impl Into<usize> + Copy) -> Result<String, ApiError> {
    Ok(s.as_ref().repeat(n.into()))
}

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
fn shown(x: u8) -> Result<impl Display, ApiError> {
    Ok(x)
}

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
fn iter(n: u32) -> Result<impl Iterator<Item = u32>, ApiError> {
    Ok(0..n)
}

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
async fn shown_async(x: impl Display + Clone) -> Result<impl Display, ApiError> {
    Ok(x.to_string())
}

fn main() {
    assert_eq!(shout("a", 3usize).unwrap(), "aaa");
    assert_eq!(shown(4).unwrap().to_string(), "4");
    assert_eq!(iter(3).unwrap().sum::<u32>(), 3);
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    assert_eq!(rt.block_on(shown_async(5)).unwrap().to_string(), "5");
}
