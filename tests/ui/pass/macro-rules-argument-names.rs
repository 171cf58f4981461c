// M4: in a fn written by a `macro_rules!` macro, an argument named by the macro's caller
// (`$x:ident`, or the whole fn as `$item:item`) is copied per attempt under its own hygiene.
// The copy used to read the original from the attribute's call site, which in a macro does
// not see the caller's names: "expected value, found enum `x`".
#![warn(clippy::used_underscore_binding)]
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

macro_rules! endpoint_with_arg {
    ($name:ident, $x:ident, $body:block) => {
        #[resilience::retry_service_operation(service = "plan_service", idempotent)]
        fn $name($x: String) -> Result<usize, ApiError> $body
    };
}
endpoint_with_arg!(len_plus_one, text, { Ok(text.len() + 1) });

macro_rules! guarded {
    ($item:item) => {
        #[resilience::retry_service_operation(service = "plan_service", idempotent)]
        $item
    };
}
guarded!(
    fn plus_four(mut name: String, _unused: Vec<u8>) -> Result<usize, ApiError> {
        name.push('!');
        Ok(name.len() + 3)
    }
);

fn main() {
    assert_eq!(len_plus_one("a".into()).unwrap(), 2);
    assert_eq!(plus_four("a".into(), Vec::new()).unwrap(), 5);
}
