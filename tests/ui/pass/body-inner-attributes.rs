// M1: a body may start with inner attributes (`#![allow(..)]`), in every shape, and they still
// reach the body: unused variables are denied in this crate, and each body has one it allows.
#![deny(unused_variables)]

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
fn get_plan(id: u64) -> Result<u64, ApiError> {
    #![allow(unused_variables)]
    #![allow(unused_mut)]
    let unused = 1;
    Ok(id)
}

#[resilience::retry_service_operation(service = "plan_service")]
fn put_plan(id: u64) -> Result<u64, ApiError> {
    #![allow(unused_variables)]
    let unused = 1;
    Ok(id)
}

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
async fn list_plans(id: u64) -> Result<u64, ApiError> {
    #![allow(unused_variables)]
    let unused = 1;
    Ok(id)
}

#[resilience::retry_service_operation(service = "plan_service")]
async fn push_plan(id: u64) -> Result<u64, ApiError> {
    #![allow(unused_variables)]
    let unused = 1;
    Ok(id)
}

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
fn stream_plans(id: u64) -> impl std::future::Future<Output = Result<u64, ApiError>> {
    #![allow(unused_variables)]
    let unused = 1;
    async move { Ok(id) }
}

#[resilience::retry_service_operation(service = "plan_service")]
fn send_plans(id: u64) -> impl std::future::Future<Output = Result<u64, ApiError>> {
    #![allow(unused_variables)]
    let unused = 1;
    async move { Ok(id) }
}

fn main() {
    let _ = get_plan(1);
    let _ = put_plan(1);
    let _ = list_plans(1);
    let _ = push_plan(1);
    let _ = stream_plans(1);
    let _ = send_plans(1);
}
