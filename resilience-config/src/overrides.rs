//! The JSON per-service overrides (C2, C4, C6–C10).
//!
//! ```json
//! {"plan_service": {"retry": {"max_attempts": 5}, "circuit_breaker": {"enabled": false}}}
//! ```
//!
//! - over [`MAX_OVERRIDES_LEN`] characters: rejected whole, one warning (C6);
//! - a `service_name` key is ignored (C7);
//! - any invalid value skips that service's whole override; the others still apply (C8),
//!   including a number JSON cannot hold (`1e400`) and a repeated key (a service, a section
//!   or a setting given twice: which one was meant is unknown), each reported at its path; a
//!   repeated service or section is still read, so the problems inside it are named too;
//! - a repeated key that is ignored anyway (`service_name`, or an unknown key) puts no value
//!   in doubt: it is a warning, said once, and the rest of the override applies;
//! - a top-level section or setting whose value holds no section has lost its service: an
//!   error with a fix that is itself valid (`missing.rs`, C2); one whose value holds a
//!   section is a service so named (C11);
//! - a service whose override is not an object is ignored (C9);
//! - unknown keys warn, naming the key and service, with the closest valid key (C10).

use crate::diagnostics::{shown, Diagnostic, DiagnosticKind, Diagnostics};
use crate::members::Members;
use crate::missing::missing_service;
use crate::parse::{self, Secs};
use crate::settings::ServiceSettings;
use crate::source::Source;
use crate::suggest::{closest, closest_within};
use crate::table::{built_in_category, BUILT_IN_SERVICES};
use resilience_core::backoff::BackoffStrategy;
use serde_json::Value;
use std::collections::BTreeMap;

/// The longest override string accepted, in characters (C6).
pub const MAX_OVERRIDES_LEN: usize = 10_000;

/// Keys of an override's `retry` object.
pub const RETRY_KEYS: [&str; 7] = [
    "max_attempts",
    "base_delay",
    "max_delay",
    "jitter",
    "backoff_strategy",
    "total_timeout",
    "retry_on_idempotent_only",
];

/// Keys of an override's `circuit_breaker` object.
pub const BREAKER_KEYS: [&str; 5] = [
    "failure_threshold",
    "recovery_timeout",
    "cooldown_seconds",
    "half_open_max_successes",
    "enabled",
];

pub(crate) const SECTIONS: [&str; 2] = ["retry", "circuit_breaker"];
/// Ignored wherever it appears in an override (C7).
const SERVICE_NAME: &str = "service_name";

/// One service's validated override; `None` fields leave lower layers in place.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ServiceOverride {
    max_attempts: Option<u32>,
    base_delay: Option<f64>,
    max_delay: Option<f64>,
    jitter: Option<bool>,
    backoff_strategy: Option<BackoffStrategy>,
    total_timeout: Option<f64>,
    retry_on_idempotent_only: Option<bool>,
    failure_threshold: Option<u32>,
    recovery_timeout: Option<f64>,
    cooldown_seconds: Option<f64>,
    half_open_max_successes: Option<u32>,
    enabled: Option<bool>,
}

impl ServiceOverride {
    /// Lays this override over `s`, the top layer (C13).
    pub(crate) fn apply(&self, s: &mut ServiceSettings) {
        let j = Source::Json;
        s.max_attempts.overlay(self.max_attempts, j);
        s.base_delay.overlay(self.base_delay, j);
        s.max_delay.overlay(self.max_delay, j);
        s.jitter.overlay(self.jitter, j);
        s.backoff_strategy.overlay(self.backoff_strategy, j);
        s.total_timeout.overlay(self.total_timeout, j);
        s.retry_on_idempotent_only
            .overlay(self.retry_on_idempotent_only, j);
        s.failure_threshold.overlay(self.failure_threshold, j);
        s.recovery_timeout.overlay(self.recovery_timeout, j);
        s.cooldown_seconds.overlay(self.cooldown_seconds, j);
        s.half_open_max_successes
            .overlay(self.half_open_max_successes, j);
        s.enabled.overlay(self.enabled, j);
    }

