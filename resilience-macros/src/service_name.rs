//! The checks on a `service` name written in an attribute (M3).

/// What is wrong with a `service` name, if anything; `calls` says whose service it is ("this
/// fn calls"). A padded name is refused rather than trimmed: it would name another service
/// than the one config and the registry know, and trimming would hide the typo.
pub(crate) fn service_name_problem(name: &str, calls: &str) -> Option<String> {
    let trimmed = name.trim();
    if trimmed.is_empty() {
        Some(format!(
            "`service` must not be empty: name the service {calls}, e.g. `service = \"plan_service\"`"
        ))
    } else if trimmed != name {
        Some(format!(
            "`service` has whitespace around its name, which would make it another service than {trimmed:?}: write `service = {trimmed:?}`"
        ))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// M3: a padded service name is told the trimmed name as a valid string literal, escaped,
    /// and tabs or newlines around it are called whitespace, not spaces.
    #[test]
    fn m3_a_padded_service_name_offers_an_escaped_literal() {
        let m = service_name_problem(" plan\"x ", "this fn calls").unwrap();
        assert!(m.ends_with(r#"write `service = "plan\"x"`"#), "{m}");
        let m = service_name_problem("\tplan_service\n", "this fn calls").unwrap();
        assert!(
            m.starts_with("`service` has whitespace around its name"),
            "{m}"
        );
        assert!(m.ends_with(r#"write `service = "plan_service"`"#), "{m}");
        // The suggested literal is valid Rust and names the trimmed service.
        let offered = m.rsplit("service = ").next().unwrap().trim_end_matches('`');
        let lit: syn::LitStr = syn::parse_str(offered).unwrap();
        assert_eq!(lit.value(), "plan_service");
    }
}
