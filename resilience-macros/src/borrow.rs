//! `&mut` inputs of a retried fn.
//!
//! M1: a retried fn that returns a borrow of a `&mut` input (`&mut self` returning
//! `Result<&str, E>`) cannot compile: each attempt re-borrows the input, and rustc's borrow
//! checker does not let one attempt's borrow leave the retry loop (the loop's other path
//! borrows it again). Without this check the user sees E0524 or "captured variable cannot
//! escape `FnMut` closure body", pointing at the attribute. A run-once fn is not affected.

use proc_macro2::Span;
use syn::{FnArg, GenericArgument, Lifetime, PathArguments, Signature, Type, TypeParamBound};

/// The lifetimes a type mentions: named ones, and where an elided one (`&T`, `'_`) is.
#[derive(Default)]
struct Mentions {
    named: Vec<Lifetime>,
    elided: Option<Span>,
}

impl Mentions {
    fn lifetime(&mut self, lt: &Lifetime) {
        if lt.ident == "_" {
            self.elided.get_or_insert(lt.span());
        } else if lt.ident != "static" {
            self.named.push(lt.clone());
        }
    }

    fn ty(&mut self, ty: &Type) {
        match ty {
            Type::Reference(r) => {
                match &r.lifetime {
                    Some(lt) => self.lifetime(lt),
                    None => {
                        self.elided.get_or_insert(r.and_token.span);
                    }
                }
                self.ty(&r.elem);
            }
            Type::Path(p) => {
                if let Some(q) = &p.qself {
                    self.ty(&q.ty);
                }
                for seg in &p.path.segments {
                    self.arguments(&seg.arguments);
                }
            }
            Type::Tuple(t) => t.elems.iter().for_each(|e| self.ty(e)),
            Type::Array(a) => self.ty(&a.elem),
            Type::Slice(s) => self.ty(&s.elem),
            Type::Paren(p) => self.ty(&p.elem),
            Type::Group(g) => self.ty(&g.elem),
            Type::Ptr(p) => self.ty(&p.elem),
            Type::TraitObject(t) => self.bounds(t.bounds.iter()),
            Type::ImplTrait(t) => self.bounds(t.bounds.iter()),
            _ => {}
        }
    }

    fn arguments(&mut self, args: &PathArguments) {
        if let PathArguments::AngleBracketed(a) = args {
            for arg in &a.args {
                match arg {
                    GenericArgument::Lifetime(lt) => self.lifetime(lt),
                    GenericArgument::Type(t) => self.ty(t),
                    GenericArgument::AssocType(at) => self.ty(&at.ty),
                    _ => {}
                }
            }
        }
    }

    fn bounds<'a>(&mut self, bounds: impl Iterator<Item = &'a TypeParamBound>) {
        for b in bounds {
            match b {
                TypeParamBound::Lifetime(lt) => self.lifetime(lt),
                TypeParamBound::Trait(t) => {
                    for seg in &t.path.segments {
                        self.arguments(&seg.arguments);
                    }
                }
                _ => {}
            }
        }
    }
}

/// A `&mut` input: its lifetime (`None` if elided) and whether it is the receiver.
struct MutInput {
    lifetime: Option<Lifetime>,
    receiver: bool,
}

/// Where `result` (what an attempt returns) borrows from a `&mut` input of `sig`, if it
/// does: the span to report on.
pub(crate) fn borrow_of_mut_input(sig: &Signature, result: &Type) -> Option<Span> {
    let mut muts = Vec::new();
    let mut references = 0;
    let mut has_self_ref = false;
    for input in &sig.inputs {
        match input {
            // `&self` and `self: &Self` alike: syn spells the shorthand's type out too.
            FnArg::Receiver(r) => {
                if let Some(r) = reference(&r.ty) {
                    has_self_ref = true;
                    if r.mutability.is_some() {
                        muts.push(MutInput {
                            lifetime: r.lifetime.clone(),
                            receiver: true,
                        });
                    }
                }
            }
            FnArg::Typed(pt) => {
                if let Some(r) = reference(&pt.ty) {
                    references += 1;
                    if r.mutability.is_some() {
                        muts.push(MutInput {
                            lifetime: r.lifetime.clone(),
                            receiver: false,
                        });
                    }
                }
            }
        }
    }
    if muts.is_empty() {
        return None;
    }
    let mut out = Mentions::default();
    out.ty(result);
    // A named lifetime of a `&mut` input, written in the result.
    for m in &muts {
        if let Some(lt) = &m.lifetime {
            if let Some(used) = out.named.iter().find(|n| n.ident == lt.ident) {
                return Some(used.span());
            }
        }
    }
    // An elided lifetime in the result takes `&self`'s (`&mut self` here), or the only
    // reference argument's when there is no `self` reference.
    let elided = out.elided?;
    let from_mut = if has_self_ref {
        muts.iter().any(|m| m.receiver)
    } else {
        references == 1 && muts.len() == 1
    };
    from_mut.then_some(elided)
}

/// `ty` if it is a reference, seen through the invisible group a `macro_rules!` fragment
/// (`$t:ty`) puts around it, and through parentheses.
pub(crate) fn reference(ty: &Type) -> Option<&syn::TypeReference> {
    match ty {
        Type::Reference(r) => Some(r),
        Type::Group(g) => reference(&g.elem),
        Type::Paren(p) => reference(&p.elem),
        _ => None,
    }
}

