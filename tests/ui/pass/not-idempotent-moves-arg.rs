// M4: a fn that is not retried runs its body exactly once (the driver's `once` consumes
// it), so the body may consume its arguments by value, sync or async.
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

fn send(body: String) -> Result<usize, ApiError> {
    Ok(body.len())
}

#[resilience::retry_service_operation(service = "plan_service")]
fn upload(body: String) -> Result<usize, ApiError> {
    send(body)
}

#[resilience::retry_service_operation(service = "plan_service", not_idempotent)]
async fn upload_async(body: String, tags: Vec<String>) -> Result<usize, ApiError> {
    drop(tags);
    send(body)
}

pub struct Session(String);

impl Session {
    #[resilience::retry_service_operation(service = "plan_service")]
    fn close(self) -> Result<usize, ApiError> {
        send(self.0)
    }
}

fn main() {
    assert_eq!(upload("abc".into()).unwrap(), 3);
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    assert_eq!(rt.block_on(upload_async("ab".into(), vec![])).unwrap(), 2);
    assert_eq!(Session("x".into()).close().unwrap(), 1);
}
