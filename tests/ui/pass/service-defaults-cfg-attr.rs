// M5: `#[service_defaults]` reaches a `#[retry_service_operation]` written inside
// `#[cfg_attr(..)]` too (it used to skip it: "missing `service`").
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

#[resilience::service_defaults(service = "plan_service", max_attempts = 2)]
impl Client {
    #[cfg_attr(all(), resilience::retry_service_operation(idempotent))]
    pub fn get_plan(&self, id: u64) -> Result<u64, ApiError> {
        Ok(id)
    }

    #[cfg_attr(any(), derive(Debug))]
    #[cfg_attr(all(), allow(unused), resilience::retry_service_operation)]
    pub fn put_plan(&self, id: u64) -> Result<u64, ApiError> {
        Ok(id)
    }
}

fn main() {
    assert_eq!(Client.get_plan(1).unwrap(), 1);
    assert_eq!(Client.put_plan(2).unwrap(), 2);
}
