//! The process-wide runtime is replaceable once, at startup (its own test binary: it is global).

use resilience::config::{Config, EnvSource};
use resilience::Runtime;
use std::collections::HashMap;

#[test]
fn the_global_runtime_can_be_installed_once_before_first_use() {
    let vars: HashMap<String, String> =
        [("CLEVERAGENTS_RETRY_MAX_ATTEMPTS".to_owned(), "9".to_owned())].into();
    let installed = Runtime::install(Runtime::new(Config::from_source(&vars as &dyn EnvSource)))
        .expect("first install wins");
    assert!(std::ptr::eq(installed, Runtime::global()));
    assert_eq!(
        Runtime::global()
            .service("context_service")
            .policy()
            .max_attempts(),
        9
    );
    // Too late now: the runtime is in use; the rejected one is handed back.
    let again = Runtime::install(Runtime::new(Config::default()));
    assert!(again.is_err());
    assert_eq!(
        Runtime::global()
            .service("context_service")
            .policy()
            .max_attempts(),
        9
    );
    assert!(!resilience::is_circuit_open("context_service"));
    assert!(resilience::reset_circuit("context_service"));
}
