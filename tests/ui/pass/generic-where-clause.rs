// M1: generic fns and methods with bounds, where clauses and const generics.
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

use std::fmt::Debug;

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
fn describe<T, U: Clone>(t: &T, u: U) -> Result<String, ApiError>
where
    T: Debug + ?Sized,
    U: Debug,
{
    Ok(format!("{t:?} {:?}", u.clone()))
}

#[resilience::retry_service_operation(service = "plan_service", idempotent)]
fn sum<const N: usize>(xs: [u32; N]) -> Result<u32, ApiError> {
    Ok(xs.iter().sum())
}

pub struct Repo<T>(Vec<T>);

impl<T: Clone> Repo<T>
where
    T: PartialEq,
{
    #[resilience::retry_service_operation(service = "repo", idempotent)]
    pub fn find<F>(&self, pred: F) -> Result<Option<T>, ApiError>
    where
        // Each retried attempt starts from its own clone of `pred` (M4).
        F: Fn(&T) -> bool + Clone,
    {
        Ok(self.0.iter().find(|x| pred(x)).cloned())
    }
}

fn main() {
    assert_eq!(describe("a", 1).unwrap(), "\"a\" 1");
    assert_eq!(sum([1, 2, 3]).unwrap(), 6);
    assert_eq!(Repo(vec![1, 2, 3]).find(|x| *x > 1).unwrap(), Some(2));
}
