//! Command-line arguments.

use clap::{Parser, Subcommand};
use resilience_config::DEFAULT_PREFIX;

/// Explain and check the resilience configuration (retry and circuit breaker settings per
/// service) read from the environment.
#[derive(Debug, Parser)]
#[command(name = "resilience-config", version)]
pub struct Cli {
    /// Environment variable prefix.
    #[arg(long, global = true, default_value = DEFAULT_PREFIX, value_name = "PREFIX")]
    pub prefix: String,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show every service's effective retry and breaker settings and where each value came
    /// from (built-in, env, json, default). Code-declared attribute arguments are per function
    /// and not known here.
    Explain {
        /// Print one JSON document instead of a table.
        #[arg(long)]
        json: bool,
        /// Only this service (an unknown name shows the defaults it would get).
        #[arg(long, value_name = "NAME")]
        service: Option<String>,
    },
    /// Validate the environment: print every problem and warning, naming the variable or
    /// JSON path, and exit with status 1 if there is any problem (an invalid value, which
    /// is not applied). Unknown keys and suspect service names are only warnings (exit 0).
    Check {
        /// Also exit with status 1 on any warning (an unknown key or variable, a service
        /// name a typo away from a built-in one, a base delay above the max delay): for CI
        /// that wants typos to fail.
        #[arg(long)]
        strict: bool,
    },
}
