//! Provenance: where an effective value came from (C13).

use std::fmt;

/// Where an effective value came from (C13). Layers, lowest precedence first:
/// [`BuiltIn`](Self::BuiltIn) or [`Default`](Self::Default) < [`CodeDeclared`](Self::CodeDeclared)
/// < [`Env`](Self::Env) < [`Json`](Self::Json).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    /// The built-in per-service table (C3), or a key's documented default (C1).
    BuiltIn,
    /// The `#[retry_service_operation(...)]` arguments of the function being called.
    CodeDeclared,
    /// A global environment variable that was actually set; holds the variable's name.
    Env(&'static str),
    /// The service's entry in the JSON per-service overrides (C2).
    Json,
    /// The generic defaults an unknown service gets: a fresh copy of the database category
    /// (C11).
    Default,
}

impl Source {
    /// A short lowercase label: `built-in`, `code`, `env`, `json` or `default`.
    pub fn label(self) -> &'static str {
        match self {
            Self::BuiltIn => "built-in",
            Self::CodeDeclared => "code",
            Self::Env(_) => "env",
            Self::Json => "json",
            Self::Default => "default",
        }
    }

    /// The environment variable's name when the value came from one.
    pub fn env_var(self) -> Option<&'static str> {
        match self {
            Self::Env(name) => Some(name),
            _ => None,
        }
    }
}

impl fmt::Display for Source {
    /// `built-in`, `code`, `env CLEVERAGENTS_RETRY_MAX_ATTEMPTS`, `json`, `default`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Env(name) => write!(f, "env {name}"),
            other => f.write_str(other.label()),
        }
    }
}

/// A value together with the layer that decided it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sourced<T> {
    /// The effective value.
    pub value: T,
    /// Where it came from.
    pub source: Source,
}

impl<T> Sourced<T> {
    /// Pairs `value` with `source`.
    pub const fn new(value: T, source: Source) -> Self {
        Self { value, source }
    }

    /// Replaces the value (and its source) when a higher layer provides one.
    pub(crate) fn overlay(&mut self, value: Option<T>, source: Source) {
        if let Some(value) = value {
            *self = Self { value, source };
        }
    }
}
