// M4: a retried fn's body may consume its by-value arguments: each attempt starts from a
// clone of each (plain, `mut`, destructured, `impl Trait`, generic), sync, async and
// `impl Future`; reference arguments are borrowed as before, never cloned.
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

fn consume<T>(_: T) {}

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
fn upload(body: String, mut tags: Vec<String>, (a, b): (String, u8), prefix: &str) -> Result<usize, ApiError> {
    tags.push(format!("{prefix}{a}{b}"));
    consume(a);
    Ok(body.into_bytes().len() + tags.len())
}

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
fn generic<T: Clone + Into<String>>(value: T, extra: impl Into<String> + Clone) -> Result<String, ApiError> {
    Ok(value.into() + &extra.into())
}

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
async fn upload_async(mut body: Vec<u8>) -> Result<usize, ApiError> {
    body.push(0);
    tokio::task::yield_now().await;
    consume(body);
    Ok(1)
}

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
fn upload_future(body: String) -> impl Future<Output = Result<usize, ApiError>> {
    async move { Ok(body.len()) }
}

// An upper-case binding is a binding (cloned per attempt); a unit-struct pattern of its own
// type (`Marker: Marker`) binds nothing, so it need not be `Clone`.
pub struct Marker;

#[allow(non_snake_case)]
#[resilience::retry_service_operation(service = "plan_service", idempotent)]
fn upper(Name: String, Marker: Marker) -> Result<usize, ApiError> {
    let owned = Name;
    Ok(owned.len())
}

pub struct Client;

impl Client {
    #[resilience::retry_service_operation(service = "plan_service", idempotent)]
    pub fn put(&self, r#type: String) -> Result<String, ApiError> {
        Ok(r#type)
    }
}

fn main() {
    assert_eq!(upload("ab".into(), vec![], ("x".into(), 1), "p").unwrap(), 3);
    assert_eq!(generic("a", "b").unwrap(), "ab");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    assert_eq!(rt.block_on(upload_async(vec![1])).unwrap(), 1);
    assert_eq!(rt.block_on(upload_future("abc".into())).unwrap(), 3);
    assert_eq!(Client.put("t".into()).unwrap(), "t");
    assert_eq!(upper("abcd".into(), Marker).unwrap(), 4);
}
