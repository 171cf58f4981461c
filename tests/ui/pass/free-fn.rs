// M1: free fns of every visibility, `unsafe fn`, and pattern arguments.
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

use resilience::retry_service_operation;

#[retry_service_operation(service = "plan_service", idempotent)]
pub fn get_plan(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

#[retry_service_operation(service = "plan_service", idempotent, max_attempts = 2)]
pub(crate) fn sum((a, b): (u64, u64), _: u8) -> Result<u64, ApiError> {
    Ok(a + b)
}

/// # Safety
/// `p` must be valid for reads.
#[retry_service_operation(service = "plan_service", idempotent)]
unsafe fn read(p: *const u64) -> Result<u64, ApiError> {
    Ok(*p)
}

#[retry_service_operation(service = "plan_service", idempotent, total_timeout = 30, max_attempts = 4, backoff = "exponential", base_delay = 1, max_delay = 2.5, jitter = true, operation = "renamed")]
fn every_argument() -> Result<(), ApiError> {
    Ok(())
}

fn main() {
    assert_eq!(get_plan(3).unwrap(), 3);
    assert_eq!(sum((1, 2), 0).unwrap(), 3);
    let v = 9u64;
    assert_eq!(unsafe { read(&v) }.unwrap(), 9);
    every_argument().unwrap();
}
