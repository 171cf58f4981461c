// M1 / R3: async fns and methods (`&self`, `&mut self`, generic) are detected by themselves;
// their futures stay `Send` when the body is.
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

use std::sync::atomic::{AtomicU32, Ordering};

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
async fn get_plan(id: u64) -> Result<u64, ApiError> {
    tokio::task::yield_now().await;
    Ok(id)
}

pub struct Client {
    calls: AtomicU32,
    log: Vec<u64>,
}

impl Client {
    #[resilience::retry_service_operation(service = "plan_service", idempotent)]
    pub async fn fetch(&self, id: u64) -> Result<u64, ApiError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        get_plan(id).await
    }

    #[resilience::retry_service_operation(service = "plan_service")]
    pub async fn record(&mut self, id: u64) -> Result<usize, ApiError> {
        self.log.push(id);
        Ok(self.log.len())
    }

    #[resilience::retry_service_operation(service = "plan_service", idempotent)]
    pub async fn fetch_as<T: From<u64> + Send>(&self, id: u64) -> Result<T, ApiError> {
        Ok(T::from(self.fetch(id).await?))
    }
}

fn assert_send<T: Send>(t: T) -> T {
    t
}

#[tokio::main]
async fn main() {
    let mut c = Client { calls: AtomicU32::new(0), log: Vec::new() };
    assert_eq!(assert_send(c.fetch(2)).await.unwrap(), 2);
    assert_eq!(c.record(1).await.unwrap(), 1);
    let v: u128 = c.fetch_as(7).await.unwrap();
    assert_eq!(v, 7);
    let spawned = tokio::spawn(get_plan(9)).await.unwrap();
    assert_eq!(spawned.unwrap(), 9);
}
