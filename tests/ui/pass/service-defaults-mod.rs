// M5: #[service_defaults] on an inline mod reaches free fns and methods of impl blocks inside
// it (not fn bodies); a nested #[service_defaults] overrides the outer one for its block.
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

#[resilience::service_defaults(service = "plan_service", total_timeout = 10)]
mod plans {
    use super::ApiError;
    use resilience::retry_service_operation;

    #[retry_service_operation(idempotent)]
    pub fn get_plan(id: u64) -> Result<u64, ApiError> {
        // Not an item of the mod: left alone (it would not compile without a service).
        fn helper(id: u64) -> u64 {
            id
        }
        Ok(helper(id))
    }

    pub struct Store<T>(pub T);

    impl<T: Copy + Into<u64>> Store<T> {
        #[retry_service_operation(idempotent, max_attempts = 2)]
        pub fn load(&self) -> Result<u64, ApiError> {
            Ok(self.0.into())
        }
    }

    #[resilience::service_defaults(service = "audit_service")]
    pub mod audit {
        use super::ApiError;

        #[resilience::retry_service_operation]
        pub fn record(id: u64) -> Result<u64, ApiError> {
            Ok(id)
        }
    }
}

fn main() {
    assert_eq!(plans::get_plan(1).unwrap(), 1);
    assert_eq!(plans::Store(2u8).load().unwrap(), 2);
    assert_eq!(plans::audit::record(3).unwrap(), 3);
}
