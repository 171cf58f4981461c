//! Shared by the runtime tests: a config read from the given variables only (no process
//! environment).

use resilience::config::{Config, EnvSource};
use std::collections::HashMap;

/// The config these variables (name, value) make, and nothing else.
pub fn config(vars: &[(&str, &str)]) -> Config {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Config::from_source(&map as &dyn EnvSource)
}
