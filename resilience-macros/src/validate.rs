//! Turns the typed arguments and the fn's signature into a validated plan (the IR that
//! [`expand`](crate::expand) generates code from), collecting every error on the way.

use crate::args::{sym, Defaults, RetryArgs, Secs, Spanned};
use crate::diag::Ctxt;
use crate::item::ItemFn;
use crate::ranges::{attempts_problem, secs_problem};
use crate::service_name::service_name_problem;
use proc_macro2::Span;
use syn::spanned::Spanned as _;
use syn::visit_mut::VisitMut;
use syn::{
    FnArg, GenericArgument, LitStr, Path, PathArguments, ReturnType, Signature, Type,
    TypeParamBound,
};

/// Everything the expansion needs, all checked.
pub(crate) struct Plan {
    /// Path of the facade (`::resilience` unless `crate = "…"`).
    pub(crate) krate: Path,
    pub(crate) service: LitStr,
    pub(crate) operation: LitStr,
    pub(crate) idempotent: bool,
    pub(crate) declared: Declared,
    /// R12: the `classify` value (own, else inherited) and its span.
    pub(crate) classify: Option<(syn::Expr, Span)>,
    pub(crate) shape: Shape,
    /// An `ImplFuture` whose future is boxed: `Pin<Box<dyn Future<Output = …> + …>>`, as
    /// `#[async_trait]` writes an `async fn`.
    pub(crate) boxed: bool,
    /// What one attempt produces (`Result<T, E>`), with `impl Trait` erased to `_`.
    pub(crate) attempt_ty: Type,
    /// Where the error type `E` is written (for an alias like `app::Result<T>`, its
    /// `Result`): type errors about `E` are pointed there.
    pub(crate) error_span: Span,
}

/// The code-declared settings (C13's "code" layer). `None`: not declared here.
#[derive(Default, Clone, Copy)]
pub(crate) struct Declared {
    pub(crate) max_attempts: Option<u32>,
    pub(crate) backoff: Option<Backoff>,
    pub(crate) base_delay: Option<f64>,
    pub(crate) max_delay: Option<f64>,
    pub(crate) jitter: Option<bool>,
    pub(crate) total_timeout: Option<f64>,
}

/// The backoff strategies, named as in config (R4).
#[derive(Clone, Copy)]
pub(crate) enum Backoff {
    Exponential,
    Linear,
    Fixed,
    Jitter,
    None,
}

impl Backoff {
    const NAMES: [&'static str; 5] = ["exponential", "linear", "fixed", "jitter", "none"];

    fn from_name(s: &str) -> Option<Self> {
        Some(match s {
            "exponential" => Self::Exponential,
            "linear" => Self::Linear,
            "fixed" => Self::Fixed,
            "jitter" => Self::Jitter,
            "none" => Self::None,
            _ => return None,
        })
    }
}

/// How the fn produces its result (R3: detected from the signature alone).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// `fn … -> Result<T, E>`.
    Sync,
    /// `async fn … -> Result<T, E>`.
    AsyncFn,
    /// `fn … -> impl Future<Output = Result<T, E>>`, or `Pin<Box<dyn Future<…>>>`.
    ImplFuture,
}

/// The arguments only tune retries; without `idempotent` there are none to tune (M2).
const TUNING: [&str; 5] = [
    sym::MAX_ATTEMPTS,
    sym::BACKOFF,
    sym::BASE_DELAY,
    sym::MAX_DELAY,
    sym::JITTER,
];

/// `::resilience`, built directly: `parse_quote!` would make and parse tokens for it in every
/// expansion.
fn default_krate() -> Path {
    let mut segments = syn::punctuated::Punctuated::new();
    segments.push(syn::PathSegment::from(proc_macro2::Ident::new(
        "resilience",
        Span::call_site(),
    )));
    Path {
        leading_colon: Some(syn::Token![::](Span::call_site())),
        segments,
    }
}

