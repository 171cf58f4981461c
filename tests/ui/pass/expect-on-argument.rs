// M4: an `#[expect(..)]` on a by-value argument is met as it would be without the attribute.
// The lints it names (an unneeded `mut`, an unused or oddly named binding) fire on the
// per-attempt copy, which holds the `mut` and is what the body uses; so the copy carries the
// expectation and the argument allows the same lints (its name still reaches `non_snake_case`).
#![deny(unfulfilled_lint_expectations, unused)]
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
    #[expect(unused_mut, reason = "kept for the example")] mut label: String,
    #[expect(unused_variables)] trace: String,
    #[expect(non_snake_case)] Body: String,
) -> Result<usize, ApiError> {
    Ok(label.len() + Body.len())
}

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
async fn upload_async(#[expect(unused_mut)] mut label: String) -> Result<usize, ApiError> {
    Ok(label.len())
}

fn main() {
    assert_eq!(upload("ab".into(), "t".into(), "c".into()).unwrap(), 3);
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    assert_eq!(rt.block_on(upload_async("ab".into())).unwrap(), 2);
}
