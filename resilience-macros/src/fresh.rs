//! M4: a fresh value of every by-value argument for each attempt of a retried fn.
//!
//! A retried body runs once per attempt, so a body that consumes an argument would leave
//! nothing for the next attempt. Each attempt therefore starts by shadowing every binding a
//! by-value argument introduces with a clone of the original:
//!
//! ```text
//! let body = P::fresh::<_>(&body);
//! ```
//!
//! The attempt only borrows the original, so the attempt closure (or async block) stays
//! reusable. `P::fresh` is one shared fn bounded by `P::RetryArg` (`Clone` with a readable
//! `#[diagnostic::on_unimplemented]` message): a non-`Clone` argument fails that bound on the
//! `_`, which is spanned on the argument, so the error points at it. (A local trait per
//! argument could also spell the name in the message, but cost three items per argument to
//! compile: about 5× the shared fn.)
//!
//! Which bindings: those of every argument whose type is not a reference (a binding under
//! `&T` / `&mut T` is a reference or a `Copy` value, never a move). `ref` bindings and `_`
//! bind nothing to move. The originals are never mutated, only cloned from, so `mut` moves
//! from the signature to the per-attempt binding (the fn's type is unchanged: `mut` is part
//! of the pattern, not of the type).

use proc_macro2::{Ident, Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::{FnArg, Pat, PatType, Signature, Type};

/// One binding of a by-value argument.
pub(crate) struct Binding {
    ident: Ident,
    /// The user's `mut`, if written: the per-attempt copy is the one the body mutates. The
    /// token keeps its span, so rustc's "remove this `mut`" (and `cargo fix`) point at it.
    mutable: Option<syn::Token![mut]>,
    /// The argument's `#[cfg]` and lint attributes: a copy of a `#[cfg]`'d out argument must
    /// go with it, and an `#[allow(..)]` on it must reach the copy's `mut`.
    attrs: Vec<syn::Attribute>,
}

/// The bindings to refresh per attempt, and `sig` with their `mut` moved out of it.
/// `sig` is `None` when nothing had to change in it.
pub(crate) struct Fresh {
    pub(crate) bindings: Vec<Binding>,
    pub(crate) sig: Option<Signature>,
}

impl Fresh {
    /// Nothing to refresh: a fn that runs once moves its arguments as written.
    pub(crate) fn none() -> Self {
        Fresh {
            bindings: Vec::new(),
            sig: None,
        }
    }
}

pub(crate) fn of(sig: &Signature) -> Fresh {
    // Most signatures have no `mut` binding to move: read the by-value patterns from a
    // clone of each (small) pattern, and clone the whole signature only to change it (the
    // macro's own time is a part of the build cost).
    let mut bindings = Vec::new();
    for pt in by_value(sig.inputs.iter()) {
        let first = bindings.len();
        collect(&mut pt.pat.clone(), Some(&pt.ty), &mut bindings);
        let attrs: Vec<syn::Attribute> = pt.attrs.iter().filter(|a| copied(a)).cloned().collect();
        if !attrs.is_empty() {
            for b in &mut bindings[first..] {
                b.attrs.clone_from(&attrs);
            }
        }
    }
    let changed = bindings
        .iter()
        .any(|b| b.mutable.is_some() || b.attrs.iter().any(is_expect));
    let sig = changed.then(|| {
        let mut out = sig.clone();
        for arg in &mut out.inputs {
            if let FnArg::Typed(pt) = arg {
                if !is_reference(&pt.ty) {
                    collect(&mut pt.pat, Some(&pt.ty), &mut Vec::new());
                    pt.attrs
                        .iter_mut()
                        .filter(|a| is_expect(a))
                        .for_each(expect_to_allow);
                }
            }
        }
        out
    });
    Fresh { bindings, sig }
}

/// Whether an argument's attribute applies to its per-attempt copy: `cfg`, `cfg_attr` and
/// the lint levels.
///
/// An `expect` goes to the copy, and the argument keeps the same lints as an `allow`: the
/// lints an argument's expectation names (an unneeded `mut`, an unused binding) fire on the
/// copy, which holds the `mut` and is what the body uses, while the argument is only read to
/// clone it; kept on the argument, the expectation would be unmet.
fn copied(attr: &syn::Attribute) -> bool {
    [
        "cfg", "cfg_attr", "allow", "warn", "deny", "forbid", "expect",
    ]
    .iter()
    .any(|name| attr.path().is_ident(name))
}

fn is_expect(attr: &syn::Attribute) -> bool {
    attr.path().is_ident("expect")
}

fn expect_to_allow(attr: &mut syn::Attribute) {
    if let syn::Meta::List(list) = &mut attr.meta {
        let span = list.path.segments[0].ident.span();
        list.path = Ident::new("allow", span).into();
    }
}

/// The typed arguments not taken by reference.
fn by_value<'a>(inputs: impl Iterator<Item = &'a FnArg>) -> impl Iterator<Item = &'a PatType> {
    inputs.filter_map(|arg| match arg {
        FnArg::Typed(pt) if !is_reference(&pt.ty) => Some(pt),
        _ => None,
    })
}

