//! A lazy model of the annotated fn: attributes, visibility and signature are parsed; the
//! body is kept as an opaque brace group.
//!
//! Not parsing the body keeps the macro fast (the body's tokens are never walked: syn only
//! sees the header) and tolerant: a body with a syntax error still expands, and rustc then
//! reports the real error at its real place instead of the attribute failing as a whole.

use proc_macro2::{Delimiter, Group, TokenStream, TokenTree};
use syn::parse::{ParseStream, Parser};
use syn::{Attribute, Signature, Token, Visibility};

/// An fn item, a method in an `impl` or a trait method with a default body.
pub(crate) struct ItemFn {
    /// Everything before the body, as written: re-emitted untouched unless the signature's
    /// patterns must change ([`ItemFn::with_sig_and_body`]).
    header: TokenStream,
    attrs: Vec<Attribute>,
    vis: Visibility,
    pub(crate) sig: Signature,
    /// `{ … }`, untouched. `None` for a trait method declaration (`fn f(&self);`).
    pub(crate) body: Option<Group>,
}

/// `{ … }`, also when a `macro_rules!` passed it as a `$body:block` fragment: an invisible
/// group around the braces.
fn brace_body(tt: &TokenTree) -> Option<Group> {
    let TokenTree::Group(g) = tt else { return None };
    match g.delimiter() {
        Delimiter::Brace => Some(g.clone()),
        Delimiter::None => {
            let mut inner = g.stream().into_iter();
            match (inner.next(), inner.next()) {
                (Some(only), None) => brace_body(&only),
                _ => None,
            }
        }
        _ => None,
    }
}

impl ItemFn {
    /// Splits off the body at the top level (without descending into it), then parses the
    /// header: outer attributes, visibility, signature.
    pub(crate) fn parse(item: TokenStream) -> syn::Result<Self> {
        let mut tokens: Vec<TokenTree> = item.into_iter().collect();
        let body = match tokens.last().and_then(brace_body) {
            Some(g) => {
                tokens.pop();
                Some(g)
            }
            None => None,
        };
        let header: TokenStream = tokens.into_iter().collect();
        let has_body = body.is_some();
        let parser = |input: ParseStream<'_>| {
            let attrs = input.call(Attribute::parse_outer)?;
            let vis = input.parse::<Visibility>()?;
            let sig: Signature = input.parse()?;
            if !has_body {
                input.parse::<Token![;]>()?;
            }
            if !input.is_empty() {
                return Err(input.error("expected the fn body `{ … }`"));
            }
            Ok((attrs, vis, sig))
        };
        let (attrs, vis, sig) = parser.parse2(header.clone())?;
        Ok(Self {
            header,
            attrs,
            vis,
            sig,
            body,
        })
    }

    /// The fn re-emitted with another body.
    pub(crate) fn with_body(&self, body: TokenStream) -> TokenStream {
        self.emit(self.header.clone(), body)
    }

    /// The fn re-emitted with another signature (same type, other patterns) and body.
    pub(crate) fn with_sig_and_body(&self, sig: &Signature, body: TokenStream) -> TokenStream {
        let (attrs, vis) = (&self.attrs, &self.vis);
        self.emit(quote::quote!(#(#attrs)* #vis #sig), body)
    }

    fn emit(&self, header: TokenStream, body: TokenStream) -> TokenStream {
        let mut out = header;
        let span = self
            .body
            .as_ref()
            .map_or_else(proc_macro2::Span::call_site, |b| b.span());
        let mut group = Group::new(Delimiter::Brace, body);
        group.set_span(span);
        out.extend([TokenTree::Group(group)]);
        out
    }

    /// The name operations default to: the fn's name without `r#`.
    pub(crate) fn operation_name(&self) -> String {
        let name = self.sig.ident.to_string();
        name.strip_prefix("r#").unwrap_or(&name).to_owned()
    }
}
