// M3: any path whose last segment is `Result` is accepted (`app::Result<T>`,
// `std::result::Result<T, E>`, `std::io::Result<T>`: `io::Error` carries the framework's
// refusals), sync, `async fn` and `impl Future`, retried or not.
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

#[resilience::retry_service_operation(service = "plan_service")]
async fn put_async(id: u64) -> app::Result<u64> {
    Ok(id)
}

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
fn stream(id: u64) -> impl std::future::Future<Output = app::Result<u64>> {
    async move { Ok(id) }
}

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
fn read_file(id: u64) -> std::io::Result<u64> {
    Ok(id)
}

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
async fn read_async(id: u64) -> std::io::Result<u64> {
    Ok(id)
}

#[resilience::retry_service_operation(service = "plan_service")]
fn write_stream(id: u64) -> impl std::future::Future<Output = std::io::Result<u64>> {
    async move { Ok(id) }
}

fn main() {
    assert_eq!(get_plan(1).unwrap(), 1);
    assert_eq!(get_full(2).unwrap(), 2);
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    assert_eq!(rt.block_on(get_async(3)).unwrap(), 3);
    assert_eq!(rt.block_on(put_async(4)).unwrap(), 4);
    assert_eq!(rt.block_on(stream(5)).unwrap(), 5);
    assert_eq!(read_file(6).unwrap(), 6);
    assert_eq!(rt.block_on(read_async(7)).unwrap(), 7);
    assert_eq!(rt.block_on(write_stream(8)).unwrap(), 8);
}
