//! A call site whose declared values never make a valid policy runs with its service's
//! policy, and keeps doing so across reloads: a reload gives it the service's *new* policy,
//! as its first registration would have. Its own test binary: it installs the process-wide
//! runtime.

mod config_support;

use config_support::config;
use resilience::__private::{CallSite, CodeDeclared};
use resilience::Runtime;

/// Invalid under every config: a total timeout of 0 s, which no env var overrides.
static INVALID_SITE: CallSite = CallSite::new(
    "plan_service",
    "invalid_site",
    CodeDeclared {
        total_timeout: Some(0.0),
        ..CodeDeclared::EMPTY
    },
);

#[test]
fn c13_a_site_with_invalid_declared_values_follows_its_services_policy_across_reloads() {
    let runtime = Runtime::install(Runtime::new(config(&[]))).expect("first install");
    assert_eq!(
        INVALID_SITE.guard().policy().max_attempts(),
        runtime.service("plan_service").policy().max_attempts(),
        "registration falls back to the service's policy"
    );

    runtime
        .reload(config(&[("CLEVERAGENTS_RETRY_MAX_ATTEMPTS", "7")]))
        .expect("a valid config");
    assert_eq!(runtime.service("plan_service").policy().max_attempts(), 7);
    // It used to fall back to the site's own policy from before the reload: 3.
    assert_eq!(
        INVALID_SITE.guard().policy().max_attempts(),
        7,
        "the reload gave the site its old policy, not the service's new one"
    );
}
