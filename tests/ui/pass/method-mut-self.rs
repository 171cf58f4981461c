// M1: `&mut self` methods; state changed by one attempt is seen by the next.
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

pub struct Cursor {
    pos: usize,
}

impl Cursor {
    #[resilience::retry_service_operation(service = "plan_service", idempotent)]
    pub fn advance(&mut self, by: usize) -> Result<usize, ApiError> {
        self.pos += by;
        Ok(self.pos)
    }

    #[resilience::retry_service_operation(service = "plan_service")]
    pub fn reset(&mut self) -> Result<(), ApiError> {
        self.pos = 0;
        Ok(())
    }
}

fn main() {
    let mut c = Cursor { pos: 0 };
    assert_eq!(c.advance(2).unwrap(), 2);
    c.reset().unwrap();
    assert_eq!(c.pos, 0);
}
