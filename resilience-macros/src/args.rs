//! Attribute arguments as written: each key parsed with its span, typed, and set at most once.
//!
//! Only the syntax and the literal's type are checked here; ranges and cross-argument rules
//! are [`validate`](crate::validate)'s job.

use crate::diag::Ctxt;
use crate::suggest::{closest, unknown_key_message};
use crate::values::{boolean, classifier, count, flag, secs, string};
use proc_macro2::{Span, TokenStream};
use syn::ext::IdentExt;
use syn::parse::{ParseStream, Parser};
use syn::{Expr, Ident, LitStr, Token};

/// The argument keywords.
pub(crate) mod kw {
    syn::custom_keyword!(service);
    syn::custom_keyword!(idempotent);
    syn::custom_keyword!(not_idempotent);
    syn::custom_keyword!(operation);
    syn::custom_keyword!(total_timeout);
    syn::custom_keyword!(max_attempts);
    syn::custom_keyword!(backoff);
    syn::custom_keyword!(base_delay);
    syn::custom_keyword!(max_delay);
    syn::custom_keyword!(jitter);
    syn::custom_keyword!(classify);
    syn::custom_keyword!(__defaults);
}

/// Key names as users write them; one place, so messages and suggestions cannot drift.
pub(crate) mod sym {
    pub(crate) const SERVICE: &str = "service";
    pub(crate) const IDEMPOTENT: &str = "idempotent";
    pub(crate) const NOT_IDEMPOTENT: &str = "not_idempotent";
    pub(crate) const OPERATION: &str = "operation";
    pub(crate) const TOTAL_TIMEOUT: &str = "total_timeout";
    pub(crate) const MAX_ATTEMPTS: &str = "max_attempts";
    pub(crate) const BACKOFF: &str = "backoff";
    pub(crate) const BASE_DELAY: &str = "base_delay";
    pub(crate) const MAX_DELAY: &str = "max_delay";
    pub(crate) const JITTER: &str = "jitter";
    pub(crate) const CLASSIFY: &str = "classify";
    pub(crate) const CRATE: &str = "crate";

    /// Every key, in documentation order.
    pub(crate) const ALL: [&str; 12] = [
        SERVICE,
        IDEMPOTENT,
        NOT_IDEMPOTENT,
        OPERATION,
        TOTAL_TIMEOUT,
        MAX_ATTEMPTS,
        BACKOFF,
        BASE_DELAY,
        MAX_DELAY,
        JITTER,
        CLASSIFY,
        CRATE,
    ];
}

/// A value together with where it was written.
#[derive(Clone, Debug)]
pub(crate) struct Spanned<T> {
    pub(crate) value: T,
    /// The key (`max_attempts` in `max_attempts = 3`): where "this argument" errors go.
    pub(crate) key: Span,
    /// The value (`3`): where "this value" errors go. The key's span for flags.
    pub(crate) span: Span,
}

/// A number of seconds as written: an integer or float literal, possibly negated.
pub(crate) type Secs = f64;

/// The arguments of one attribute, typed but not yet validated.
#[derive(Default)]
pub(crate) struct RetryArgs {
    pub(crate) service: Option<Spanned<LitStr>>,
    pub(crate) idempotent: Option<Spanned<()>>,
    pub(crate) not_idempotent: Option<Spanned<()>>,
    pub(crate) operation: Option<Spanned<LitStr>>,
    pub(crate) total_timeout: Option<Spanned<Secs>>,
    pub(crate) max_attempts: Option<Spanned<u64>>,
    pub(crate) backoff: Option<Spanned<LitStr>>,
    pub(crate) base_delay: Option<Spanned<Secs>>,
    pub(crate) max_delay: Option<Spanned<Secs>>,
    pub(crate) jitter: Option<Spanned<bool>>,
    /// The classifier's path (`classify = resilience::retry::ByHint`).
    pub(crate) classify: Option<Spanned<Expr>>,
    pub(crate) krate: Option<Spanned<LitStr>>,
    /// Inherited from an enclosing `#[service_defaults(..)]`, which rewrote this attribute
    /// to carry them as `__defaults(..)`.
    pub(crate) defaults: Option<Box<Defaults>>,
    /// Every known key written, valid or not.
    given: Vec<&'static str>,
}

impl RetryArgs {
    /// Fills every argument not given here from `outer`.
    fn inherit(&mut self, outer: RetryArgs) {
        macro_rules! fill {
            ($($field:ident),*) => { $(if self.$field.is_none() { self.$field = outer.$field; })* };
        }
        fill!(
            service,
            idempotent,
            not_idempotent,
            operation,
            total_timeout,
            max_attempts,
            backoff,
            base_delay,
            max_delay,
            jitter,
            classify,
            krate
        );
        self.given.extend(outer.given);
    }

