//! `#[service_defaults(..)]` on an `impl` block, inline `mod` or trait (M5): declares
//! arguments once for every `#[retry_service_operation]` inside.
//!
//! It does not expand anything itself. It rewrites each inner
//! `#[retry_service_operation(<own>)]` (any path ending in that name) to
//! `#[retry_service_operation(<own>, __defaults(<these defaults>))]`, and the inner attribute
//! merges them, its own arguments winning. A nested `#[service_defaults]` gets ours the same
//! way and passes both down, the innermost winning.
//!
//! The walk is over tokens, not a syn tree: it only needs the attributes of items at item
//! level, so a syntax error anywhere in a method body does not stop it, and fn bodies are
//! never entered.

use crate::args::{self, sym, RetryArgs};
use crate::diag::{with_original, Ctxt};
use crate::service_name::service_name_problem;
use crate::validate::Checked;
use proc_macro2::{Delimiter, Group, Span, TokenStream, TokenTree};
use quote::quote;

const RETRY: &str = "retry_service_operation";
const DEFAULTS: &str = "service_defaults";

/// The whole `#[service_defaults]` expansion.
pub(crate) fn service_defaults(attr: TokenStream, item: TokenStream) -> TokenStream {
    let ctxt = Ctxt::new();
    let parsed = args::parse(attr.clone(), &ctxt);
    check_args(&parsed, &ctxt);
    let out = match container_body(&item) {
        Ok((index, body)) => {
            let rewritten = rewrite_items(body.stream(), &attr);
            let mut group = Group::new(body.delimiter(), rewritten);
            group.set_span(body.span());
            let mut tokens: Vec<TokenTree> = item.clone().into_iter().collect();
            tokens[index] = TokenTree::Group(group);
            tokens.into_iter().collect()
        }
        Err(msg) => {
            ctxt.error(Span::call_site(), msg);
            item
        }
    };
    match ctxt.check() {
        Ok(()) => out,
        // The item is still emitted, rewritten when possible, so the fns inside keep their
        // defaults and only the real mistakes are reported (M3).
        Err(e) => with_original(out, &e),
    }
}

/// Defaults may set anything that is the same for every fn in the block, and nothing that
/// is a per-fn decision.
fn check_args(parsed: &RetryArgs, ctxt: &Ctxt) {
    let per_fn = [
        (&parsed.idempotent, sym::IDEMPOTENT, "whether an operation may run twice is decided per fn: write `idempotent` on each fn that is safe to retry; retry tuning declared here applies to those fns only"),
        (&parsed.not_idempotent, sym::NOT_IDEMPOTENT, "idempotency is decided per fn: fns without `idempotent` already run exactly once"),
    ];
    for (given, name, why) in per_fn {
        if let Some(g) = given {
            ctxt.error(g.key, format!("`{name}` cannot be a default: {why}"));
        }
    }
    if let Some(op) = &parsed.operation {
        ctxt.error(
            op.key,
            "`operation` cannot be a default: it names one fn (and defaults to the fn's name); set it on the fn",
        );
    }
    if let Some(s) = &parsed.service {
        if let Some(why) = service_name_problem(&s.value.value(), "these fns call") {
            ctxt.error(s.span, why);
        }
    }
    // Range checks (seconds, attempts, backoff names, crate path), reported once here rather
    // than once per fn.
    let _ = Checked::of(parsed, ctxt);
}

