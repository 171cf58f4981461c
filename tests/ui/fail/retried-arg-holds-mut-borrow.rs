// M4: a by-value argument whose type holds a `&mut` (`Option<&mut T>`, a tuple with one) can
// never be cloned for each attempt: the error names the argument and points at the `&mut`,
// with the fix (take it by reference and reborrow, or drop `idempotent`).
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
fn bump(counter: Option<&mut u32>) -> Result<u32, ApiError> {
    match counter {
        Some(c) => {
            *c += 1;
            Ok(*c)
        }
        None => Ok(0),
    }
}

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
async fn fill(id: u64, parts: (String, &mut Vec<u8>)) -> Result<u64, ApiError> {
    parts.1.extend_from_slice(parts.0.as_bytes());
    Ok(id)
}

fn main() {
    let mut n = 0;
    let _ = bump(Some(&mut n));
    let mut buf = Vec::new();
    let _ = fill(1, (String::new(), &mut buf));
}