/// M4: a by-value argument whose type holds a `&mut` inside a type that is `Clone` only if
/// its parts are (`Option<&mut T>`, `(&mut A, B)`, `Vec<&mut T>`, ...) can never be cloned
/// for each attempt. Returns each such argument's name and its `&mut`'s span, so the error
/// names the argument (rustc's own says only "`&mut T: Clone` is not satisfied").
pub(crate) fn mut_inside_by_value_args(sig: &Signature) -> Vec<(String, Span)> {
    sig.inputs
        .iter()
        .filter_map(|input| match input {
            FnArg::Typed(pt) if reference(&pt.ty).is_none() => {
                let span = mut_inside(&pt.ty)?;
                let name = match &*pt.pat {
                    syn::Pat::Ident(p) => format!("`{}`", p.ident),
                    _ => "this argument".to_owned(),
                };
                Some((name, span))
            }
            _ => None,
        })
        .collect()
}

fn mut_inside(ty: &Type) -> Option<Span> {
    match ty {
        Type::Reference(r) if r.mutability.is_some() => Some(r.and_token.span),
        Type::Tuple(t) => t.elems.iter().find_map(mut_inside),
        Type::Array(a) => mut_inside(&a.elem),
        Type::Paren(p) => mut_inside(&p.elem),
        Type::Group(g) => mut_inside(&g.elem),
        Type::Path(p) if p.qself.is_none() => {
            // Only wrappers whose `Clone` needs their parts' (not `Rc`, `Arc`, which clone
            // any `T`, nor a user's type, which may clone without it).
            let last = p.path.segments.last()?;
            let wrapper = ["Option", "Result", "Vec", "VecDeque", "Box"]
                .iter()
                .any(|w| last.ident == w);
            let PathArguments::AngleBracketed(a) = &last.arguments else {
                return None;
            };
            if !wrapper {
                return None;
            }
            a.args.iter().find_map(|arg| match arg {
                GenericArgument::Type(t) => mut_inside(t),
                _ => None,
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

    fn check(sig: Signature, result: Type) -> bool {
        borrow_of_mut_input(&sig, &result).is_some()
    }

    #[test]
    fn m4_a_mut_inside_a_by_value_argument_is_found_and_others_are_not() {
        let found = |sig: Signature| {
            mut_inside_by_value_args(&sig)
                .into_iter()
                .map(|(name, _)| name)
                .collect::<Vec<_>>()
        };
        assert_eq!(found(parse_quote!(fn f(c: Option<&mut u32>) -> R)), ["`c`"]);
        assert_eq!(
            found(parse_quote!(fn f(a: u8, (x, y): (u8, Vec<&mut u8>)) -> R)),
            ["this argument"]
        );
        assert_eq!(
            found(parse_quote!(fn f(b: std::boxed::Box<[&mut u8; 2]>, c: Result<&mut u8, E>) -> R)),
            ["`b`", "`c`"]
        );
        // By reference, cloneable around a `&mut`, a user's type, or no `&mut` at all.
        for sig in [
            parse_quote!(fn f(c: &mut Option<&mut u32>) -> R),
            parse_quote!(fn f(c: std::rc::Rc<&mut u32>) -> R),
            parse_quote!(fn f(c: Handle<&mut u32>) -> R),
            parse_quote!(fn f(c: Option<&u32>, v: Vec<String>) -> R),
        ] {
            assert!(found(sig).is_empty());
        }
    }

    #[test]
    fn m1_a_borrow_of_a_mut_input_is_found_and_others_are_not() {
        // Borrows of `&mut self` or of the only `&mut` argument, elided or named.
        assert!(check(
            parse_quote!(fn f(&mut self) -> Result<&mut String, E>),
            parse_quote!(Result<&mut String, E>)
        ));
        assert!(check(
            parse_quote!(fn f<'a>(&'a mut self, s: &str) -> Result<&'a str, E>),
            parse_quote!(Result<&'a str, E>)
        ));
        assert!(check(
            parse_quote!(fn f(&mut self) -> Result<Parts<'_>, E>),
            parse_quote!(Result<Parts<'_>, E>)
        ));
        assert!(check(
            parse_quote!(fn f(buf: &mut Vec<u8>) -> Result<&[u8], E>),
            parse_quote!(Result<&[u8], E>)
        ));
        // `self: &mut Self` is `&mut self`.
        assert!(check(
            parse_quote!(fn f(self: &mut Self) -> Result<&mut String, E>),
            parse_quote!(Result<&mut String, E>)
        ));
        assert!(check(
            parse_quote!(fn f<'a>(self: &'a mut Self) -> Result<&'a str, E>),
            parse_quote!(Result<&'a str, E>)
        ));
        // Not from a `&mut`: shared self, another argument's named lifetime, owned, static.
        assert!(!check(
            parse_quote!(fn f(self: &Self, buf: &mut Vec<u8>) -> Result<&str, E>),
            parse_quote!(Result<&str, E>)
        ));
        assert!(!check(
            parse_quote!(fn f(&self) -> Result<&str, E>),
            parse_quote!(Result<&str, E>)
        ));
        assert!(!check(
            parse_quote!(fn f<'a, 'b>(&'a mut self, s: &'b str) -> Result<&'b str, E>),
            parse_quote!(Result<&'b str, E>)
        ));
        assert!(!check(
            parse_quote!(fn f(&mut self) -> Result<String, E>),
            parse_quote!(Result<String, E>)
        ));
        assert!(!check(
            parse_quote!(fn f(&mut self) -> Result<&'static str, E>),
            parse_quote!(Result<&'static str, E>)
        ));
    }
}
