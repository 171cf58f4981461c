// M4: the attributes of a by-value argument apply to its per-attempt copy too: a `#[cfg]`'d
// out argument gets no copy (it used to be cloned anyway: "expected value, found enum"), and
// an `#[allow(..)]` on it still silences the lint on the copy's `mut`.
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
fn upload(
    #[cfg(any())] trace: String,
    #[cfg(all())] body: String,
    #[allow(unused_mut)] mut label: String,
) -> Result<usize, ApiError> {
    Ok(body.len() + label.len())
}

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
async fn upload_async(#[cfg(any())] trace: String, body: String) -> Result<usize, ApiError> {
    Ok(body.len())
}

fn main() {
    assert_eq!(upload("ab".into(), "c".into()).unwrap(), 3);
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    assert_eq!(rt.block_on(upload_async("ab".into())).unwrap(), 2);
}
