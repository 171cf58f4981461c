// R12 through the attribute: `classify = <path>` on every retried shape (sync, async fn,
// `impl Future`, a `&self` method), as `ByHint` or a named fn, and inherited from
// #[service_defaults]; and on writes of every shape, own or inherited (a write runs once:
// its classifier picks the errors whose Retry-After reaches the service's sink).
use resilience::retry::{ByHint, ErrorClass, RetryHint};
use resilience::{retry_service_operation, service_defaults};
use std::future::Future;
use std::time::Duration;

#[derive(Debug)]
pub enum ApiError {
    NotFound,
    Throttled(u64),
    Refused(resilience::ResilienceError),
}
impl From<resilience::ResilienceError> for ApiError {
    fn from(e: resilience::ResilienceError) -> Self {
        ApiError::Refused(e)
    }
}
impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("api error")
    }
}
impl RetryHint for ApiError {
    fn retry_hint(&self) -> ErrorClass {
        match self {
            ApiError::NotFound => ErrorClass::Permanent,
            ApiError::Throttled(s) => ErrorClass::RetryAfter(Duration::from_secs(*s)),
            ApiError::Refused(_) => ErrorClass::Permanent,
        }
    }
}

fn only_throttling_retries(e: &ApiError) -> ErrorClass {
    match e {
        ApiError::Throttled(_) => ErrorClass::Transient,
        _ => ErrorClass::Permanent,
    }
}

#[retry_service_operation(service = "ui_classify", idempotent, classify = ByHint)]
fn sync_read(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

#[retry_service_operation(service = "ui_classify", idempotent, classify = resilience::retry::ByHint)]
async fn async_read(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

#[retry_service_operation(service = "ui_classify", idempotent, classify = only_throttling_retries)]
fn future_read(id: u64) -> impl Future<Output = Result<u64, ApiError>> {
    async move { Ok(id) }
}

// A generic error type (not `'static`) and an error that borrows.
#[retry_service_operation(service = "ui_classify", idempotent, classify = ByHint)]
fn generic_read<E>(id: u64) -> Result<u64, E>
where
    E: From<resilience::ResilienceError> + std::fmt::Display + RetryHint,
{
    Ok(id)
}

#[derive(Debug)]
pub enum Borrowed<'a> {
    Missing(&'a str),
    Refused(resilience::ResilienceError),
}
impl From<resilience::ResilienceError> for Borrowed<'_> {
    fn from(e: resilience::ResilienceError) -> Self {
        Borrowed::Refused(e)
    }
}
impl std::fmt::Display for Borrowed<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Borrowed::Missing(k) => write!(f, "missing {k}"),
            Borrowed::Refused(e) => write!(f, "{e}"),
        }
    }
}
impl RetryHint for Borrowed<'_> {
    fn retry_hint(&self) -> ErrorClass {
        ErrorClass::Permanent
    }
}

#[retry_service_operation(service = "ui_classify", idempotent, classify = ByHint)]
async fn borrowing_read<'a>(keys: &'a [String], i: usize) -> Result<u64, Borrowed<'a>> {
    keys.get(i).map(|_| i as u64).ok_or(Borrowed::Missing("key"))
}

// The value handed through `macro_rules!` fragments, as a path or an expression.
macro_rules! classified_read {
    ($name:ident, $c:path, $d:expr) => {
        #[retry_service_operation(service = "ui_classify", idempotent, classify = $c)]
        fn $name(id: u64) -> Result<u64, ApiError> {
            Ok(id)
        }

        #[retry_service_operation(service = "ui_classify", idempotent, classify = $d)]
        async fn expr_read(id: u64) -> Result<u64, ApiError> {
            Ok(id)
        }
    };
}
classified_read!(macro_read, ByHint, only_throttling_retries);

// An associated const, and a boxed future (what `#[async_trait]` makes of an `async fn`).
pub struct Hinted;
impl Hinted {
    const CLASSIFIER: ByHint = ByHint;

    #[retry_service_operation(service = "ui_classify", idempotent, classify = Self::CLASSIFIER)]
    fn read(&self, id: u64) -> Result<u64, ApiError> {
        Ok(id)
    }

    #[retry_service_operation(service = "ui_classify", idempotent, classify = ByHint)]
    fn boxed_read(
        &self,
        id: u64,
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<u64, ApiError>> + Send + '_>> {
        Box::pin(async move { Ok(id) })
    }
}

pub struct Client;

#[service_defaults(service = "ui_classify", classify = ByHint)]
impl Client {
    #[retry_service_operation(idempotent)]
    pub fn inherited(&self, id: u64) -> Result<u64, ApiError> {
        Ok(id)
    }

    #[retry_service_operation(idempotent, classify = only_throttling_retries)]
    pub async fn own(&self, id: u64) -> Result<u64, ApiError> {
        Ok(id)
    }

    // A write runs once; the inherited classifier picks which of its errors report a
    // Retry-After to the service's sink.
    #[retry_service_operation]
    pub fn write(&self, id: u64) -> Result<u64, ApiError> {
        Ok(id)
    }
}

// Writes with their own classifier, in every shape.
#[retry_service_operation(service = "ui_classify", classify = ByHint)]
fn sync_write(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

#[retry_service_operation(service = "ui_classify", not_idempotent, classify = only_throttling_retries)]
async fn async_write(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

#[retry_service_operation(service = "ui_classify", classify = ByHint)]
fn future_write(id: u64) -> impl Future<Output = Result<u64, ApiError>> {
    async move { Ok(id) }
}

#[retry_service_operation(service = "ui_classify", classify = ByHint)]
fn boxed_write(id: u64) -> std::pin::Pin<Box<dyn Future<Output = Result<u64, ApiError>> + Send>> {
    Box::pin(async move { Ok(id) })
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    assert_eq!(sync_read(1).unwrap(), 1);
    assert_eq!(rt.block_on(async_read(2)).unwrap(), 2);
    assert_eq!(rt.block_on(future_read(3)).unwrap(), 3);
    let c = Client;
    assert_eq!(c.inherited(4).unwrap(), 4);
    assert_eq!(rt.block_on(c.own(5)).unwrap(), 5);
    assert_eq!(c.write(6).unwrap(), 6);
    assert_eq!(sync_write(11).unwrap(), 11);
    assert_eq!(rt.block_on(async_write(12)).unwrap(), 12);
    assert_eq!(rt.block_on(future_write(13)).unwrap(), 13);
    assert_eq!(rt.block_on(boxed_write(14)).unwrap(), 14);
    assert_eq!(generic_read::<ApiError>(7).unwrap(), 7);
    assert_eq!(macro_read(8).unwrap(), 8);
    assert_eq!(rt.block_on(expr_read(9)).unwrap(), 9);
    assert_eq!(Hinted.read(10).unwrap(), 10);
    assert_eq!(rt.block_on(Hinted.boxed_read(11)).unwrap(), 11);
    // The boxed future is still `Send`, with its classifier.
    fn is_send<T: Send>(_: &T) {}
    is_send(&Hinted.boxed_read(12));
    let keys = vec!["a".to_string()];
    assert_eq!(rt.block_on(borrowing_read(&keys, 0)).unwrap(), 0);
}
