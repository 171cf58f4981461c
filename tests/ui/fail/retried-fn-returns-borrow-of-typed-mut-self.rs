// M1: `self: &mut Self` is `&mut self` spelt out: a retried fn returning a borrow of it gets
// the same clear error on the borrow, not rustc's "captured variable cannot escape `FnMut`
// closure body" inside the expansion.
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
    pub fn text_mut(self: &mut Self) -> Result<&mut String, ApiError> {
        Ok(&mut self.text)
    }

    #[resilience::retry_service_operation(service = "plan_service", idempotent)]
    pub fn text_mut_named<'a>(self: &'a mut Self) -> Result<&'a str, ApiError> {
        Ok(&self.text)
    }
}

fn main() {}
