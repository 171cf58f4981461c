// M3: any path whose last segment is `Result` is accepted (`app::Result<T>`,
// `std::result::Result<T, E>`), in sync and `impl Future` forms.
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

mod app {
    pub type Result<T> = std::result::Result<T, super::ApiError>;
}

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
fn get_plan(id: u64) -> app::Result<u64> {
    Ok(id)
}

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
fn get_full(id: u64) -> std::result::Result<u64, ApiError> {
    Ok(id)
}

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
async fn get_async(id: u64) -> crate::app::Result<u64> {
    Ok(id)
}

fn main() {
    assert_eq!(get_plan(1).unwrap(), 1);
    assert_eq!(get_full(2).unwrap(), 2);
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    assert_eq!(rt.block_on(get_async(3)).unwrap(), 3);
}