    /// Parses and sets one field; `Err` is the message for an invalid value.
    pub(crate) fn set(&mut self, key: &str, v: &Value) -> Result<(), String> {
        let nn = Secs::NonNegative;
        match key {
            "max_attempts" => self.max_attempts = Some(parse::count_json(v, 1)?),
            "base_delay" => self.base_delay = Some(parse::secs_json(v, nn)?),
            "max_delay" => self.max_delay = Some(parse::secs_json(v, nn)?),
            "jitter" => self.jitter = Some(parse::bool_json(v)?),
            "backoff_strategy" => self.backoff_strategy = Some(parse::strategy_json(v)?),
            "total_timeout" => self.total_timeout = Some(parse::secs_json(v, Secs::Positive)?),
            "retry_on_idempotent_only" => {
                self.retry_on_idempotent_only = Some(parse::bool_json(v)?)
            }
            "failure_threshold" => self.failure_threshold = Some(parse::count_json(v, 1)?),
            "recovery_timeout" => self.recovery_timeout = Some(parse::secs_json(v, nn)?),
            "cooldown_seconds" => self.cooldown_seconds = Some(parse::secs_json(v, nn)?),
            "half_open_max_successes" => {
                self.half_open_max_successes = Some(parse::count_json(v, 1)?)
            }
            "enabled" => self.enabled = Some(parse::bool_json(v)?),
            // Callers only pass keys from RETRY_KEYS / BREAKER_KEYS.
            _ => {}
        }
        Ok(())
    }
}

/// Parses the override string. Every problem is recorded; what is valid is returned.
pub(crate) fn parse(
    raw: &str,
    env_var: &'static str,
    diags: &mut Diagnostics,
) -> BTreeMap<String, ServiceOverride> {
    let mut out = BTreeMap::new();
    let whole = |kind, message| Diagnostic::env(kind, env_var, message);
    let len = raw.chars().count();
    if len > MAX_OVERRIDES_LEN {
        diags.push(whole(
            DiagnosticKind::TooLong,
            format!(
                "is {len} characters, over the limit of {MAX_OVERRIDES_LEN}; all overrides ignored"
            ),
        ));
        return out;
    }
    let services = match Members::parse(raw) {
        Ok(services) => services,
        Err(e) => {
            let message = match serde_json::from_str::<Value>(raw) {
                Ok(other) if !other.is_object() => format!(
                    "must be a JSON object of service names, got {}; all overrides ignored",
                    json_type(&other)
                ),
                _ => {
                    let why = resilience_core::sanitize(&e.to_string()).into_owned();
                    format!("is not valid JSON ({why}); all overrides ignored")
                }
            };
            diags.push(whole(DiagnosticKind::InvalidJson, message));
            return out;
        }
    };
    let mut ctx = Ctx { env_var, diags };
    for (i, (service, value)) in services.0.iter().enumerate() {
        let times = services.count(service);
        if times > 1 {
            // Which of them was meant is unknown: none is applied (C8), and it is said once.
            if services.is_first(i) {
                ctx.push(
                    DiagnosticKind::InvalidValue,
                    segment(service),
                    format!(
                        "`{}` appears {times} times; all its overrides are skipped",
                        segment(service)
                    ),
                );
            }
            // A section or setting given twice has lost its service each time (C2): said
            // once, at the first such member.
            let missing = missing_service(service, value.get());
            if missing.is_some() {
                let first = services
                    .0
                    .iter()
                    .position(|(k, v)| k == service && missing_service(k, v.get()).is_some());
                if let (Some(message), true) = (missing, first == Some(i)) {
                    ctx.push(DiagnosticKind::MissingService, segment(service), message);
                }
                continue;
            }
            // Still read, so `check` names every problem in it at once.
            ctx.body(service, value.get(), false);
            continue;
        }
        if let Some(ov) = ctx.service(service, value.get()) {
            out.insert(service.clone(), ov);
        }
    }
    out
}

/// What a raw JSON value is, for a message: its type and (sanitized, shortened) text.
fn raw_type(raw: &str) -> String {
    match serde_json::from_str::<Value>(raw) {
        Ok(v) => json_type(&v),
        Err(_) => shown(raw),
    }
}

struct Ctx<'a> {
    env_var: &'static str,
    diags: &'a mut Diagnostics,
}

