// M1: a retried fn cannot return a borrow of a `&mut` input (each attempt borrows it
// again); the attribute says so on the borrow, instead of rustc's E0524 or "captured
// variable cannot escape `FnMut` closure body" on the attribute. Sync and async, elided and
// named lifetimes; a `&self` borrow and a run-once fn are fine.
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

pub struct Buffer {
    text: String,
}

impl Buffer {
    #[resilience::retry_service_operation(service = "plan_service", idempotent)]
    pub fn text_mut(&mut self) -> Result<&mut String, ApiError> {
        Ok(&mut self.text)
    }

    #[resilience::retry_service_operation(service = "plan_service", idempotent)]
    pub async fn append<'a>(&'a mut self, suffix: &str) -> Result<&'a str, ApiError> {
        self.text.push_str(suffix);
        Ok(&self.text)
    }

    #[resilience::retry_service_operation(service = "plan_service", idempotent)]
    pub fn text(&self) -> Result<&str, ApiError> {
        Ok(&self.text)
    }

    #[resilience::retry_service_operation(service = "plan_service")]
    pub fn take_mut(&mut self) -> Result<&mut String, ApiError> {
        Ok(&mut self.text)
    }
}

fn main() {}