/// Validates `args` for `item`. `None` if anything is wrong; the reasons are in `ctxt`.
pub(crate) fn validate(mut args: RetryArgs, item: &ItemFn, ctxt: &Ctxt) -> Option<Plan> {
    let defaults = args.defaults.take();
    let quiet = Ctxt::new();
    let inherited = defaults.as_ref().map(|d| &d.args);

    let idempotent = idempotency(&args, ctxt);
    if !idempotent {
        reject_tuning_without_idempotent(&args, ctxt);
    }
    let mine = Checked::of(&args, ctxt);
    let theirs = inherited.map(|d| Checked::of(d, &quiet));
    quiet.discard();

    let service = service(&args, defaults.as_deref(), ctxt);
    let operation = operation(&args, item, ctxt);
    let krate = mine
        .krate
        .or_else(|| theirs.as_ref().and_then(|t| t.krate.clone()));
    let krate = krate.unwrap_or_else(default_krate);

    let merged = match &theirs {
        Some(t) => mine.declared.or(&t.declared),
        None => mine.declared,
    };
    let declared = if idempotent {
        merged
    } else {
        // Inherited tuning applies only to fns that retry; writes ignore it.
        Declared {
            total_timeout: merged.total_timeout,
            ..Declared::default()
        }
    };

    // Unlike the tuning above, a classifier matters to a write too, own or inherited: it
    // picks the errors whose Retry-After reaches the service's sink (the governor's G6
    // block), though the write still runs once.
    let classify = args
        .classify
        .as_ref()
        .or_else(|| inherited.and_then(|d| d.classify.as_ref()))
        .map(|c| (c.value.clone(), c.span));

    check_signature(&item.sig, idempotent, ctxt);
    if item.body.is_none() {
        ctxt.error(
            item.sig.ident.span(),
            "#[retry_service_operation] needs the fn's body: put it on the impl's method, not on the trait's declaration",
        );
    }
    let output = classify_output(&item.sig, ctxt);
    if let (true, Some((_, _, result, _))) = (idempotent, &output) {
        if let Some(span) = crate::borrow::borrow_of_mut_input(&item.sig, result) {
            ctxt.error(
                span,
                "a retried fn cannot return a borrow of its `&mut` input: every attempt borrows it again, and the borrow checker does not let one attempt's borrow leave the retry loop. Return an owned value (e.g. `String`, or a clone), or drop `idempotent` so the operation runs once",
            );
        }
    }

    if ctxt.has_errors() {
        return None;
    }
    let (shape, boxed, attempt_ty, error_span) = output?;
    Some(Plan {
        krate,
        service: service?,
        operation,
        idempotent,
        declared,
        classify,
        shape,
        boxed,
        attempt_ty,
        error_span,
    })
}

impl Declared {
    /// Each value declared here, else the one in `fallback`.
    fn or(self, fallback: &Declared) -> Declared {
        Declared {
            max_attempts: self.max_attempts.or(fallback.max_attempts),
            backoff: self.backoff.or(fallback.backoff),
            base_delay: self.base_delay.or(fallback.base_delay),
            max_delay: self.max_delay.or(fallback.max_delay),
            jitter: self.jitter.or(fallback.jitter),
            total_timeout: self.total_timeout.or(fallback.total_timeout),
        }
    }
}

/// The value checks shared by the fn's own arguments and inherited defaults.
#[derive(Default)]
pub(crate) struct Checked {
    pub(crate) krate: Option<Path>,
    pub(crate) declared: Declared,
}

impl Checked {
    pub(crate) fn of(args: &RetryArgs, ctxt: &Ctxt) -> Self {
        let declared = Declared {
            total_timeout: args
                .total_timeout
                .as_ref()
                .and_then(|s| seconds(sym::TOTAL_TIMEOUT, s, ctxt)),
            max_attempts: args.max_attempts.as_ref().and_then(|n| attempts(n, ctxt)),
            backoff: args.backoff.as_ref().and_then(|b| backoff(b, ctxt)),
            base_delay: args
                .base_delay
                .as_ref()
                .and_then(|s| seconds(sym::BASE_DELAY, s, ctxt)),
            max_delay: args
                .max_delay
                .as_ref()
                .and_then(|s| seconds(sym::MAX_DELAY, s, ctxt)),
            jitter: args.jitter.as_ref().map(|j| j.value),
        };
        Self {
            krate: args.krate.as_ref().and_then(|k| crate_path(k, ctxt)),
            declared,
        }
    }
}

