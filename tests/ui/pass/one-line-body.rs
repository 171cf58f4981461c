// M1: a body written on one line expands without lints on the user's code. The attempt
// wraps the body after the fresh clones (M4) or the async return edge; a bare nested block
// there made rustc report "unnecessary braces around block return value" on the fn's own
// braces.
#![deny(unused)]

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

#[rustfmt::skip]
#[resilience::retry_service_operation(service = "plan_service", idempotent)]
fn get_plan(id: u64) -> Result<u64, ApiError> { Ok(id) }

#[rustfmt::skip]
#[resilience::retry_service_operation(service = "plan_service", idempotent)]
async fn list_plans(id: u64) -> Result<u64, ApiError> { Ok(id) }

#[rustfmt::skip]
#[resilience::retry_service_operation(service = "plan_service")]
async fn put_plan(id: u64) -> Result<u64, ApiError> { Ok(id) }

#[rustfmt::skip]
#[resilience::retry_service_operation(service = "plan_service")]
fn write_plan(id: u64) -> Result<u64, ApiError> { Ok(id) }

fn main() {
    assert_eq!(get_plan(1).unwrap(), 1);
    assert_eq!(write_plan(4).unwrap(), 4);
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    assert_eq!(rt.block_on(list_plans(2)).unwrap(), 2);
    assert_eq!(rt.block_on(put_plan(3)).unwrap(), 3);
}
