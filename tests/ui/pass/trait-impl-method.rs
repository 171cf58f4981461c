// M1: trait impl methods (sync and async), generic traits, and a trait default method body.
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

pub trait Plans {
    fn get_plan(&self, id: u64) -> Result<u64, ApiError>;

    #[resilience::retry_service_operation(service = "plan_service", idempotent)]
    fn get_default(&self) -> Result<u64, ApiError> {
        self.get_plan(0)
    }
}

pub trait Store<K> {
    fn load(&self, key: K) -> Result<String, ApiError>;
    fn load_async(&self, key: K) -> impl std::future::Future<Output = Result<String, ApiError>>;
}

pub struct Client;

impl Plans for Client {
    #[resilience::retry_service_operation(service = "plan_service", idempotent)]
    fn get_plan(&self, id: u64) -> Result<u64, ApiError> {
        Ok(id + 1)
    }
}

// `K: Clone`: each retried attempt starts from its own clone of `key` (M4).
impl<K: std::fmt::Display + Clone> Store<K> for Client {
    #[resilience::retry_service_operation(service = "store", idempotent)]
    fn load(&self, key: K) -> Result<String, ApiError> {
        Ok(key.to_string())
    }

    #[resilience::retry_service_operation(service = "store", idempotent)]
    async fn load_async(&self, key: K) -> Result<String, ApiError> {
        Ok(key.to_string())
    }
}

fn main() {
    assert_eq!(Client.get_plan(1).unwrap(), 2);
    assert_eq!(Client.get_default().unwrap(), 1);
    assert_eq!(Client.load(5).unwrap(), "5");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    assert_eq!(rt.block_on(Client.load_async("k")).unwrap(), "k");
}
