// M3 / M4: a retried method cannot take `self` through a smart pointer by value either
// (`Box<Self>`, `Rc<Self>`, `Arc<Self>`, `Pin<Box<Self>>`): `self` cannot be rebound, so an
// attempt cannot get a fresh one. The same receivers are fine on a fn that runs once.
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;

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

pub struct Client;

impl Client {
    #[resilience::retry_service_operation(service = "plan_service", idempotent)]
    fn boxed(self: Box<Self>) -> Result<(), ApiError> {
        Ok(())
    }

    #[resilience::retry_service_operation(service = "plan_service", idempotent)]
    fn counted(self: Rc<Self>) -> Result<(), ApiError> {
        Ok(())
    }

    #[resilience::retry_service_operation(service = "plan_service", idempotent)]
    fn shared(self: Arc<Self>) -> Result<(), ApiError> {
        Ok(())
    }

    #[resilience::retry_service_operation(service = "plan_service", idempotent)]
    fn pinned(self: Pin<Box<Self>>) -> Result<(), ApiError> {
        Ok(())
    }

    // Not retried: runs once, so consuming the box is fine.
    #[resilience::retry_service_operation(service = "plan_service")]
    fn close(self: Box<Self>) -> Result<(), ApiError> {
        Ok(())
    }
}

fn main() {
    let _ = Box::new(Client).boxed();
    let _ = Rc::new(Client).counted();
    let _ = Arc::new(Client).shared();
    let _ = Box::pin(Client).pinned();
    let _ = Box::new(Client).close();
}
