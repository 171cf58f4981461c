// M1: named and elided lifetimes in arguments and in the `Ok` type.
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
fn first<'a>(items: &'a [String]) -> Result<&'a str, ApiError> {
    items.first().map(String::as_str).ok_or(ApiError)
}

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
fn longest<'a, 'b: 'a>(a: &'a str, b: &'b str) -> Result<&'a str, ApiError> {
    Ok(if a.len() >= b.len() { a } else { b })
}

pub struct Doc {
    title: String,
}

impl Doc {
    #[resilience::retry_service_operation(service = "doc", idempotent)]
    fn title(&self) -> Result<&str, ApiError> {
        Ok(&self.title)
    }

    #[resilience::retry_service_operation(service = "doc", idempotent)]
    async fn title_async(&self) -> Result<&str, ApiError> {
        Ok(&self.title)
    }
}

fn main() {
    let v = vec!["x".to_string()];
    assert_eq!(first(&v).unwrap(), "x");
    assert_eq!(longest("ab", "c").unwrap(), "ab");
    let d = Doc { title: "t".into() };
    assert_eq!(d.title().unwrap(), "t");
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    assert_eq!(rt.block_on(d.title_async()).unwrap(), "t");
}
