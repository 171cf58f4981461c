//! Typing one attribute value: each function checks the literal (or path) written for one
//! kind of argument and reports, on the value's span, what was expected instead.

use crate::args::{sym, Secs, Spanned};
use crate::diag::Ctxt;
use crate::ranges::{attempts_problem, secs_problem, shown_secs};
use proc_macro2::Span;
use syn::{Expr, ExprLit, ExprUnary, Lit, LitStr, UnOp};

pub(crate) fn flag(ctxt: &Ctxt, name: &str, key: Span, value: Option<Expr>) -> Option<Spanned<()>> {
    if let Some(v) = value {
        ctxt.error(
            span_of(&v),
            format!("`{name}` is a flag and takes no value: write `{name}` alone"),
        );
        return None;
    }
    Some(Spanned {
        value: (),
        key,
        span: key,
    })
}

fn need_value(
    ctxt: &Ctxt,
    name: &str,
    key: Span,
    value: Option<Expr>,
    example: &str,
) -> Option<Expr> {
    if value.is_none() {
        ctxt.error(
            key,
            format!("`{name}` needs a value, e.g. `{name} = {example}`"),
        );
    }
    value
}

pub(crate) fn string(
    ctxt: &Ctxt,
    name: &str,
    key: Span,
    value: Option<Expr>,
) -> Option<Spanned<LitStr>> {
    let example = match name {
        sym::SERVICE => "\"plan_service\"",
        sym::BACKOFF => "\"exponential\"",
        sym::CRATE => "\"::resilience\"",
        _ => "\"get_plan\"",
    };
    let expr = need_value(ctxt, name, key, value, example)?;
    match peel(&expr) {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Some(Spanned {
            span: s.span(),
            value: s.clone(),
            key,
        }),
        other => {
            ctxt.error(
                span_of(other),
                format!(
                    "`{name}` must be a string literal, e.g. `{name} = {example}`: attribute arguments are read at compile time, so constants and expressions cannot be used"
                ),
            );
            None
        }
    }
}

pub(crate) fn secs(
    ctxt: &Ctxt,
    name: &str,
    key: Span,
    value: Option<Expr>,
) -> Option<Spanned<Secs>> {
    let expr = need_value(ctxt, name, key, value, "30")?;
    if let Some(unit) = unit_suffix(&expr, NUMBER_SUFFIXES.len()) {
        // The value in seconds is offered only if the argument takes it (as `misfit` does).
        let fix = match in_seconds(&unit.digits, &unit.suffix) {
            Some(s) => match secs_problem(name, s) {
                None => format!("write `{name} = {}`", shown_secs(s)),
                Some(why) => format!("`{}` is {} seconds, and {why}", unit.written, shown_secs(s)),
            },
            None => format!("e.g. `{name} = 0.5` for half a second"),
        };
        ctxt.error(
            span_of(&expr),
            format!("`{name}` is a plain number of seconds, with no unit suffix: {fix}"),
        );
        return None;
    }
    if misfit(ctxt, name, &expr) {
        return None;
    }
    let parsed = match peel(&expr) {
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(_),
            expr: inner,
            ..
        }) => number(peel(inner)).map(|v| -v),
        other => number(other),
    };
    match parsed {
        Some(v) => Some(Spanned {
            value: v,
            key,
            span: span_of(&expr),
        }),
        None => {
            ctxt.error(
                span_of(&expr),
                format!(
                    "`{name}` takes seconds as a number literal, e.g. `{name} = 30` or `{name} = 2.5`"
                ),
            );
            None
        }
    }
}

fn number(expr: &Expr) -> Option<f64> {
    match expr {
        // As a float: a negative or huge integer is then reported as out of range, not as
        // "not a number".
        Expr::Lit(ExprLit {
            lit: Lit::Int(i), ..
        }) => i.base10_digits().parse::<f64>().ok(),
        Expr::Lit(ExprLit {
            lit: Lit::Float(f), ..
        }) => f.base10_parse::<f64>().ok(),
        _ => None,
    }
}