fn idempotency(args: &RetryArgs, ctxt: &Ctxt) -> bool {
    if let (Some(_), Some(not)) = (&args.idempotent, &args.not_idempotent) {
        ctxt.error(
            not.key,
            "`idempotent` and `not_idempotent` contradict each other: keep `idempotent` if running the operation twice is safe, otherwise keep `not_idempotent`",
        );
    }
    args.idempotent.is_some() && args.not_idempotent.is_none()
}

/// M2: a retry-tuning argument on an operation that runs once is a mistake worth stopping.
fn reject_tuning_without_idempotent(args: &RetryArgs, ctxt: &Ctxt) {
    let given: [Option<Span>; 5] = [
        args.max_attempts.as_ref().map(|a| a.key),
        args.backoff.as_ref().map(|a| a.key),
        args.base_delay.as_ref().map(|a| a.key),
        args.max_delay.as_ref().map(|a| a.key),
        args.jitter.as_ref().map(|a| a.key),
    ];
    let why = if args.not_idempotent.is_some() {
        "this operation is marked `not_idempotent`, so it runs exactly once"
    } else {
        "this operation is not marked `idempotent`, so it runs exactly once"
    };
    for (name, span) in TUNING.iter().zip(given) {
        if let Some(span) = span {
            ctxt.error(
                span,
                format!(
                    "`{name}` tunes retries, but {why}: add `idempotent` if running it twice has the same effect as once, or remove `{name}`"
                ),
            );
        }
    }
}

fn service(args: &RetryArgs, defaults: Option<&Defaults>, ctxt: &Ctxt) -> Option<LitStr> {
    let own = args.service.as_ref();
    let lit = own.or_else(|| defaults.and_then(|d| d.args.service.as_ref()));
    match lit {
        Some(s) => match service_name_problem(&s.value.value(), "this fn calls") {
            // An inherited bad service was reported by #[service_defaults] already.
            Some(why) => {
                if own.is_some() {
                    ctxt.error(s.span, why);
                }
                None
            }
            None => Some(s.value.clone()),
        },
        None => {
            // A `service` that was given but failed to type, or inherited defaults that had
            // errors, were reported already; "missing" would only add noise.
            let reported = args.given(sym::SERVICE) || defaults.is_some_and(|d| d.had_errors);
            if !reported {
                ctxt.error(
                    Span::call_site(),
                    "missing `service`: name the service this fn calls, e.g. `#[retry_service_operation(service = \"plan_service\")]`, or declare it once with `#[service_defaults(service = \"…\")]` on the enclosing impl or mod",
                );
            }
            None
        }
    }
}

fn operation(args: &RetryArgs, item: &ItemFn, ctxt: &Ctxt) -> LitStr {
    match &args.operation {
        Some(op) => {
            if op.value.value().trim().is_empty() {
                ctxt.error(
                    op.span,
                    "`operation` must not be empty: remove it to use the fn's name, or name the operation",
                );
            }
            op.value.clone()
        }
        None => LitStr::new(&item.operation_name(), item.sig.ident.span()),
    }
}

fn crate_path(k: &Spanned<LitStr>, ctxt: &Ctxt) -> Option<Path> {
    // A module path: generic arguments (`resilience<u8>`) would only break the expansion.
    match k.value.parse_with(Path::parse_mod_style) {
        Ok(p) => Some(p),
        Err(_) => {
            ctxt.error(
                k.span,
                "`crate` must be a path to the resilience facade, e.g. `crate = \"::resilience\"` or `crate = \"my_crate::resilience\"`",
            );
            None
        }
    }
}

fn seconds(name: &str, s: &Spanned<Secs>, ctxt: &Ctxt) -> Option<f64> {
    match secs_problem(name, s.value) {
        Some(why) => {
            ctxt.error(s.span, why);
            None
        }
        None => Some(s.value),
    }
}

fn attempts(n: &Spanned<u64>, ctxt: &Ctxt) -> Option<u32> {
    if let Some(why) = attempts_problem(n.value) {
        ctxt.error(n.span, why);
        return None;
    }
    u32::try_from(n.value).ok()
}