/// The `let`s that start each attempt, through `p` (the `__private` path).
pub(crate) fn shadows(bindings: &[Binding], p: &impl quote::ToTokens) -> TokenStream {
    bindings
        .iter()
        .map(|b| {
            let ident = &b.ident;
            let span = ident.span();
            let mutability = &b.mutable;
            let attrs = &b.attrs;
            // The bound is checked on the explicit `_`: spanned on the argument, that is
            // where the error points.
            let infer = quote_spanned!(span=> _);
            // The read of the original resolves where the argument was written: in a fn
            // written by a `macro_rules!` macro, the argument's name may come from its caller
            // (`$item`, `$arg:ident`), whose hygiene the attribute's call site does not share.
            // So it is the user's code to lints: `used_underscore_binding` (on `_unused:
            // String`) is allowed where it could fire.
            let original = ident;
            let underscore = ident.to_string().trim_start_matches("r#").starts_with('_');
            let allow = underscore.then(|| quote!(#[allow(clippy::used_underscore_binding)]));
            // A type named as the argument, in a block of its own (so it shadows nothing the
            // body names): the error message prints it, and so names the argument (M4).
            let mut name = ident.clone();
            name.set_span(Span::call_site());
            quote! {
                #(#attrs)*
                #allow
                let #mutability #ident = {
                    enum #name {}
                    #p::fresh::<#infer, #name>(&#original)
                };
            }
        })
        .collect()
}

fn is_reference(ty: &Type) -> bool {
    match ty {
        Type::Reference(_) => true,
        Type::Paren(p) => is_reference(&p.elem),
        Type::Group(g) => is_reference(&g.elem),
        _ => false,
    }
}

/// The last segment of a path type: what a unit-struct pattern of it is named.
fn unit_type(ty: &Type) -> Option<&Ident> {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last().map(|s| &s.ident),
        _ => None,
    }
}

/// The by-value bindings of `pat`, with `mut` removed from them in place. `ty` is the
/// argument's type when `pat` is the whole argument pattern.
fn collect(pat: &mut Pat, ty: Option<&Type>, out: &mut Vec<Binding>) {
    match pat {
        Pat::Ident(p) => {
            // An upper-case name in a pattern is, by convention, a unit struct (`Unit: Unit`),
            // which binds nothing; as a whole argument it is one only if its type has its
            // name (`Name: String` binds `Name`). A const would be a refutable pattern.
            let unit = starts_upper(&p.ident)
                && ty.is_none_or(|t| unit_type(t).is_some_and(|n| *n == p.ident));
            let binds = p.by_ref.is_none() && !unit;
            if binds {
                out.push(Binding {
                    ident: p.ident.clone(),
                    mutable: p.mutability.take(),
                    attrs: Vec::new(),
                });
            }
            if let Some((_, sub)) = &mut p.subpat {
                collect(sub, None, out);
            }
        }
        Pat::Tuple(t) => t.elems.iter_mut().for_each(|p| collect(p, None, out)),
        Pat::TupleStruct(t) => t.elems.iter_mut().for_each(|p| collect(p, None, out)),
        Pat::Struct(s) => s
            .fields
            .iter_mut()
            .for_each(|f| collect(&mut f.pat, None, out)),
        Pat::Slice(s) => s.elems.iter_mut().for_each(|p| collect(p, None, out)),
        Pat::Paren(p) => collect(&mut p.pat, ty, out),
        Pat::Reference(r) => collect(&mut r.pat, None, out),
        Pat::Type(t) => collect(&mut t.pat, Some(&t.ty), out),
        // `_`, `..`, literals, ranges and paths bind nothing; a macro's bindings are unseen.
        _ => {}
    }
}

fn starts_upper(ident: &Ident) -> bool {
    let name = ident.to_string();
    let name = name.strip_prefix("r#").unwrap_or(&name);
    name.chars().next().is_some_and(char::is_uppercase)
}
