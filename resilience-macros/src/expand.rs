//! Code generation from a validated [`Plan`]. No checks here: everything was decided by
//! [`validate`](crate::validate).
//!
//! The signature is re-emitted untouched (except that a retried fn's `mut` argument bindings
//! move into the attempt, see [`fresh`](crate::fresh)); only the body changes. Each attempt
//! is the original body in a closure (sync) or an `async` block (async), so `?` and `return`
//! end the current attempt only, and borrows of `self` and the arguments end with each
//! attempt. For a sync idempotent fn, the loop is a generic fn of `__private`, so the
//! expansion is one call:
//!
//! ```text
//! fn get_plan(&self, id: u64) -> Result<Plan, MyErr> {
//!     static __RESILIENCE_SITE: P::CallSite = P::CallSite::new("plan_service", "get_plan", …);
//!     P::sync_retry(&__RESILIENCE_SITE, || -> Result<Plan, MyErr> {
//!         let id = P::fresh::<_>(&id); // one per by-value argument (M4)
//!         (<body>) // parenthesized: a nested bare block would be linted as needless braces
//!     })
//! }
//! ```
//!
//! An async attempt borrows the fn's locals from the future it runs in, so the async loop
//! stays in the expansion: a generic fn would need an `AsyncFnMut` attempt, which compiled
//! only ~13% faster and ran slower (one more future layer). Each attempt is an `async` block
//! handed to `P::step`, whose future polls it in place (a hand-written future, not an
//! `async fn`: no nested state machine to compile or to move at run time):
//!
//! ```text
//! async fn list_plans(&self) -> Result<Vec<Plan>, MyErr> {
//!     static __RESILIENCE_SITE: P::CallSite = …;
//!     let mut driver = P::async_loop(&__RESILIENCE_SITE);
//!     loop {
//!         let step = P::step(&mut driver, async {
//!             if false { return P::unreachable_attempt::<Result<Vec<Plan>, MyErr>>(); }
//!             (<body>)
//!         });
//!         if let P::ControlFlow::Break(result) = step.await { break result; }
//!     }
//! }
//! ```
//!
//! where `P` is `::resilience::__private` (or `<crate>::__private`). A not-idempotent fn
//! makes its single attempt through `P::sync_once` / `P::async_once` (`P::sync_once_with` /
//! `P::async_once_with` when it names a classifier; a fn returning `impl Future` makes its
//! future in `P::in_attempt` and runs it with `P::async_once_in`, the same attempt), which
//! take the attempt by value: no loop, so its body may move its arguments as written (M4).
//! In a retried fn,
//! each attempt first shadows every by-value argument with a clone of it
//! ([`fresh`](crate::fresh)), so the attempt only borrows the originals and its body may
//! consume the clones; a non-`Clone` argument is an error on it (M4).

use crate::fresh;
use crate::item::ItemFn;
use crate::validate::{Backoff, Declared, Plan, Shape};
use proc_macro2::{Group, Ident, Literal, Span, TokenStream, TokenTree};
use quote::{quote, quote_spanned, ToTokens};