fn backoff(b: &Spanned<LitStr>, ctxt: &Ctxt) -> Option<Backoff> {
    let name = b.value.value();
    let found = Backoff::from_name(&name);
    if found.is_none() {
        let hint = match crate::suggest::closest(&name, &Backoff::NAMES) {
            Some(best) => format!("did you mean `\"{best}\"`? "),
            None => String::new(),
        };
        ctxt.error(
            b.span,
            format!(
                "unknown backoff `\"{name}\"`: {hint}expected one of \"exponential\", \"linear\", \"fixed\", \"jitter\", \"none\""
            ),
        );
    }
    found
}

/// M3: shapes the attempt loop cannot wrap.
fn check_signature(sig: &Signature, idempotent: bool, ctxt: &Ctxt) {
    if let Some(c) = &sig.constness {
        ctxt.error(
            c.span,
            "#[retry_service_operation] cannot guard a `const fn`: retries and the breaker run at run time; remove `const`",
        );
    }
    if let Some(abi) = &sig.abi {
        ctxt.error(
            abi.extern_token.span,
            "#[retry_service_operation] cannot guard an `extern` fn: guard a Rust fn and call it from the `extern` one",
        );
    }
    if let Some(v) = &sig.variadic {
        ctxt.error(
            v.dots.spans[0],
            "#[retry_service_operation] cannot guard a variadic fn",
        );
    }
    if idempotent {
        if let Some(FnArg::Receiver(r)) = sig.inputs.first() {
            // Any receiver but a reference: `self`, `mut self`, `self: Self`, and smart
            // pointers (`Box<Self>`, `Rc<Self>`, `Arc<Self>`, `Pin<…>`). Even a cloneable
            // `Rc<Self>` is refused: `self` cannot be rebound, so an attempt cannot be given a
            // fresh one as other by-value arguments are (M4).
            if crate::borrow::reference(&r.ty).is_none() {
                ctxt.error(
                    r.self_token.span,
                    "a retried fn cannot take `self` by value: the first attempt would consume it. Take `&self` or `&mut self`, or drop `idempotent` so the operation runs once",
                );
            }
        }
        for (name, span) in crate::borrow::mut_inside_by_value_args(sig) {
            ctxt.error(
                span,
                format!("argument {name} of a retried fn is taken by value and holds a `&mut`, which cannot be copied: each attempt needs its own copy of the argument. Take it by reference (e.g. `&mut Option<&mut T>`, reborrowed in the body with `.as_deref_mut()`), or drop `idempotent` so the fn runs once and may consume it"),
            );
        }
    }
}

/// R3: decides sync / async fn / `impl Future` from the signature, and checks the result is a
/// `Result` (the framework reports its refusals through its error type).
fn classify_output(sig: &Signature, ctxt: &Ctxt) -> Option<(Shape, bool, Type, Span)> {
    const NEED: &str = "expected a `Result<T, E>` return type (or `impl Future<Output = Result<T, E>>`): the framework reports an open circuit or an exhausted deadline through `E: From<resilience::ResilienceError>`";
    let ty = match &sig.output {
        ReturnType::Type(_, ty) => &**ty,
        ReturnType::Default => {
            ctxt.error(
                sig.ident.span(),
                format!(
                    "#[retry_service_operation] on `{}`, which returns `()`: {NEED}",
                    sig.ident
                ),
            );
            return None;
        }
    };
    let (shape, boxed, result) = if sig.asyncness.is_some() {
        (Shape::AsyncFn, false, ty)
    } else if let Some(output) = future_output(ty) {
        (Shape::ImplFuture, false, output)
    } else if let Some(output) = boxed_future_output(ty) {
        (Shape::ImplFuture, true, output)
    } else {
        (Shape::Sync, false, ty)
    };
    if !is_result(result) {
        let alias = if last_segment(result).is_some_and(|s| s.ends_with("Result")) {
            "; an alias of `Result` is recognised when it is named `Result` (e.g. `app::Result<T>`)"
        } else {
            ""
        };
        ctxt.error(
            result.span(),
            format!("#[retry_service_operation]: {NEED}{alias}"),
        );
        return None;
    }
    let mut erased = result.clone();
    EraseImplTrait.visit_type_mut(&mut erased);
    Some((shape, boxed, erased, error_span(result)))
}

