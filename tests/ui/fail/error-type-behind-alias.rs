// §3 / M3: an error type that is not written out (an alias `app::Result<T>` with one
// argument) gets the same readable message as a spelt-out one, once per fn, on the alias's
// `Result`: sync or async, retried or not, `async fn` or `impl Future`.

#[derive(Debug)]
pub struct BareError;

impl std::fmt::Display for BareError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("bare")
    }
}

mod app {
    pub type Result<T> = std::result::Result<T, super::BareError>;
}

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
fn get_plan(id: u64) -> app::Result<u64> {
    //~^ ERROR `BareError` cannot be the error type of a guarded fn
    Ok(id)
}

#[resilience::retry_service_operation(service = "plan_service")]
fn put_plan(id: u64) -> app::Result<u64> {
    //~^ ERROR `BareError` cannot be the error type of a guarded fn
    Ok(id)
}

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
async fn list_plans() -> app::Result<Vec<u64>> {
    //~^ ERROR `BareError` cannot be the error type of a guarded fn
    Ok(Vec::new())
}

#[resilience::retry_service_operation(service = "plan_service")]
async fn drop_plan(id: u64) -> app::Result<u64> {
    //~^ ERROR `BareError` cannot be the error type of a guarded fn
    Ok(id)
}

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
fn stream_plans() -> impl std::future::Future<Output = app::Result<u64>> {
    //~^ ERROR `BareError` cannot be the error type of a guarded fn
    async { Ok(1) }
}

#[resilience::retry_service_operation(service = "plan_service")]
fn push_plan() -> impl std::future::Future<Output = app::Result<u64>> {
    //~^ ERROR `BareError` cannot be the error type of a guarded fn
    async { Ok(1) }
}

fn main() {
    let _ = get_plan(1);
    let _ = put_plan(1);
    let _ = list_plans();
    let _ = drop_plan(1);
    let _ = stream_plans();
    let _ = push_plan();
}
