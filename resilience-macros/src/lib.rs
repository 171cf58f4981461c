//! The `#[retry_service_operation]` and `#[service_defaults]` attributes of the `resilience`
//! framework. Use them through the facade (`resilience::retry_service_operation`), whose
//! docs describe them; this crate's output names `::resilience::__private::…` only.
//!
//! Pipeline: `args` (what was written, with spans) → `validate` (the checked plan, every
//! error collected) → `expand` (code from the plan); `diag` emits the untouched fn with
//! the errors when anything is wrong (M3). `defaults` is `#[service_defaults]` (M5).

mod args;
mod borrow;
mod defaults;
mod diag;
mod expand;
mod fresh;
mod item;
mod ranges;
mod service_name;
mod suggest;
mod validate;
mod values;

use proc_macro::TokenStream;
use proc_macro2::Span;

/// Guards a fn with its service's retry policy and circuit breaker. Documented on the
/// facade's re-export, `resilience::retry_service_operation`.
#[proc_macro_attribute]
pub fn retry_service_operation(args: TokenStream, item: TokenStream) -> TokenStream {
    retry_service_operation2(args.into(), item.into()).into()
}

/// Declares `#[retry_service_operation]` arguments once for an `impl` block or inline `mod`.
/// Documented on the facade's re-export, `resilience::service_defaults`.
#[proc_macro_attribute]
pub fn service_defaults(args: TokenStream, item: TokenStream) -> TokenStream {
    defaults::service_defaults(args.into(), item.into()).into()
}

fn retry_service_operation2(
    args: proc_macro2::TokenStream,
    item: proc_macro2::TokenStream,
) -> proc_macro2::TokenStream {
    let ctxt = diag::Ctxt::new();
    let parsed = args::parse(args, &ctxt);
    let plan = match item::ItemFn::parse(item.clone()) {
        Ok(f) => validate::validate(parsed, &f, &ctxt).map(|plan| (plan, f)),
        Err(_) => {
            ctxt.error(
                Span::call_site(),
                "#[retry_service_operation] goes on a fn or method with a body; for an impl block or mod, use #[service_defaults]",
            );
            None
        }
    };
    match (ctxt.check(), plan) {
        (Ok(()), Some((plan, f))) => expand::expand(&plan, &f),
        (Err(e), _) => diag::with_original(item, &e),
        // validate returns no plan only after recording why; kept total all the same.
        (Ok(()), None) => item,
    }
}
