//! `check`: every problem and warning, or one OK line.

use resilience_config::{CodeDeclared, Config};
use resilience_core::backoff::BackoffStrategy;

/// What `check` prints, and whether it fails: on any problem, or with `--strict` on any
/// warning too.
pub struct Report {
    pub text: String,
    pub failed: bool,
}

/// Lists every loading diagnostic, then confirms each service's policies build.
///
/// A diagnostic is a warning when nothing was rejected (an unknown key, C10, or a suspect
/// service name, applied as written, C11); anything else is a problem. `strict` turns
/// warnings into failure.
pub fn run(config: &Config, strict: bool) -> Report {
    let (warnings, errors): (Vec<_>, Vec<_>) = config
        .diagnostics()
        .iter()
        .partition(|d| d.kind().is_warning());
    let mut lines: Vec<String> = errors.iter().map(|d| format!("error: {d}")).collect();
    let mut advice = Vec::new();
    let services = config.service_names();
    for name in &services {
        let s = config.resolve(name, &CodeDeclared::EMPTY);
        // Valid (max_delay caps every delay, R4) but almost surely not what was meant. The
        // base delay used is the strategy's floor when it is under it (R5): the cap defeats
        // that floor too. `none` never waits, so its base delay is moot.
        let strategy = s.backoff_strategy.value;
        let floor = strategy.floor().as_secs_f64();
        let waits = strategy != BackoffStrategy::None;
        if waits && s.base_delay.value.max(floor) > s.max_delay.value {
            let floored = if s.base_delay.value < floor {
                format!("; {strategy} floor {floor:?} s")
            } else {
                String::new()
            };
            advice.push(format!(
                "warning: {}: retry.base_delay {} s ({}{floored}) exceeds retry.max_delay {} s \
                 ({}): every delay is capped at {} s",
                crate::render::name(name),
                s.base_delay.value,
                s.base_delay.source.label(),
                s.max_delay.value,
                s.max_delay.source.label(),
                s.max_delay.value
            ));
        }
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
    let warned = warnings.len() + advice.len();
    let mut text: String = warnings.iter().map(|d| format!("warning: {d}\n")).collect();
    for a in &advice {
        text.push_str(a);
        text.push('\n');
    }
    let warned_note = match warned {
        0 => String::new(),
        n => format!(", {n} warning(s)"),
    };
    let failed = problems > 0 || (strict && warned > 0);
    if !failed {
        text.push_str(&format!(
            "OK: {} services, no problems{warned_note} (prefix {})\n",
            services.len(),
            config.prefix()
        ));
    } else if problems == 0 {
        text.push_str(&format!(
            "{warned} warning(s) found; --strict fails on warnings\n"
        ));
    } else {
        text.push_str(&lines.join("\n"));
        text.push_str(&format!("\n{problems} problem(s) found{warned_note}\n"));
    }
    Report { text, failed }
}
