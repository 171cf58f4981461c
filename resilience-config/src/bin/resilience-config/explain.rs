//! `explain`: the table.

use crate::render;
use resilience_config::{CodeDeclared, Config};

/// One block per service: SERVICE and CATEGORY on its first row, then every setting with
/// its value and source.
pub fn table(config: &Config, services: &[String]) -> String {
    let mut rows = vec![header()];
    for (i, name) in services.iter().enumerate() {
        if i > 0 {
            rows.push(Vec::new());
        }
        let s = config.resolve(name, &CodeDeclared::EMPTY);
        for (j, e) in s.entries().iter().enumerate() {
            let (svc, cat) = if j == 0 {
                // A service name comes from the environment: shown sanitized, like
                // every other input value.
                (render::name(name), s.category.to_string())
            } else {
                (String::new(), String::new())
            };
            rows.push(vec![
                svc,
                cat,
                format!("{}.{}", e.section.as_str(), e.key),
                render::value(&s, e),
                render::source(e.source),
            ]);
        }
    }
    format!(
        "resilience configuration (prefix {}; sources: built-in < code < env < json; \
         code-declared arguments are per function and not shown)\n\n{}",
        config.prefix(),
        render::columns(&rows)
    )
}

fn header() -> Vec<String> {
    ["SERVICE", "CATEGORY", "SETTING", "VALUE", "SOURCE"]
        .map(String::from)
        .to_vec()
}

/// Loading problems go to stderr so the table stays clean; `check` lists them in full. Each
/// is labelled as `check` labels it: `error` for a value rejected (not applied), `warning`
/// for one applied as written (an unknown key, a suspect service name).
pub fn warn_on_stderr(config: &Config) {
    for d in config.diagnostics() {
        let label = if d.kind().is_warning() {
            "warning"
        } else {
            "error"
        };
        eprintln!("{label}: {}", crate::render::printable(&d.to_string()));
    }
    if !config.diagnostics().is_empty() {
        eprintln!("(run `resilience-config check` to validate; exit status 1 on problems, or with --strict on warnings too)");
    }
}
