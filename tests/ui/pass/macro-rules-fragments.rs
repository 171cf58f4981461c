// M1, R3: fns written by a `macro_rules!` macro. Its fragments reach the attribute wrapped in
// invisible groups: a `$body:block` body, a `$ret:ty` return type (`impl Future` included)
// and a `$arg:ty` argument type are recognised through them.
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

macro_rules! endpoint_with_body {
    ($name:ident, $body:block) => {
        #[resilience::retry_service_operation(service = "plan_service", idempotent)]
        fn $name() -> Result<usize, ApiError> $body
    };
}
endpoint_with_body!(one, { Ok(1) });

macro_rules! endpoint_returning {
    ($name:ident, $ret:ty) => {
        #[resilience::retry_service_operation(service = "plan_service", idempotent)]
        fn $name(x: u32) -> $ret {
            async move { Ok(x + 2) }
        }
    };
}
endpoint_returning!(plus_two, impl Future<Output = Result<u32, ApiError>>);

macro_rules! endpoint_taking {
    ($name:ident, $arg:ty) => {
        #[resilience::retry_service_operation(service = "plan_service", idempotent)]
        fn $name(slot: $arg) -> Result<u32, ApiError> {
            Ok(slot.as_deref_mut().map_or(0, |v| *v + 3))
        }
    };
}
endpoint_taking!(plus_three, &mut Option<&mut u32>);

fn main() {
    assert_eq!(one().unwrap(), 1);
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    assert_eq!(rt.block_on(plus_two(1)).unwrap(), 3);
    let mut v = 1;
    assert_eq!(plus_three(&mut Some(&mut v)).unwrap(), 4);
}
