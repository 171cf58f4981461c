// M1: explicitly typed reference receivers, `self: &Self` and `self: &mut Self`, are the
// same receivers as `&self` and `&mut self`: an elided lifetime in the result comes from
// `self`, so a `&Self` method returning a borrow of itself is fine even with a `&mut`
// argument (the attribute used to mistake it for a borrow of that argument).
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

pub struct Doc {
    title: String,
}

impl Doc {
    #[resilience::retry_service_operation(service = "doc", idempotent)]
    pub fn title(self: &Self, log: &mut Vec<u8>) -> Result<&str, ApiError> {
        log.push(1);
        Ok(&self.title)
    }

    #[resilience::retry_service_operation(service = "doc", idempotent)]
    pub async fn title_async<'a>(self: &'a Self, log: &mut Vec<u8>) -> Result<&'a str, ApiError> {
        log.push(1);
        Ok(&self.title)
    }

    #[resilience::retry_service_operation(service = "doc", idempotent)]
    pub fn rename(self: &mut Self, title: String) -> Result<usize, ApiError> {
        self.title = title;
        Ok(self.title.len())
    }
}

fn main() {
    let mut doc = Doc { title: "t".into() };
    let mut log = Vec::new();
    assert_eq!(doc.title(&mut log).unwrap(), "t");
    assert_eq!(doc.rename("title".into()).unwrap(), 5);
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    assert_eq!(rt.block_on(doc.title_async(&mut log)).unwrap(), "title");
    assert_eq!(log.len(), 2);
}
