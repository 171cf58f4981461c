// M3: a service name with whitespace around it would name another service than the one config
// and the registry know; it is refused with the trimmed name to write.
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

#[resilience::retry_service_operation(service = "plan_service ", idempotent)]
//~^ ERROR write `service = "plan_service"`
fn get_plan(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

// Tabs and newlines too; the name offered is a valid, escaped string literal.
#[resilience::retry_service_operation(service = "\tplan\"x\n", idempotent)]
//~^ ERROR write `service = "plan\"x"`
fn get_quoted(id: u64) -> Result<u64, ApiError> {
    Ok(id)
}

#[resilience::service_defaults(service = " audit_service")]
//~^ ERROR write `service = "audit_service"`
mod audit {
    #[resilience::retry_service_operation]
    pub fn record(id: u64) -> Result<u64, super::ApiError> {
        Ok(id)
    }
}

fn main() {
    let _ = get_plan(1);
    let _ = get_quoted(1);
    let _ = audit::record(1);
}
