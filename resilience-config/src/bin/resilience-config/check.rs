//! `check`: every problem, or one OK line.

use resilience_config::{CodeDeclared, Config, DiagnosticKind};

/// What `check` prints and how many problems it found.
pub struct Report {
    pub text: String,
    pub problems: usize,
}

/// Lists every loading diagnostic, then confirms each service's policies build.
pub fn run(config: &Config) -> Report {
    // A suspect service name is applied as written (C11): a warning, not a problem.
    let (warnings, errors): (Vec<_>, Vec<_>) = config
        .diagnostics()
        .iter()
        .partition(|d| d.kind() == DiagnosticKind::SuspectServiceName);
    let mut lines: Vec<String> = errors.iter().map(|d| format!("error: {d}")).collect();
    let services = config.service_names();
    for name in &services {
        let s = config.resolve(name, &CodeDeclared::EMPTY);
        // Loading validates every value (a total timeout that rounds to zero included), so
        // these fail only if core's rules grow stricter.
        if let Err(e) = s.retry_policy() {
            lines.push(format!("error: {name}: retry policy: {e}"));
        }
        if let Err(e) = s.breaker_config() {
            lines.push(format!("error: {name}: circuit breaker: {e}"));
        }
    }
    let problems = lines.len();
    let mut text: String = warnings.iter().map(|d| format!("warning: {d}\n")).collect();
    if problems == 0 {
        text.push_str(&format!(
            "OK: {} services, no problems (prefix {})\n",
            services.len(),
            config.prefix()
        ));
    } else {
        text.push_str(&lines.join("\n"));
        text.push_str(&format!("\n{problems} problem(s) found\n"));
    }
    Report { text, problems }
}