pub(crate) fn count(
    ctxt: &Ctxt,
    name: &str,
    key: Span,
    value: Option<Expr>,
) -> Option<Spanned<u64>> {
    let expr = need_value(ctxt, name, key, value, "3")?;
    if let Some(unit) = unit_suffix(&expr, INT_SUFFIXES) {
        let suffix = unit.suffix;
        ctxt.error(
            span_of(&expr),
            format!(
                "`{name}` takes a whole number: remove the suffix `{suffix}`, e.g. `{name} = 3`"
            ),
        );
        return None;
    }
    if misfit(ctxt, name, &expr) {
        return None;
    }
    match peel(&expr) {
        Expr::Lit(ExprLit {
            lit: Lit::Int(i), ..
        }) => match i.base10_parse::<u64>() {
            Ok(v) => Some(Spanned {
                value: v,
                key,
                span: i.span(),
            }),
            Err(_) => {
                let digits = i.base10_digits();
                let rule = if digits.starts_with('-') {
                    "must be a whole number >= 1"
                } else {
                    "must fit in a u32"
                };
                ctxt.error(i.span(), format!("`{name}` {rule}, got {digits}"));
                None
            }
        },
        other => {
            ctxt.error(
                span_of(other),
                format!("`{name}` takes a whole number literal, e.g. `{name} = 3`"),
            );
            None
        }
    }
}

pub(crate) fn boolean(
    ctxt: &Ctxt,
    name: &str,
    key: Span,
    value: Option<Expr>,
) -> Option<Spanned<bool>> {
    let expr = need_value(ctxt, name, key, value, "false")?;
    match peel(&expr) {
        Expr::Lit(ExprLit {
            lit: Lit::Bool(b), ..
        }) => Some(Spanned {
            value: b.value,
            key,
            span: b.span,
        }),
        other => {
            ctxt.error(span_of(other), format!("`{name}` takes `true` or `false`"));
            None
        }
    }
}

/// R12 through the attribute: the classifier as a path (a unit struct such as `ByHint`, a
/// `const`, or a `fn(&E) -> ErrorClass`), checked by the compiler where the fn is. A closure
/// is refused: its argument type could not be inferred from the driver's generic bound.
pub(crate) fn classifier(
    ctxt: &Ctxt,
    name: &str,
    key: Span,
    value: Option<Expr>,
) -> Option<Spanned<Expr>> {
    let expr = need_value(ctxt, name, key, value, "resilience::retry::ByHint")?;
    match peel(&expr) {
        path @ Expr::Path(p) if p.attrs.is_empty() => Some(Spanned {
            value: path.clone(),
            key,
            span: span_of(&expr),
        }),
        other => {
            ctxt.error(
                span_of(other),
                format!("`{name}` takes the path of a classifier: `{name} = resilience::retry::ByHint` to ask the error type's `RetryHint`, or the name of a `fn(&E) -> resilience::retry::ErrorClass` (write a closure as a named fn)"),
            );
            None
        }
    }
}

/// Type suffixes a number may carry: the integer ones, then `f32` and `f64`.
const NUMBER_SUFFIXES: [&str; 14] = [
    "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize", "f32",
    "f64",
];
const INT_SUFFIXES: usize = 12;

/// A number literal written with a unit (or any suffix that is not a type).
struct Unit {
    /// Its value in base 10, with its `-` if negated (`-30`).
    digits: String,
    suffix: String,
    /// As written (`-30ms`).
    written: String,
}

/// The number literal `expr`, negated or not, unless its suffix is none or one of the first
/// `allowed` type suffixes. Rust lexes `30ms` as the number 30 with the suffix `ms`, and
/// attribute tokens are never type-checked: without this, `total_timeout = 30ms` would
/// silently mean 30 seconds (and `-30ms` be told only that it is below zero).
fn unit_suffix(expr: &Expr, allowed: usize) -> Option<Unit> {
    let (sign, lit) = match peel(expr) {
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(_),
            expr: inner,
            ..
        }) => ("-", peel(inner)),
        other => ("", other),
    };
    let (digits, suffix, written) = match lit {
        Expr::Lit(ExprLit {
            lit: Lit::Int(i), ..
        }) => (i.base10_digits(), i.suffix(), i.to_string()),
        Expr::Lit(ExprLit {
            lit: Lit::Float(f), ..
        }) => (f.base10_digits(), f.suffix(), f.to_string()),
        _ => return None,
    };
    (!suffix.is_empty() && !NUMBER_SUFFIXES[..allowed].contains(&suffix)).then(|| Unit {
        digits: format!("{sign}{digits}"),
        suffix: suffix.to_owned(),
        written: format!("{sign}{written}"),
    })
}