/// The fn with its body replaced by the guarded one.
pub(crate) fn expand(plan: &Plan, item: &ItemFn) -> TokenStream {
    let Some(body) = &item.body else {
        return item.with_body(TokenStream::new());
    };
    // The body's own inner attributes (`#![allow(..)]`) stay at the top of the fn's body: in
    // a closure or `async` block they would be attributes on an expression, which rustc
    // refuses. Lint levels set there still reach the attempt nested inside.
    let (inner_attrs, body) = split_inner_attrs(body);
    let p = private(plan);
    let site = Ident::new("__RESILIENCE_SITE", Span::mixed_site());
    let site_static = site_static(plan, &site, &p);
    let driver = Ident::new("resilience_driver", Span::mixed_site());
    let result = Ident::new("resilience_result", Span::mixed_site());
    let attempt = Ident::new("resilience_attempt", Span::mixed_site());
    // Sync attempts are closures whose declared return type lets `?` and `return` infer;
    // async blocks cannot declare one, so they start with an unreachable typed `return`.
    let ty = &plan.attempt_ty;
    // A call's unmet bounds (`E: RetryableError`, the readable check) are reported on its
    // callee path: put the whole path on the declared error type. Only the one driver the
    // shape needs is built (the macro's own time is a part of the build cost, issue 4).
    let p_at_error = respan(&p, plan.error_span);
    let driver_fn = |name: &str| {
        let name = Ident::new(name, plan.error_span);
        quote_spanned!(plan.error_span=> #p_at_error::#name)
    };
    // R12: the `classify` value, checked against the error type by `P::classifier`; the `&`
    // carries the value's span, so an unfit classifier is reported on the value.
    let classifier = plan.classify.as_ref().map(|(value, span)| {
        let amp = quote_spanned!(*span=> &);
        quote!(#p::classifier::<#ty>(#amp #value))
    });
    let step_fn = || {
        driver_fn(if classifier.is_some() {
            "step_with"
        } else {
            "step"
        })
    };
    let await_ = quote_spanned!(plan.error_span=> .await);
    // The driver calls awaited are spanned on the error type as a whole (callee path and
    // arguments): an `.await` re-checks the future's bounds on `E` at its receiver, and rustc
    // drops an error implied by one already reported at the same span, so a missing
    // `From<ResilienceError>` is reported once, readably. (Binding the future to a local
    // for that, as before, cost ~0.3 M rustc instructions per fn.) The readable check needs
    // no `E` written out, so an alias (`app::Result<T>`) gets it too.

    // M4: a retried attempt starts from fresh clones of the by-value arguments.
    let fresh = if plan.idempotent {
        fresh::of(&item.sig)
    } else {
        fresh::Fresh::none()
    };
    let shadows = fresh::shadows(&fresh.bindings, &p);
    // After the shadows (or the async return edge), the body goes in parentheses spanned in
    // the expansion: a bare nested block there is "unnecessary braces" to rustc, reported on
    // the user's own braces when the body is one line; parentheses from an expansion are not
    // linted.
    let attempt_body = if fresh.bindings.is_empty() {
        quote!(#body)
    } else {
        quote!({ #shadows (#body) })
    };

    // `Pin<Box<dyn Future<…>>>` (`#[async_trait]`): the same future, boxed and pinned.
    let boxed = |fut: TokenStream| {
        if plan.boxed {
            quote!(#p::Box::pin(#fut))
        } else {
            fut
        }
    };
    let guarded = match (plan.shape, plan.idempotent) {
        // The loop is `sync_retry`'s: one generic call per fn. Its `E: RetryableError` bound
        // is the readable check, reported on its callee path (spanned on the error type).
        (Shape::Sync, true) => match &classifier {
            None => {
                let sync_retry = driver_fn("sync_retry");
                quote_spanned! {plan.error_span=>
                    #sync_retry(&#site, || -> #ty #attempt_body)
                }
            }
            Some(classifier) => {
                let sync_retry = driver_fn("sync_retry_with");
                quote_spanned! {plan.error_span=>
                    #sync_retry(&#site, #classifier, || -> #ty #attempt_body)
                }
            }
        },
        (Shape::Sync, false) => {
            let (sync_once, classifier) = once_fn(&driver_fn, "sync_once", &classifier);
            quote_spanned! {plan.error_span=>
                #sync_once(&#site, #classifier || -> #ty #body)
            }
        }
        (Shape::AsyncFn, true) => {
            let (step, edge) = (step_fn(), return_edge(plan, &p));
            let attempt = quote!(async { #edge #shadows (#body) });
            let step_call = quote_spanned!(plan.error_span=> #step(&mut #driver, #attempt));
            let new_loop = async_loop(classifier.as_ref(), &p, &site);
            quote! {
            let mut #driver = #new_loop;
            loop {
                if let #p::ControlFlow::Break(#result) = #step_call #await_ {
                    break #result;
                }
            }
            }
        }
        (Shape::AsyncFn, false) => {
            let (async_once, classifier) = once_fn(&driver_fn, "async_once", &classifier);
            let edge = return_edge(plan, &p);
            let attempt = quote!(async { #edge (#body) });
            quote_spanned! {plan.error_span=>
                #async_once(&#site, #classifier #attempt) #await_
            }
        }
        // Each attempt runs the original body again for a fresh future, so the returned
        // future owns the arguments. The body runs on the attempt's first poll (`deferred`),
        // after the breaker admitted it: an open circuit runs none of it.
        (Shape::ImplFuture, true) => {
            let step = step_fn();
            let step_call = quote_spanned!(plan.error_span=> #step(&mut #driver, #attempt));
            let new_loop = async_loop(classifier.as_ref(), &p, &site);
            boxed(quote! {
            async move {
                let mut #driver = #new_loop;
                loop {
                    let #attempt = #p::typed_attempt::<#ty, _>(#p::deferred(|| #attempt_body));
                    if let #p::ControlFlow::Break(#result) = #step_call #await_ {
                        break #result;
                    }
                }
            }
            })
        }
        // One attempt: the body runs now, as it did unguarded, and only its future is
        // captured, so the returned future borrows nothing more than before (deferring it
        // would capture every argument, breaking a `+ 'static` bound the body met). So the
        // synchronous part runs even if the breaker then refuses the future.
        // The returned block is spanned on the error type too: its future's bounds are
        // checked there (see `await_`).
        // The synchronous part and the future are one attempt (`in_attempt`, `async_once_in`):
        // a nested 429 the future returns is told to the sink once (R12).
        (Shape::ImplFuture, false) => {
            let (async_once, classifier) = once_fn(&driver_fn, "async_once_in", &classifier);
            let fut = quote_spanned! {plan.error_span=>
                async move {
                    #async_once(&#site, #classifier #attempt) #await_
                }
            };
            let fut = boxed(fut);
            quote! {
                let #attempt = #p::in_attempt(|| #body);
                #fut
            }
        }
    };
    // A by-value argument the body consumes is, after the expansion, only borrowed (each
    // attempt consumes a clone): clippy's `needless_pass_by_value` would then ask the user to
    // change a signature that is right as written.
    let allow =
        (!fresh.bindings.is_empty()).then(|| quote!(#![allow(clippy::needless_pass_by_value)]));
    let body = quote! { #inner_attrs #allow #site_static #guarded };
    match &fresh.sig {
        Some(sig) => item.with_sig_and_body(sig, body),
        None => item.with_body(body),
    }
}

/// The body's leading inner attributes (`#![…]`), and the body without them (same span).
fn split_inner_attrs(body: &Group) -> (TokenStream, Group) {
    let tokens: Vec<TokenTree> = body.stream().into_iter().collect();
    let mut end = 0;
    while let [TokenTree::Punct(pound), TokenTree::Punct(bang), TokenTree::Group(g), ..] =
        &tokens[end..]
    {
        let attr = pound.as_char() == '#'
            && bang.as_char() == '!'
            && g.delimiter() == proc_macro2::Delimiter::Bracket;
        if !attr {
            break;
        }
        end += 3;
    }
    if end == 0 {
        return (TokenStream::new(), body.clone());
    }
    let attrs = tokens[..end].iter().cloned().collect();
    let mut rest = Group::new(body.delimiter(), tokens[end..].iter().cloned().collect());
    rest.set_span(body.span());
    (attrs, rest)
}

/// A token sequence interpolated many times (the `__private` path). Kept as trees, not a
/// `TokenStream`: `quote!` appends trees without a round trip to the compiler, while each
/// interpolated stream costs one (the macro's own time is a part of the build cost).
#[derive(Clone)]
pub(crate) struct Trees(Vec<TokenTree>);

impl ToTokens for Trees {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        tokens.extend(self.0.iter().cloned());
    }
}

/// `trees` with every span set to `span` (a path: no groups in it).
fn respan(trees: &Trees, span: Span) -> Trees {
    Trees(
        trees
            .0
            .iter()
            .map(|tt| {
                let mut tt = tt.clone();
                tt.set_span(span);
                tt
            })
            .collect(),
    )
}

fn private(plan: &Plan) -> Trees {
    let krate = &plan.krate;
    Trees(quote!(#krate::__private).into_iter().collect())
}

/// The per-fn `static` call site: resolved once, so the hot path does no registry lookup.
fn site_static(plan: &Plan, site: &Ident, p: &Trees) -> TokenStream {
    let service = &plan.service;
    let operation = &plan.operation;
    let (declared, all) = declared(&plan.declared, p);
    let allow = all.then(|| quote!(#[allow(clippy::needless_update)]));
    quote! {
        #allow
        static #site: #p::CallSite = #p::CallSite::new(#service, #operation, #declared);
    }
}

/// The number of declarable `CodeDeclared` fields: with all of them declared, clippy's
/// `needless_update` flags the `..EMPTY` (kept so a field added later still compiles). The
/// `allow` is emitted only then: each lint name in an attribute costs rustc a lookup per fn.
const FIELDS: usize = 6;

/// The `CodeDeclared` literal, and whether it declares every field.
fn declared(d: &Declared, p: &Trees) -> (TokenStream, bool) {
    let some = |v: TokenStream| quote!(#p::Option::Some(#v));
    let mut fields = Vec::new();
    if let Some(n) = d.max_attempts {
        let lit = Literal::u32_suffixed(n);
        let v = some(quote!(#lit));
        fields.push(quote!(max_attempts: #v));
    }
    if let Some(b) = d.backoff {
        let variant = Ident::new(
            match b {
                Backoff::Exponential => "Exponential",
                Backoff::Linear => "Linear",
                Backoff::Fixed => "Fixed",
                Backoff::Jitter => "Jitter",
                Backoff::None => "None",
            },
            Span::call_site(),
        );
        let v = some(quote!(#p::BackoffStrategy::#variant));
        fields.push(quote!(backoff: #v));
    }
    for (name, secs) in [
        ("base_delay", d.base_delay),
        ("max_delay", d.max_delay),
        ("total_timeout", d.total_timeout),
    ] {
        if let Some(s) = secs {
            let field = Ident::new(name, Span::call_site());
            let lit = Literal::f64_suffixed(s);
            let v = some(quote!(#lit));
            fields.push(quote!(#field: #v));
        }
    }
    if let Some(j) = d.jitter {
        let v = some(quote!(#j));
        fields.push(quote!(jitter: #v));
    }
    let tokens = if fields.is_empty() {
        quote!(#p::CodeDeclared::EMPTY)
    } else {
        quote!(#p::CodeDeclared { #(#fields,)* ..#p::CodeDeclared::EMPTY })
    };
    (tokens, fields.len() == FIELDS)
}

/// The single-attempt driver of a write (`name`), or its `_with` form and the classifier
/// argument (with its comma) when the write declares `classify = …`.
fn once_fn(
    driver_fn: &impl Fn(&str) -> TokenStream,
    name: &str,
    classifier: &Option<TokenStream>,
) -> (TokenStream, TokenStream) {
    match classifier {
        None => (driver_fn(name), TokenStream::new()),
        Some(c) => (driver_fn(&format!("{name}_with")), quote!(#c,)),
    }
}

/// The async driver of a retried fn: `async_loop(&SITE)`, or with its checked classifier.
fn async_loop(classifier: Option<&TokenStream>, p: &Trees, site: &Ident) -> TokenStream {
    match classifier {
        None => quote!(#p::async_loop(&#site)),
        Some(classifier) => quote!(#p::async_loop_with(&#site, #classifier)),
    }
}

/// An unreachable `return` of the declared type, first in the attempt, so `?` and `return`
/// in the body know the attempt's error type before anything else is inferred. A call (not
/// `loop {}`) makes the value: nothing diverges, so no lint needs silencing.
fn return_edge(plan: &Plan, p: &Trees) -> TokenStream {
    let ty = &plan.attempt_ty;
    quote_spanned! {plan.error_span=>
        if false {
            return #p::unreachable_attempt::<#ty>();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> Trees {
        Trees(quote!(::resilience::__private).into_iter().collect())
    }

    /// `FIELDS` must count `Declared`'s fields (this literal names each one, so a new field
    /// breaks it here): with one too few, the `needless_update` allow would be missing when
    /// all are declared, and clippy would flag the user's fn.
    #[test]
    fn c13_every_declared_field_counts_towards_all_of_them() {
        let all = Declared {
            max_attempts: Some(4),
            backoff: Some(Backoff::Fixed),
            base_delay: Some(0.5),
            max_delay: Some(2.0),
            jitter: Some(false),
            total_timeout: Some(30.0),
        };
        assert!(declared(&all, &p()).1);
        let fewer = Declared {
            jitter: None,
            ..all
        };
        assert!(!declared(&fewer, &p()).1);
        assert!(!declared(&Declared::default(), &p()).1);
    }
}