/// `X` in `impl Future<Output = X> [+ …]`.
fn future_output(ty: &Type) -> Option<&Type> {
    let it = match ty {
        Type::ImplTrait(it) => it,
        // A `macro_rules!` fragment (`-> $ret` with `$ret:ty`), or parentheses.
        Type::Group(g) => return future_output(&g.elem),
        Type::Paren(p) => return future_output(&p.elem),
        _ => return None,
    };
    future_bound_output(it.bounds.iter())
}

/// `X` in `Pin<Box<dyn Future<Output = X> [+ …]>>`: what `#[async_trait]` makes an
/// `async fn` return (any paths ending in `Pin` and `Box`).
fn boxed_future_output(ty: &Type) -> Option<&Type> {
    let boxed = only_type_arg(ty, "Pin")?;
    match only_type_arg(boxed, "Box")? {
        Type::TraitObject(obj) => future_bound_output(obj.bounds.iter()),
        Type::Group(g) => match &*g.elem {
            Type::TraitObject(obj) => future_bound_output(obj.bounds.iter()),
            _ => None,
        },
        _ => None,
    }
}

/// `T` in `…::Name<T>`.
fn only_type_arg<'a>(ty: &'a Type, name: &str) -> Option<&'a Type> {
    let p = match ty {
        Type::Path(p) if p.qself.is_none() => p,
        Type::Group(g) => return only_type_arg(&g.elem, name),
        Type::Paren(p) => return only_type_arg(&p.elem, name),
        _ => return None,
    };
    let last = p.path.segments.last()?;
    if last.ident != name {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    match args.args.first()? {
        GenericArgument::Type(t) if args.args.len() == 1 => Some(t),
        _ => None,
    }
}

/// `X` in a `Future<Output = X>` among `bounds`.
fn future_bound_output<'a>(
    mut bounds: impl Iterator<Item = &'a TypeParamBound>,
) -> Option<&'a Type> {
    bounds.find_map(|b| {
        let TypeParamBound::Trait(t) = b else {
            return None;
        };
        let last = t.path.segments.last()?;
        if last.ident != "Future" {
            return None;
        }
        let PathArguments::AngleBracketed(args) = &last.arguments else {
            return None;
        };
        args.args.iter().find_map(|a| match a {
            GenericArgument::AssocType(assoc) if assoc.ident == "Output" => Some(&assoc.ty),
            _ => None,
        })
    })
}

fn last_segment(ty: &Type) -> Option<String> {
    match ty {
        Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
}

/// Any path whose last segment is `Result`: `Result<T, E>`, `io::Result<T>`,
/// `anyhow::Result<T>`, `Self::Result`.
fn is_result(ty: &Type) -> bool {
    match ty {
        Type::Group(g) => is_result(&g.elem),
        Type::Paren(p) => is_result(&p.elem),
        Type::Path(p) => p.path.segments.last().is_some_and(|s| s.ident == "Result"),
        _ => false,
    }
}

/// The span of `E` in `…Result<T, E>`; for an alias that does not spell `E` out
/// (`app::Result<T>`), of its `Result`: a span can cover one token only (on stable), and
/// `Result` is the one that brings `E`.
fn error_span(ty: &Type) -> Span {
    let last_type_arg = match ty {
        Type::Path(p) => p.path.segments.last().and_then(|s| match &s.arguments {
            PathArguments::AngleBracketed(a) => {
                let types: Vec<&Type> = a
                    .args
                    .iter()
                    .filter_map(|g| match g {
                        GenericArgument::Type(t) => Some(t),
                        _ => None,
                    })
                    .collect();
                (types.len() >= 2).then(|| types[types.len() - 1].span())
            }
            _ => None,
        }),
        _ => None,
    };
    let alias = || match ty {
        Type::Path(p) => p.path.segments.last().map(|s| s.ident.span()),
        _ => None,
    };
    last_type_arg.or_else(alias).unwrap_or_else(|| ty.span())
}

/// `impl Trait` cannot be named in a `let` annotation; `_` lets the compiler fill it in.
struct EraseImplTrait;

impl VisitMut for EraseImplTrait {
    fn visit_type_mut(&mut self, ty: &mut Type) {
        if let Type::ImplTrait(it) = ty {
            *ty = Type::Infer(syn::TypeInfer {
                underscore_token: syn::Token![_](it.impl_token.span),
            });
        } else {
            syn::visit_mut::visit_type_mut(self, ty);
        }
    }
}
