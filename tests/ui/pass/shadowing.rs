// M1 (hygiene): the expansion names everything by absolute path through
// `::resilience::__private` and keeps its locals out of the body's reach, so user items named
// like prelude types, a local `mod resilience`, and arguments named like the expansion's
// locals change nothing.
#![allow(dead_code, non_camel_case_types, non_upper_case_globals)]

use ::resilience::retry_service_operation as guarded;

mod resilience {}
mod core {}
struct Result;
struct Option;
struct Ok;
struct Err;
struct Some;
struct Box;
struct ControlFlow;
struct Break;
struct Future;
struct CallSite;
trait RetryableError {}

#[derive(Debug)]
pub struct ApiError;
impl From<::resilience::ResilienceError> for ApiError {
    fn from(_: ::resilience::ResilienceError) -> Self {
        ApiError
    }
}
impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("api error")
    }
}



#[guarded(service = "plan_service", idempotent, max_attempts = 2, backoff = "none")]
fn get_plan(resilience_driver: u64, resilience_result: u64, resilience_attempt: u64) -> std::result::Result<u64, ApiError> {
    static __RESILIENCE_SITE: u64 = 1;
    std::result::Result::Ok(resilience_driver + resilience_result + resilience_attempt + __RESILIENCE_SITE)
}

#[guarded(service = "plan_service", idempotent)]
async fn get_async(resilience_never: u64) -> std::result::Result<u64, ApiError> {
    std::result::Result::Ok(resilience_never)
}

fn main() {
    assert_eq!(get_plan(1, 2, 3).unwrap(), 7);
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    assert_eq!(rt.block_on(get_async(4)).unwrap(), 4);
}