impl Ctx<'_> {
    fn push(&mut self, kind: DiagnosticKind, path: String, message: String) {
        self.diags
            .push(Diagnostic::json(kind, self.env_var, path, message));
    }

    fn service(&mut self, service: &str, value: &str) -> Option<ServiceOverride> {
        let svc = segment(service);
        if service.trim().is_empty() {
            self.push(
                DiagnosticKind::InvalidValue,
                svc,
                "an empty service name; override ignored".into(),
            );
            return None;
        }
        if let Some(message) = missing_service(service, value) {
            self.push(DiagnosticKind::MissingService, svc, message);
            return None;
        }
        self.body(service, value, true)
    }

    /// Reads one service's override; `None` if any of it is invalid (C8). `suspect`: whether
    /// to warn about a name spelt like a built-in one.
    fn body(&mut self, service: &str, value: &str, suspect: bool) -> Option<ServiceOverride> {
        let svc = segment(service);
        let Ok(fields) = Members::parse(value) else {
            // Under a name like `api_key` the value is the secret, though alone it reads as
            // none: only its kind is said.
            let got = if resilience_core::sanitize::is_secret_key(service) {
                format!("{} (not shown)", raw_kind(value))
            } else {
                raw_type(value)
            };
            self.push(
                DiagnosticKind::NotAnObject,
                svc,
                format!("override must be a JSON object, got {got}; ignored"),
            );
            return None;
        };
        if suspect {
            self.suspect_name(service, &svc);
        }
        let mut ov = ServiceOverride::default();
        let mut valid = true;
        for (i, (key, v)) in fields.0.iter().enumerate() {
            let path = format!("{svc}.{}", segment(key));
            let times = fields.count(key);
            // A key that is ignored anyway is read once, however often it is given.
            if !SECTIONS.contains(&key.as_str()) {
                if fields.is_first(i) {
                    self.member(&mut ov, &svc, &path, key, v.get(), times);
                }
                continue;
            }
            if !self.once(&fields, i, &path, &svc) {
                valid = false;
                // A repeated section is still read, so the problems in it are named too; it
                // is not applied.
                self.member(
                    &mut ServiceOverride::default(),
                    &svc,
                    &path,
                    key,
                    v.get(),
                    times,
                );
                continue;
            }
            valid &= self.member(&mut ov, &svc, &path, key, v.get(), times);
        }
        valid.then_some(ov)
    }

    /// One member of a service's override; `false` when it holds an invalid value. `times`:
    /// how often its key is given (a repeated ignored key is said once, as a warning).
    fn member(
        &mut self,
        ov: &mut ServiceOverride,
        svc: &str,
        path: &str,
        key: &str,
        v: &str,
        times: usize,
    ) -> bool {
        match key {
            SERVICE_NAME => self.ignored(path, times),
            "retry" => return self.section(ov, svc, path, v, &RETRY_KEYS),
            "circuit_breaker" => return self.section(ov, svc, path, v, &BREAKER_KEYS),
            _ => {
                let hint = if RETRY_KEYS.contains(&key) {
                    format!("; put it inside `retry`: {svc}.retry.{key}")
                } else if BREAKER_KEYS.contains(&key) {
                    format!("; put it inside `circuit_breaker`: {svc}.circuit_breaker.{key}")
                } else {
                    did_you_mean(key, &SECTIONS)
                };
                self.unknown_key(path.to_owned(), key, svc, &hint, times);
            }
        }
        true
    }

    /// Parses `retry` or `circuit_breaker`; `false` when any value is invalid (C8).
    fn section(
        &mut self,
        ov: &mut ServiceOverride,
        service: &str,
        path: &str,
        value: &str,
        keys: &[&str],
    ) -> bool {
        let Ok(fields) = Members::parse(value) else {
            let got = raw_type(value);
            self.push(
                DiagnosticKind::InvalidValue,
                path.to_owned(),
                format!(
                    "must be a JSON object, got {got}; the override for `{service}` is skipped"
                ),
            );
            return false;
        };
        let mut valid = true;
        for (i, (key, v)) in fields.0.iter().enumerate() {
            let field_path = format!("{path}.{}", segment(key));
            let times = fields.count(key);
            let setting = keys.contains(&key.as_str());
            if !setting && !fields.is_first(i) {
                // Ignored anyway: said once, at its first appearance.
            } else if setting && !self.once(&fields, i, &field_path, service) {
                valid = false;
            } else if key == SERVICE_NAME {
                self.ignored(&field_path, times);
            } else if setting {
                let parsed = serde_json::from_str::<Value>(v.get()).map_err(|e| {
                    let why = resilience_core::sanitize(&e.to_string()).into_owned();
                    format!("cannot be read ({why}), got {}", shown(v.get()))
                });
                if let Err(why) = parsed.and_then(|v| ov.set(key, &v)) {
                    valid = false;
                    self.push(
                        DiagnosticKind::InvalidValue,
                        field_path,
                        format!("{why}; the override for `{service}` is skipped"),
                    );
                }
            } else {
                let hint = did_you_mean(key, keys);
                self.unknown_key(field_path, key, service, &hint, times);
            }
        }
        valid
    }

    /// Whether the member at `index` has a key of its own; a repeated section or setting (C10)
    /// is reported once, at its first appearance, and makes the service's override invalid
    /// (C8): which of its values was meant is unknown.
    fn once(&mut self, members: &Members, index: usize, path: &str, service: &str) -> bool {
        let times = members.count(&members.0[index].0);
        if times == 1 {
            return true;
        }
        if members.is_first(index) {
            self.push(
                DiagnosticKind::InvalidValue,
                path.to_owned(),
                format!("appears {times} times; the override for `{service}` is skipped"),
            );
        }
        false
    }

    /// `key` as written: the path's last segment would cut a key holding a `.` short.
    fn unknown_key(&mut self, path: String, key: &str, service: &str, hint: &str, times: usize) {
        let key = segment(key);
        let repeated = if times > 1 {
            format!(" (it appears {times} times)")
        } else {
            String::new()
        };
        self.push(
            DiagnosticKind::UnknownKey,
            path,
            format!("unknown key `{key}` in the override for `{service}`, ignored{repeated}{hint}"),
        );
    }

    /// A `service_name` key, ignored (C7): silently once; a warning when repeated (it hints
    /// at two objects merged by hand), which skips nothing, since no value is in doubt.
    fn ignored(&mut self, path: &str, times: usize) {
        if times == 1 {
            // Logged with the diagnostics, not here: a load may run inside a one-time
            // initialiser that a subscriber's shipping call would re-enter (C8).
            self.diags.note_ignored(path.to_owned());
            return;
        }
        self.push(
            DiagnosticKind::RepeatedIgnoredKey,
            path.to_owned(),
            format!(
                "`{SERVICE_NAME}` appears {times} times; ignored, as it always is in an \
                 override (this alone skips nothing)"
            ),
        );
    }

    /// Warns when an unknown service is spelt almost like a built-in one.
    fn suspect_name(&mut self, service: &str, svc: &str) {
        if built_in_category(service).is_some() {
            return;
        }
        let names: Vec<&str> = BUILT_IN_SERVICES.iter().map(|(n, _)| *n).collect();
        // A typo is an edit or two; a third of the name (the key rule) would flag ordinary
        // custom services (`user_service` is 4 edits from `plan_service`).
        if let Some(near) = closest_within(service, &names, |_| 2) {
            self.push(
                DiagnosticKind::SuspectServiceName,
                svc.to_owned(),
                format!("`{svc}` is not a built-in service; did you mean `{near}`? (applied to a new service `{svc}`)"),
            );
        }
    }
}

fn did_you_mean(key: &str, options: &[&str]) -> String {
    match closest(key, options) {
        Some(k) => format!("; did you mean `{k}`?"),
        None => format!("; valid keys: {}", options.join(", ")),
    }
}

/// A user-supplied key as it may appear in a path or message (sanitized).
fn segment(key: &str) -> String {
    resilience_core::sanitize(key).into_owned()
}

fn json_type(v: &Value) -> String {
    format!("{} {}", json_kind(v), shown(&v.to_string()))
}

/// What a raw JSON value is, without its text.
fn raw_kind(raw: &str) -> &'static str {
    serde_json::from_str::<Value>(raw).map_or("invalid JSON", |v| json_kind(&v))
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
