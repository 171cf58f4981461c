//! Redaction of secrets from error text (S1–S5).
//!
//! PLACEHOLDER: the real patterns land here; the signature is the contract.

use std::borrow::Cow;

/// Returns `message` with secrets replaced by `***` and truncated to 200 characters.
pub fn sanitize(message: &str) -> Cow<'_, str> {
    Cow::Borrowed(message)
}