/// The index (among the item's top-level tokens) and the group of the block whose items get
/// the defaults, or why there is none.
fn container_body(item: &TokenStream) -> Result<(usize, Group), &'static str> {
    let tokens: Vec<TokenTree> = item.clone().into_iter().collect();
    let mut kind = None;
    let mut angle = 0i32;
    let mut prev_dash = false;
    for (i, tt) in tokens.iter().enumerate() {
        match tt {
            TokenTree::Ident(id) if kind.is_none() => {
                let s = id.to_string();
                match s.as_str() {
                    "impl" | "mod" | "trait" => kind = Some(s),
                    "fn" => return Err(
                        "#[service_defaults] goes on an `impl` block or inline `mod`; on a single fn, write the arguments in its #[retry_service_operation]",
                    ),
                    "struct" | "enum" | "union" | "type" | "const" | "static" | "use" | "extern" => {
                        return Err(NOT_A_CONTAINER)
                    }
                    _ => {}
                }
            }
            TokenTree::Punct(p) if kind.is_some() => {
                match p.as_char() {
                    '<' => angle += 1,
                    '>' if !prev_dash => angle -= 1,
                    ';' if kind.as_deref() == Some("mod") => {
                        return Err("#[service_defaults] needs an inline `mod name { … }`: it cannot see into a module in another file; put it on that module's impl blocks instead")
                    }
                    _ => {}
                }
                prev_dash = p.as_char() == '-';
                continue;
            }
            TokenTree::Group(g)
                if kind.is_some() && angle <= 0 && g.delimiter() == Delimiter::Brace =>
            {
                return Ok((i, g.clone()));
            }
            _ => {}
        }
        prev_dash = false;
    }
    Err(NOT_A_CONTAINER)
}

const NOT_A_CONTAINER: &str =
    "#[service_defaults] goes on an `impl` block, an inline `mod` or a trait with default method bodies";

/// Rewrites the item-level attributes inside one block, recursing into nested containers.
fn rewrite_items(body: TokenStream, defaults: &TokenStream) -> TokenStream {
    let tokens: Vec<TokenTree> = body.into_iter().collect();
    let mut out = Vec::with_capacity(tokens.len());
    // What the current item is: a container we enter, another item, or not known yet.
    let mut container: Option<bool> = None;
    // The current item carries its own #[service_defaults]: it will pass ours on itself.
    let mut handled = false;
    let mut angle = 0i32;
    let mut prev_dash = false;
    let mut i = 0;
    while i < tokens.len() {
        let tt = &tokens[i];
        match tt {
            TokenTree::Punct(p) if p.as_char() == '#' => {
                if let Some(TokenTree::Group(g)) = tokens.get(i + 1) {
                    if g.delimiter() == Delimiter::Bracket {
                        let (group, ours) = rewrite_attr(g, defaults);
                        handled |= ours == Some(DEFAULTS);
                        out.push(tt.clone());
                        out.push(TokenTree::Group(group));
                        i += 2;
                        continue;
                    }
                }
                out.push(tt.clone());
            }
            TokenTree::Ident(id) if container.is_none() => {
                match id.to_string().as_str() {
                    "impl" | "mod" | "trait" => container = Some(true),
                    "fn" | "struct" | "enum" | "union" | "type" | "const" | "static" | "use"
                    | "extern" | "macro_rules" | "let" => container = Some(false),
                    _ => {}
                }
                out.push(tt.clone());
            }
            TokenTree::Punct(p) => {
                // Angle brackets only matter in a container's header (`impl<T> S<T> {`): in
                // any other item a `<` may be a comparison or a shift (`const B: bool = 1 < 2;`).
                let header = container != Some(false);
                match p.as_char() {
                    '<' if header => angle += 1,
                    '>' if header && !prev_dash => angle -= 1,
                    ';' if angle <= 0 => (container, handled, angle) = (None, false, 0),
                    _ => {}
                }
                prev_dash = p.as_char() == '-';
                out.push(tt.clone());
                i += 1;
                continue;
            }
            TokenTree::Group(g) if g.delimiter() == Delimiter::Brace && angle <= 0 => {
                if container == Some(true) && !handled {
                    let mut inner =
                        Group::new(Delimiter::Brace, rewrite_items(g.stream(), defaults));
                    inner.set_span(g.span());
                    out.push(TokenTree::Group(inner));
                } else {
                    out.push(tt.clone());
                }
                // A brace block ends the item (`fn`, `impl`, `mod`, `struct S { .. }`, …).
                (container, handled, angle) = (None, false, 0);
            }
            _ => out.push(tt.clone()),
        }
        prev_dash = false;
        i += 1;
    }
    out.into_iter().collect()
}

