// R3: a non-async fn returning `impl Future<Output = Result<..>>` is detected as async. When
// retried, each attempt runs the body again for a fresh future, so the returned future owns
// the arguments (`+ '_` here); when not retried the body runs once at call time and only
// its future is captured, so a `'static` future stays `'static`.
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

use std::future::Future;

pub struct Client {
    base: String,
}

impl Client {
    #[resilience::retry_service_operation(service = "plan_service", idempotent)]
    pub fn get_plan(&self, id: u64) -> impl Future<Output = Result<String, ApiError>> + Send + '_ {
        async move { Ok(format!("{}/{id}", self.base)) }
    }

    #[resilience::retry_service_operation(service = "plan_service")]
    pub fn apply_plan(&self, id: u64) -> impl Future<Output = Result<String, ApiError>> + 'static {
        let base = self.base.clone();
        async move { Ok(format!("{base}/{id}/apply")) }
    }
}

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
fn ping() -> impl std::future::Future<Output = Result<(), ApiError>> {
    std::future::ready(Ok(()))
}

fn assert_static<T: 'static>(t: T) -> T {
    t
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let c = Client { base: "p".into() };
    assert_eq!(c.get_plan(1).await.unwrap(), "p/1");
    let fut = assert_static(c.apply_plan(2));
    drop(c);
    assert_eq!(fut.await.unwrap(), "p/2/apply");
    ping().await.unwrap();
}