    /// Whether `name` was written at all (even with a value that failed to type).
    pub(crate) fn given(&self, name: &str) -> bool {
        self.given.contains(&name)
    }
}

/// Defaults inherited from `#[service_defaults]`. Their errors were already reported there,
/// once, so here they are parsed silently; `had_errors` only softens follow-on errors.
pub(crate) struct Defaults {
    pub(crate) args: RetryArgs,
    pub(crate) had_errors: bool,
}

/// Parses attribute arguments, recording every problem in `ctxt`.
pub(crate) fn parse(tokens: TokenStream, ctxt: &Ctxt) -> RetryArgs {
    let mut args = RetryArgs::default();
    let parser = |input: ParseStream<'_>| {
        while !input.is_empty() {
            parse_one(input, &mut args, ctxt)?;
            if input.is_empty() {
                break;
            }
            input.parse::<Token![,]>()?;
        }
        Ok(())
    };
    if let Err(e) = parser.parse2(tokens) {
        ctxt.push(e);
    }
    args
}

/// A value: a lone literal (what every valid value is) without syn's expression parser, which
/// costs more in the unoptimized macro than the rest of the argument list; anything else as
/// an expression, for the error messages that name what was written.
fn parse_value(input: ParseStream<'_>) -> syn::Result<Expr> {
    let fork = input.fork();
    let lone_lit = fork.parse::<syn::Lit>().is_ok() && (fork.is_empty() || fork.peek(Token![,]));
    if lone_lit {
        Ok(Expr::Lit(syn::ExprLit {
            attrs: Vec::new(),
            lit: input.parse()?,
        }))
    } else {
        input.parse()
    }
}

fn parse_one(input: ParseStream<'_>, args: &mut RetryArgs, ctxt: &Ctxt) -> syn::Result<()> {
    if input.peek(kw::__defaults) {
        input.parse::<kw::__defaults>()?;
        let content;
        syn::parenthesized!(content in input);
        let inner = Ctxt::new();
        let mut parsed = parse(content.parse()?, &inner);
        let mut had_errors = inner.discard();
        // Defaults of an outer `#[service_defaults]`, passed on by an inner one: the inner
        // one's own values win.
        if let Some(outer) = parsed.defaults.take() {
            parsed.inherit(outer.args);
            had_errors |= outer.had_errors;
        }
        // A second `__defaults` on one attribute: an inner `#[service_defaults]` imported
        // under another name, which the outer one did not recognise, so each appended its
        // own. The inner one expands last and comes last: its values win, the outer's fill in.
        if let Some(earlier) = args.defaults.take() {
            parsed.inherit(earlier.args);
            had_errors |= earlier.had_errors;
        }
        args.defaults = Some(Box::new(Defaults {
            args: parsed,
            had_errors,
        }));
        return Ok(());
    }
    let key = parse_key(input, args, ctxt)?;
    let value = if input.peek(Token![=]) {
        input.parse::<Token![=]>()?;
        Some(parse_value(input)?)
    } else if input.peek(syn::token::Paren) {
        // `key(..)` is not a form we take; skip it so later arguments are still checked.
        let group = input.parse::<proc_macro2::Group>()?;
        if key.is_some() {
            ctxt.error(
                group.span(),
                "expected `key = value` or a flag, not `key(..)`",
            );
        }
        None
    } else {
        None
    };
    if let Some((key, key_span)) = key {
        assign(args, ctxt, key, key_span, value);
    }
    Ok(())
}

/// Which argument a key names.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Key {
    Service,
    Idempotent,
    NotIdempotent,
    Operation,
    TotalTimeout,
    MaxAttempts,
    Backoff,
    BaseDelay,
    MaxDelay,
    Jitter,
    Classify,
    Crate,
}