/// If the attribute inside `[ … ]` is ours, returns it with the defaults appended to its
/// arguments, and which of ours it is.
fn rewrite_attr(g: &Group, defaults: &TokenStream) -> (Group, Option<&'static str>) {
    let tokens: Vec<TokenTree> = g.stream().into_iter().collect();
    match rewrite_meta(&tokens, defaults, g.span()) {
        Some((new, name)) => {
            let mut group = Group::new(Delimiter::Bracket, new.into_iter().collect());
            group.set_span(g.span());
            (group, Some(name))
        }
        None => (g.clone(), None),
    }
}

/// One attribute's meta (`path` or `path(args)`): ours with the defaults appended, or
/// `cfg_attr(pred, …)` holding ours, rewritten inside.
/// `span`: the attribute's, for the arguments of one written without any.
fn rewrite_meta(
    tokens: &[TokenTree],
    defaults: &TokenStream,
    span: Span,
) -> Option<(Vec<TokenTree>, &'static str)> {
    let path_len = tokens
        .iter()
        .take_while(|t| {
            matches!(t, TokenTree::Ident(_))
                || matches!(t, TokenTree::Punct(p) if p.as_char() == ':')
        })
        .count();
    let rest = &tokens[path_len..];
    let name = match tokens[..path_len].last() {
        Some(TokenTree::Ident(id)) if id == RETRY => RETRY,
        Some(TokenTree::Ident(id)) if id == DEFAULTS => DEFAULTS,
        Some(TokenTree::Ident(id)) if id == "cfg_attr" && path_len == 1 => {
            return rewrite_cfg_attr(&tokens[0], rest, defaults, span)
        }
        _ => return None,
    };
    let own = match rest {
        [] => TokenStream::new(),
        [TokenTree::Group(args)] if args.delimiter() == Delimiter::Parenthesis => args.stream(),
        _ => return None,
    };
    let args_span = match rest {
        [TokenTree::Group(args)] => args.span(),
        _ => span,
    };
    let needs_comma = own
        .clone()
        .into_iter()
        .last()
        .is_some_and(|t| !matches!(t, TokenTree::Punct(ref p) if p.as_char() == ','));
    let comma = needs_comma.then(|| quote!(,));
    let mut args = Group::new(
        Delimiter::Parenthesis,
        quote!(#own #comma __defaults(#defaults)),
    );
    args.set_span(args_span);
    let mut new: Vec<TokenTree> = tokens[..path_len].to_vec();
    new.push(TokenTree::Group(args));
    Some((new, name))
}

/// `cfg_attr(pred, a, b, …)` with ours among `a, b, …` rewritten (the predicate untouched).
fn rewrite_cfg_attr(
    cfg_attr: &TokenTree,
    rest: &[TokenTree],
    defaults: &TokenStream,
    span: Span,
) -> Option<(Vec<TokenTree>, &'static str)> {
    let [TokenTree::Group(args)] = rest else {
        return None;
    };
    if args.delimiter() != Delimiter::Parenthesis {
        return None;
    }
    let inner: Vec<TokenTree> = args.stream().into_iter().collect();
    let parts = inner.split(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == ','));
    let mut found = None;
    let mut out: Vec<TokenTree> = Vec::with_capacity(inner.len() + 4);
    for (i, part) in parts.enumerate() {
        if i > 0 {
            out.extend(quote!(,));
        }
        match (i, rewrite_meta(part, defaults, span)) {
            (1.., Some((new, name))) => {
                found = Some(name);
                out.extend(new);
            }
            _ => out.extend(part.iter().cloned()),
        }
    }
    let name = found?;
    let mut group = Group::new(Delimiter::Parenthesis, out.into_iter().collect());
    group.set_span(args.span());
    Some((vec![cfg_attr.clone(), TokenTree::Group(group)], name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewrite(item: TokenStream) -> String {
        let (index, body) = container_body(&item).expect("a container");
        let _ = index;
        rewrite_items(body.stream(), &quote!(service = "svc")).to_string()
    }

    #[test]
    fn m5_every_spelling_of_the_inner_attribute_gets_the_defaults() {
        let out = rewrite(quote! {
            impl C {
                #[retry_service_operation(idempotent)] fn a(&self) {}
                #[resilience::retry_service_operation] fn b(&self) {}
                #[::resilience::retry_service_operation(idempotent,)] fn c(&self) {}
                #[doc = "untouched"] #[inline] fn d(&self) {}
            }
        });
        assert_eq!(
            out.matches("__defaults (service = \"svc\")").count(),
            3,
            "{out}"
        );
        assert!(
            out.contains("retry_service_operation (idempotent , __defaults"),
            "{out}"
        );
        assert!(out.contains("retry_service_operation (__defaults"), "{out}");
        // A trailing comma is not doubled.
        assert!(!out.contains(", ,"), "{out}");
        assert!(out.contains("# [doc = \"untouched\"] # [inline]"), "{out}");
        let out = rewrite(quote! {
            impl C {
                #[cfg_attr(feature = "x", allow(unused), retry_service_operation(idempotent))]
                fn e(&self) {}
                #[cfg_attr(any(), cfg_attr(all(), retry_service_operation))] fn f(&self) {}
                #[cfg_attr(all(), inline)] fn g(&self) {}
            }
        });
        assert_eq!(out.matches("__defaults").count(), 2, "{out}");
        assert!(
            out.contains("cfg_attr (feature = \"x\" , allow (unused) , retry_service_operation (idempotent , __defaults"),
            "{out}"
        );
    }

    #[test]
    fn m5_fn_bodies_are_never_entered_but_nested_containers_are() {
        let out = rewrite(quote! {
            mod m {
                fn outer() {
                    #[retry_service_operation(idempotent)] fn inner() {}
                }
                impl<T: Fn() -> u8> S<T> where T: Clone {
                    #[retry_service_operation(idempotent)] fn method(&self) {}
                }
                #[service_defaults(service = "inner")]
                mod nested {
                    #[retry_service_operation(idempotent)] fn deep() {}
                }
            }
        });
        // `method` (impl inside the mod) and the nested #[service_defaults] get them; the fn
        // inside `outer`'s body and `deep` (the nested defaults pass them on) do not.
        assert_eq!(out.matches("__defaults").count(), 2, "{out}");
        assert!(
            out.contains("service_defaults (service = \"inner\" , __defaults"),
            "{out}"
        );
        assert!(out.contains("fn inner"), "{out}");
    }

    #[test]
    fn m5_comparisons_and_shifts_in_items_do_not_hide_the_containers_after_them() {
        let out = rewrite(quote! {
            mod m {
                const SMALL: bool = 1 < 2;
                static MASK: u32 = 1 << 4;
                type Pair = (Vec<u8>, Option<u8>);
                impl S {
                    #[retry_service_operation(idempotent)] fn f(&self) {}
                }
            }
        });
        assert_eq!(out.matches("__defaults").count(), 1, "{out}");
    }

    #[test]
    fn m5_container_body_skips_braces_inside_generics() {
        let item = quote! { impl<const N: usize> S<{ N }> { fn f() {} } };
        let (_, body) = container_body(&item).expect("a container");
        assert_eq!(body.stream().to_string(), "fn f () { }");
    }

    #[test]
    fn m5_misplaced_defaults_say_where_they_go() {
        assert!(container_body(&quote! { fn f() {} })
            .unwrap_err()
            .contains("on a single fn"));
        assert!(container_body(&quote! { mod m; })
            .unwrap_err()
            .contains("inline `mod"));
        assert!(container_body(&quote! { struct S {} })
            .unwrap_err()
            .contains("impl"));
    }
}
