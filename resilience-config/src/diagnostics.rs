//! Problems found while loading the configuration: each names the environment variable or the
//! JSON path at fault, and shows only sanitized values.

use std::fmt;

/// What kind of problem a [`Diagnostic`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DiagnosticKind {
    /// A value that does not parse or is out of range; the lower layer's value is kept (C1),
    /// or, inside a JSON override, that service's whole override is skipped (C8).
    InvalidValue,
    /// A key (or a prefixed variable) that means nothing here; probably a typo. Ignored, and
    /// only a warning (C10): the rest of the override still applies.
    UnknownKey,
    /// An override names a service that is not built in but is spelled like one.
    SuspectServiceName,
    /// A key that is ignored anyway (`service_name`, C7) is given more than once in one
    /// object. A warning: unlike a repeated setting, it puts no value in doubt, so the rest
    /// of the override applies.
    RepeatedIgnoredKey,
    /// The override string is longer than the limit and was rejected whole (C6).
    TooLong,
    /// The override string is not valid JSON, or not a JSON object.
    InvalidJson,
    /// A service's override is not a JSON object and was ignored (C9).
    NotAnObject,
    /// A top-level key is a section or setting name (`retry`, `max_attempts`, in any ASCII
    /// case, spaces around it ignored) and its value holds no section: the service level is
    /// missing (C2), and the override was ignored rather than applied to a service called
    /// `retry`. A value that holds a section (`{"retry": {"retry": {…}}}`) is a service so
    /// named, and applies (C11).
    MissingService,
}

impl DiagnosticKind {
    /// Whether this is only a warning: something was ignored or looks like a mistake, but no
    /// value was rejected, so nothing the user set was lost (C10: unknown keys warn). The
    /// others are errors: a value, an override or the whole string was refused.
    /// `resilience-config check` fails on errors, and on warnings too with `--strict`.
    pub fn is_warning(self) -> bool {
        match self {
            Self::UnknownKey | Self::SuspectServiceName | Self::RepeatedIgnoredKey => true,
            Self::InvalidValue
            | Self::TooLong
            | Self::InvalidJson
            | Self::NotAnObject
            | Self::MissingService => false,
        }
    }
}

/// One problem found while loading, with where it is and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    kind: DiagnosticKind,
    env_var: String,
    path: Option<String>,
    message: String,
}

impl Diagnostic {
    pub(crate) fn env(kind: DiagnosticKind, env_var: impl Into<String>, message: String) -> Self {
        Self {
            kind,
            env_var: env_var.into(),
            path: None,
            message,
        }
    }

    pub(crate) fn json(
        kind: DiagnosticKind,
        env_var: &'static str,
        path: String,
        message: String,
    ) -> Self {
        Self {
            kind,
            env_var: env_var.to_owned(),
            path: Some(path),
            message,
        }
    }

    /// What kind of problem this is.
    pub fn kind(&self) -> DiagnosticKind {
        self.kind
    }

    /// The environment variable involved (for JSON problems, the overrides variable).
    pub fn env_var(&self) -> &str {
        &self.env_var
    }

    /// The JSON path at fault, like `plan_service.retry.max_attempts`, for override problems.
    pub fn path(&self) -> Option<&str> {
        self.path.as_deref()
    }

    /// The most precise location: the JSON path if there is one, else the variable name.
    pub fn location(&self) -> &str {
        self.path.as_deref().unwrap_or(&self.env_var)
    }

    /// What is wrong and what was done about it. Values in it are sanitized.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.path {
            Some(path) => write!(f, "{} {path}: {}", self.env_var, self.message),
            None => write!(f, "{}: {}", self.env_var, self.message),
        }
    }
}

/// Collects diagnostics, and the debug-level notes found among them; the config logs both
/// once it is built (see [`log`]), never while loading: a config loaded inside a one-time
/// initialiser (the process-wide runtime's) must log nothing there (C8).
#[derive(Debug, Default)]
pub(crate) struct Diagnostics {
    found: Vec<Diagnostic>,
    notes: Vec<Note>,
}

/// Something the load did that is no problem, said at debug level: a `service_name` key given
/// once in an override is ignored (C7). Kept with its place among the diagnostics, so that
/// everything is logged in the order it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Note {
    /// How many diagnostics were found before it.
    after: usize,
    /// The JSON path of the ignored key.
    path: String,
}

/// Emits one `tracing` warning per diagnostic and one debug event per note, in the order they
/// were found.
pub(crate) fn log(diagnostics: &[Diagnostic], notes: &[Note]) {
    let mut notes = notes.iter().peekable();
    for (i, d) in diagnostics.iter().enumerate() {
        while let Some(n) = notes.next_if(|n| n.after <= i) {
            log_note(n);
        }
        tracing::warn!(
            target: "resilience_config",
            env_var = %d.env_var,
            path = d.path.as_deref().unwrap_or(""),
            kind = ?d.kind,
            "{}",
            d.message
        );
    }
    notes.for_each(log_note);
}

fn log_note(note: &Note) {
    tracing::debug!(target: "resilience_config", path = %note.path,
        "`service_name` in an override is ignored");
}

impl Diagnostics {
    pub(crate) fn push(&mut self, d: Diagnostic) {
        self.found.push(d);
    }

    /// Notes that the `service_name` key at `path` was ignored (C7), to be logged later.
    pub(crate) fn note_ignored(&mut self, path: String) {
        self.notes.push(Note {
            after: self.found.len(),
            path,
        });
    }

    pub(crate) fn into_parts(self) -> (Vec<Diagnostic>, Vec<Note>) {
        (self.found, self.notes)
    }
}

/// Shows an input value in a message: sanitized (no secret reaches a log line) and quoted.
pub(crate) fn shown(value: &str) -> String {
    format!("`{}`", resilience_core::sanitize(value))
}