/// The key, or `None` for an unknown one (reported here; its value is skipped by the caller).
fn parse_key(
    input: ParseStream<'_>,
    args: &mut RetryArgs,
    ctxt: &Ctxt,
) -> syn::Result<Option<(Key, Span)>> {
    macro_rules! keyword {
        ($($kw:ident => $key:ident),* $(,)?) => {
            $(if input.peek(kw::$kw) {
                let k = input.parse::<kw::$kw>()?;
                return Ok(Some((Key::$key, k.span)));
            })*
        };
    }
    keyword! {
        service => Service,
        idempotent => Idempotent,
        not_idempotent => NotIdempotent,
        operation => Operation,
        total_timeout => TotalTimeout,
        max_attempts => MaxAttempts,
        backoff => Backoff,
        base_delay => BaseDelay,
        max_delay => MaxDelay,
        jitter => Jitter,
        classify => Classify,
    }
    if input.peek(Token![crate]) {
        let k = input.parse::<Token![crate]>()?;
        return Ok(Some((Key::Crate, k.span)));
    }
    if input.peek(Ident::peek_any) {
        let ident = input.call(Ident::parse_any)?;
        let given = ident.unraw().to_string();
        // A raw identifier (`r#idempotent`) names the key itself.
        if let Some(key) = KEYS.into_iter().find(|k| key_name(*k) == given) {
            return Ok(Some((key, ident.span())));
        }
        let suggestion = closest(&given, &sym::ALL);
        ctxt.error(ident.span(), unknown_key_message(&given, suggestion));
        // A misspelt `service` should not also be reported as missing.
        if let Some(meant) = suggestion {
            args.given.push(meant);
        }
        return Ok(None);
    }
    Err(input.error(format!(
        "expected an argument such as `service = \"plan_service\"` or `idempotent`; valid arguments: {}",
        sym::ALL.join(", ")
    )))
}

/// Stores one `key [= value]` through the single set-once path, typing the value.
fn assign(args: &mut RetryArgs, ctxt: &Ctxt, key: Key, key_span: Span, value: Option<Expr>) {
    let name = key_name(key);
    args.given.push(name);
    match key {
        Key::Idempotent => set(
            ctxt,
            &mut args.idempotent,
            name,
            flag(ctxt, name, key_span, value),
        ),
        Key::NotIdempotent => set(
            ctxt,
            &mut args.not_idempotent,
            name,
            flag(ctxt, name, key_span, value),
        ),
        Key::Service => set(
            ctxt,
            &mut args.service,
            name,
            string(ctxt, name, key_span, value),
        ),
        Key::Operation => set(
            ctxt,
            &mut args.operation,
            name,
            string(ctxt, name, key_span, value),
        ),
        Key::Backoff => set(
            ctxt,
            &mut args.backoff,
            name,
            string(ctxt, name, key_span, value),
        ),
        Key::Crate => set(
            ctxt,
            &mut args.krate,
            name,
            string(ctxt, name, key_span, value),
        ),
        Key::TotalTimeout => set(
            ctxt,
            &mut args.total_timeout,
            name,
            secs(ctxt, name, key_span, value),
        ),
        Key::BaseDelay => set(
            ctxt,
            &mut args.base_delay,
            name,
            secs(ctxt, name, key_span, value),
        ),
        Key::MaxDelay => set(
            ctxt,
            &mut args.max_delay,
            name,
            secs(ctxt, name, key_span, value),
        ),
        Key::MaxAttempts => set(
            ctxt,
            &mut args.max_attempts,
            name,
            count(ctxt, name, key_span, value),
        ),
        Key::Jitter => set(
            ctxt,
            &mut args.jitter,
            name,
            boolean(ctxt, name, key_span, value),
        ),
        Key::Classify => set(
            ctxt,
            &mut args.classify,
            name,
            classifier(ctxt, name, key_span, value),
        ),
    }
}

/// Every key, for lookups by name.
const KEYS: [Key; 12] = [
    Key::Service,
    Key::Idempotent,
    Key::NotIdempotent,
    Key::Operation,
    Key::TotalTimeout,
    Key::MaxAttempts,
    Key::Backoff,
    Key::BaseDelay,
    Key::MaxDelay,
    Key::Jitter,
    Key::Classify,
    Key::Crate,
];

fn key_name(key: Key) -> &'static str {
    match key {
        Key::Service => sym::SERVICE,
        Key::Idempotent => sym::IDEMPOTENT,
        Key::NotIdempotent => sym::NOT_IDEMPOTENT,
        Key::Operation => sym::OPERATION,
        Key::TotalTimeout => sym::TOTAL_TIMEOUT,
        Key::MaxAttempts => sym::MAX_ATTEMPTS,
        Key::Backoff => sym::BACKOFF,
        Key::BaseDelay => sym::BASE_DELAY,
        Key::MaxDelay => sym::MAX_DELAY,
        Key::Jitter => sym::JITTER,
        Key::Classify => sym::CLASSIFY,
        Key::Crate => sym::CRATE,
    }
}

/// The one set-once helper: every key goes through it, so duplicate detection is uniform.
/// A value that failed to type (`None`) still counts as given, so it is not reported twice.
fn set<T>(ctxt: &Ctxt, slot: &mut Option<Spanned<T>>, name: &str, value: Option<Spanned<T>>) {
    let Some(value) = value else { return };
    if slot.is_some() {
        ctxt.error(
            value.key,
            format!("duplicate argument `{name}`: it is already given earlier in this attribute; keep one"),
        );
    } else {
        *slot = Some(value);
    }
}