/// Reports a number whose type suffix cannot hold it (`300u8`, `-1u32`, `1e40f32`), or a float
/// with an integer suffix (`1e3u32`): rustc would refuse that literal in code, so it must not
/// be read here as if the suffix were not there. The literal is named as written; the bare
/// number is offered only when the argument accepts it, else the argument's own rule is said.
/// `true` when reported.
fn misfit(ctxt: &Ctxt, name: &str, expr: &Expr) -> bool {
    let (negative, lit) = match peel(expr) {
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(_),
            expr: inner,
            ..
        }) => (true, peel(inner)),
        other => (false, other),
    };
    let (digits, suffix, float, written) = match lit {
        Expr::Lit(ExprLit {
            lit: Lit::Int(i), ..
        }) => (i.base10_digits(), i.suffix(), false, i.to_string()),
        Expr::Lit(ExprLit {
            lit: Lit::Float(f), ..
        }) => (f.base10_digits(), f.suffix(), true, f.to_string()),
        _ => return false,
    };
    let (value, written) = if negative {
        (format!("-{digits}"), format!("-{written}"))
    } else {
        (digits.to_owned(), written)
    };
    let integer_suffix = NUMBER_SUFFIXES[..INT_SUFFIXES].contains(&suffix);
    let fits = match suffix {
        _ if float && integer_suffix => false,
        "u8" => value.parse::<u8>().is_ok(),
        "u16" => value.parse::<u16>().is_ok(),
        "u32" => value.parse::<u32>().is_ok(),
        "u64" | "usize" => value.parse::<u64>().is_ok(),
        "u128" => value.parse::<u128>().is_ok(),
        "i8" => value.parse::<i8>().is_ok(),
        "i16" => value.parse::<i16>().is_ok(),
        "i32" => value.parse::<i32>().is_ok(),
        "i64" | "isize" => value.parse::<i64>().is_ok(),
        "i128" => value.parse::<i128>().is_ok(),
        "f32" => value.parse::<f32>().is_ok_and(f32::is_finite),
        "f64" => value.parse::<f64>().is_ok_and(f64::is_finite),
        // No suffix, or a unit (reported by `unit_suffix`).
        _ => return false,
    };
    if fits {
        return false;
    }
    let what = if float && integer_suffix {
        format!(
            "`{written}` is a float literal with the integer suffix `{suffix}`, which Rust refuses"
        )
    } else {
        format!("`{written}` does not fit in a `{suffix}`")
    };
    let message = match bare_problem(name, &value, float) {
        None => {
            let bare = written.strip_suffix(suffix).unwrap_or(&value);
            let remove = if float && integer_suffix {
                "it"
            } else {
                "a type suffix"
            };
            format!("{what}: write the number without {remove}, e.g. `{name} = {bare}`")
        }
        Some(why) => format!("{what}, and {why}"),
    };
    ctxt.error(span_of(lit), message);
    true
}

/// What the argument `name` would say of the number `value` written without its suffix, if it
/// refuses it; `float`: whether it is written as a float.
fn bare_problem(name: &str, value: &str, float: bool) -> Option<String> {
    if name == sym::MAX_ATTEMPTS {
        if float {
            return Some(format!(
                "`{name}` takes a whole number literal, e.g. `{name} = 3`"
            ));
        }
        return match value.parse::<u64>() {
            Ok(n) => attempts_problem(n),
            Err(_) if value.starts_with('-') => {
                Some(format!("`{name}` must be a whole number >= 1, got {value}"))
            }
            Err(_) => Some(format!("`{name}` must fit in a u32, got {value}")),
        };
    }
    match value.parse::<f64>() {
        Ok(v) => secs_problem(name, v),
        Err(_) => Some(format!(
            "`{name}` takes seconds as a number literal, e.g. `{name} = 30`"
        )),
    }
}

