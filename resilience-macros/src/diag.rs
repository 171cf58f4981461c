//! Diagnostics: errors collected across a whole attribute, and the fallback that keeps the
//! user's item compiling when the attribute is wrong (M3).

use proc_macro2::{Span, TokenStream};
use std::cell::RefCell;
use std::fmt::Display;

/// Collects every error of one expansion so the user sees all of them in one build.
///
/// Must be finished with [`Ctxt::check`] or [`Ctxt::discard`]; dropping it unchecked is a bug
/// in this crate (errors would be lost), so it panics in that case, as serde's does.
pub(crate) struct Ctxt {
    errors: RefCell<Option<Vec<syn::Error>>>,
}

impl Ctxt {
    pub(crate) fn new() -> Self {
        Self {
            errors: RefCell::new(Some(Vec::new())),
        }
    }

    /// Records an error at `span`.
    pub(crate) fn error(&self, span: Span, msg: impl Display) {
        self.push(syn::Error::new(span, msg));
    }

    /// Records an already built error (e.g. a syntax error from syn).
    pub(crate) fn push(&self, err: syn::Error) {
        if let Some(errors) = self.errors.borrow_mut().as_mut() {
            errors.push(err);
        }
    }

    /// Whether any error was recorded so far.
    pub(crate) fn has_errors(&self) -> bool {
        self.errors.borrow().as_ref().is_some_and(|e| !e.is_empty())
    }

    /// All recorded errors combined into one, or `Ok` if there were none.
    pub(crate) fn check(self) -> syn::Result<()> {
        let errors = self.errors.borrow_mut().take().unwrap_or_default();
        let mut iter = errors.into_iter();
        match iter.next() {
            None => Ok(()),
            Some(mut first) => {
                for e in iter {
                    first.combine(e);
                }
                Err(first)
            }
        }
    }

    /// Drops the errors on purpose: used where another expansion already reports them
    /// (defaults inherited from `#[service_defaults]`). Returns whether there were any.
    pub(crate) fn discard(self) -> bool {
        let had = self.has_errors();
        self.errors.borrow_mut().take();
        had
    }
}

impl Drop for Ctxt {
    fn drop(&mut self) {
        if !std::thread::panicking() && self.errors.borrow().is_some() {
            panic!("resilience-macros bug: Ctxt dropped without check()");
        }
    }
}

/// The user's item exactly as written, followed by the errors as `compile_error!`s: the fn
/// still exists, so callers and the IDE keep working and only our errors are shown (M3).
pub(crate) fn with_original(original: TokenStream, err: &syn::Error) -> TokenStream {
    let mut out = original;
    out.extend(err.to_compile_error());
    out
}
