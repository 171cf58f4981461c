//! A lazy model of the annotated fn: attributes, visibility and signature are parsed; the
//! body is kept as an opaque brace group.
//!
//! Not parsing the body keeps the macro fast and, more importantly, tolerant: a body with a
//! syntax error still expands, and rustc then reports the real error at its real place
//! instead of the attribute failing as a whole.

use proc_macro2::{Delimiter, Group, TokenStream, TokenTree};
use quote::ToTokens;
use syn::parse::{Parse, ParseStream};
use syn::{Attribute, Signature, Token, Visibility};

/// An fn item, a method in an `impl` or a trait method with a default body.
pub(crate) struct ItemFn {
    pub(crate) attrs: Vec<Attribute>,
    pub(crate) vis: Visibility,
    pub(crate) sig: Signature,
    /// `{ … }`, untouched. `None` for a trait method declaration (`fn f(&self);`).
    pub(crate) body: Option<Group>,
}

impl Parse for ItemFn {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        let sig: Signature = input.parse()?;
        if input.peek(Token![;]) {
            input.parse::<Token![;]>()?;
            return Ok(Self {
                attrs,
                vis,
                sig,
                body: None,
            });
        }
        let body = match input.parse::<TokenTree>()? {
            TokenTree::Group(g) if g.delimiter() == Delimiter::Brace => g,
            other => {
                return Err(syn::Error::new(
                    other.span(),
                    "expected the fn body `{ … }`",
                ))
            }
        };
        // Anything after the body is not ours to judge; rustc will report it.
        input.parse::<TokenStream>()?;
        Ok(Self {
            attrs,
            vis,
            sig,
            body: Some(body),
        })
    }
}

impl ItemFn {
    /// The fn re-emitted with another body.
    pub(crate) fn with_body(&self, body: TokenStream) -> TokenStream {
        let mut out = TokenStream::new();
        for attr in &self.attrs {
            attr.to_tokens(&mut out);
        }
        self.vis.to_tokens(&mut out);
        self.sig.to_tokens(&mut out);
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