/// `digits` in seconds, when `unit` is a time unit someone may have meant.
fn in_seconds(digits: &str, unit: &str) -> Option<f64> {
    let v = digits.parse::<f64>().ok()?;
    // Divide for the small units: `30.0 / 1e3` prints as 0.03, `30.0 * 1e-3` does not.
    Some(match unit {
        "ns" => v / 1e9,
        "us" | "µs" => v / 1e6,
        "ms" => v / 1e3,
        "s" | "sec" | "secs" => v,
        "m" | "min" | "mins" => v * 60.0,
        "h" => v * 3600.0,
        _ => return None,
    })
}

/// Looks through invisible groups (values passed in by `macro_rules!`) and parentheses.
fn peel(expr: &Expr) -> &Expr {
    match expr {
        Expr::Group(g) => peel(&g.expr),
        Expr::Paren(p) => peel(&p.expr),
        other => other,
    }
}

fn span_of(expr: &Expr) -> Span {
    syn::spanned::Spanned::span(expr)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every error typing `value` as the argument `name`.
    fn errors(name: &str, value: &str) -> Vec<String> {
        let ctxt = Ctxt::new();
        let expr: Expr = syn::parse_str(value).expect(value);
        let key = Span::call_site();
        if name == sym::MAX_ATTEMPTS {
            let _ = count(&ctxt, name, key, Some(expr));
        } else {
            let _ = secs(&ctxt, name, key, Some(expr));
        }
        match ctxt.check() {
            Ok(()) => Vec::new(),
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
        }
    }

    fn only_error(name: &str, value: &str) -> String {
        let e = errors(name, value);
        assert_eq!(e.len(), 1, "{name} = {value}: {e:?}");
        e[0].clone()
    }

    /// M3: a number its suffix cannot hold is named as written, and the bare number is
    /// offered only when the argument would accept it.
    #[test]
    fn m3_a_misfit_suffix_offers_only_a_bare_number_that_is_accepted() {
        for (name, value, message) in [
            (
                sym::MAX_ATTEMPTS,
                "300u8",
                "`300u8` does not fit in a `u8`: write the number without a type suffix, e.g. `max_attempts = 300`",
            ),
            (
                sym::MAX_ATTEMPTS,
                "0x100u8",
                "`0x100u8` does not fit in a `u8`: write the number without a type suffix, e.g. `max_attempts = 0x100`",
            ),
            (
                sym::MAX_DELAY,
                "1e40f32",
                "`1e40f32` does not fit in a `f32`, and `max_delay` must be a number of seconds a `Duration` can hold (below about 1.8e19), got 1e40",
            ),
            (
                sym::TOTAL_TIMEOUT,
                "1e309f64",
                "`1e309f64` does not fit in a `f64`, and `total_timeout` must be a finite number of seconds > 0, got inf",
            ),
            (
                sym::MAX_ATTEMPTS,
                "99999999999999999999u64",
                "`99999999999999999999u64` does not fit in a `u64`, and `max_attempts` must fit in a u32, got 99999999999999999999",
            ),
            (
                sym::BASE_DELAY,
                "-1u32",
                "`-1u32` does not fit in a `u32`, and `base_delay` must be a finite number of seconds >= 0, got -1",
            ),
            (
                sym::MAX_ATTEMPTS,
                "-1u32",
                "`-1u32` does not fit in a `u32`, and `max_attempts` must be a whole number >= 1, got -1",
            ),
            (
                sym::MAX_ATTEMPTS,
                "-0x1u32",
                "`-0x1u32` does not fit in a `u32`, and `max_attempts` must be a whole number >= 1, got -1",
            ),
        ] {
            assert_eq!(only_error(name, value), message, "{name} = {value}");
        }
        // Where the bare number is accepted, it is offered as written.
        let m = only_error(sym::TOTAL_TIMEOUT, "1_000_000_000_000u32");
        assert!(
            m.ends_with("e.g. `total_timeout = 1_000_000_000_000`"),
            "{m}"
        );
    }

    /// The number a message offers as the fix (`write `name = N``), if any.
    fn offered<'m>(name: &str, message: &'m str) -> Option<&'m str> {
        let start = message.find(&format!("write `{name} = "))? + name.len() + 10;
        let len = message[start..].find('`')?;
        Some(&message[start..start + len])
    }

    /// M3: a unit suffix (`30ms`) is told the value in seconds, but offered as the fix only
    /// when the argument accepts it: not `0` for a timeout that must be > 0, not a value
    /// that rounds to a zero `Duration`, not `inf` or a number past a `Duration`. A negative
    /// value is seen through its `-`, so its unit is not silently dropped.
    #[test]
    fn m3_a_unit_suffix_offers_only_seconds_that_are_accepted() {
        for (name, value) in [
            (sym::TOTAL_TIMEOUT, "30ms"),
            (sym::TOTAL_TIMEOUT, "0ms"),
            (sym::TOTAL_TIMEOUT, "1e-10s"),
            (sym::TOTAL_TIMEOUT, "5us"),
            (sym::MAX_DELAY, "1e306h"),
            (sym::MAX_DELAY, "2min"),
            (sym::BASE_DELAY, "3e19s"),
            (sym::BASE_DELAY, "-30ms"),
            (sym::BASE_DELAY, "1e-12s"),
        ] {
            let m = only_error(name, value);
            assert!(m.contains("with no unit suffix"), "{name} = {value}: {m}");
            if let Some(fix) = offered(name, &m) {
                // Typed, then validated, as the attribute does.
                assert_eq!(
                    errors(name, fix),
                    Vec::<String>::new(),
                    "{name} = {value}: {m}"
                );
                let secs: f64 = fix.parse().expect(fix);
                assert_eq!(secs_problem(name, secs), None, "{name} = {value}: {m}");
            }
        }
        assert_eq!(
            only_error(sym::TOTAL_TIMEOUT, "30ms"),
            "`total_timeout` is a plain number of seconds, with no unit suffix: write `total_timeout = 0.03`"
        );
        assert_eq!(
            only_error(sym::TOTAL_TIMEOUT, "0ms"),
            "`total_timeout` is a plain number of seconds, with no unit suffix: `0ms` is 0 seconds, and `total_timeout` must be a finite number of seconds > 0, got 0"
        );
        assert_eq!(
            only_error(sym::BASE_DELAY, "-30ms"),
            "`base_delay` is a plain number of seconds, with no unit suffix: `-30ms` is -0.03 seconds, and `base_delay` must be a finite number of seconds >= 0, got -0.03"
        );
        assert_eq!(
            only_error(sym::MAX_ATTEMPTS, "-3x"),
            "`max_attempts` takes a whole number: remove the suffix `x`, e.g. `max_attempts = 3`"
        );
        // A delay of 1e-12 s is valid (it may be zero), and offered in a form that reads back.
        assert!(offered(sym::BASE_DELAY, &only_error(sym::BASE_DELAY, "1e-12s")).is_some());
    }

    /// M3: a float literal with an integer suffix (`1e3u32`) is not a number too large for
    /// its suffix: Rust refuses that suffix on a float at all.
    #[test]
    fn m3_a_float_with_an_integer_suffix_is_its_own_error() {
        assert_eq!(
            only_error(sym::BASE_DELAY, "1e3u32"),
            "`1e3u32` is a float literal with the integer suffix `u32`, which Rust refuses: write the number without it, e.g. `base_delay = 1e3`"
        );
        assert_eq!(
            only_error(sym::MAX_ATTEMPTS, "2.0u8"),
            "`2.0u8` is a float literal with the integer suffix `u8`, which Rust refuses, and `max_attempts` takes a whole number literal, e.g. `max_attempts = 3`"
        );
    }
}
