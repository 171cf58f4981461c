//! Type-level idempotency: retrying is only reachable with [`Idempotent`].

/// Marks an operation safe to run more than once (a read, a PUT of the same value, …).
#[derive(Debug, Clone, Copy, Default)]
pub struct Idempotent;

/// Marks an operation that must run at most once (a write, an apply, a payment).
#[derive(Debug, Clone, Copy, Default)]
pub struct NotIdempotent;

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Idempotent {}
    impl Sealed for super::NotIdempotent {}
}

/// [`Idempotent`] or [`NotIdempotent`]; sealed.
pub trait Idempotency: sealed::Sealed + Copy {
    /// Whether the operation may be retried.
    const IDEMPOTENT: bool;
}

impl Idempotency for Idempotent {
    const IDEMPOTENT: bool = true;
}

impl Idempotency for NotIdempotent {
    const IDEMPOTENT: bool = false;
}

/// Implemented only by [`Idempotent`]: entry points that always retry require it, so handing
/// them a write is a compile error that says why.
#[diagnostic::on_unimplemented(
    message = "`{Self}` operations cannot be retried: retrying a write could apply it twice",
    label = "this operation is not marked idempotent",
    note = "mark the operation `Idempotent` only if running it twice has the same effect as once"
)]
pub trait RetrySafe: Idempotency {}

impl RetrySafe for Idempotent {}
