//! `resilience-config`: explain and check the effective configuration read from the
//! environment.
//!
//! - `explain [--json] [--service NAME]`: every service's retry and breaker values and where
//!   each came from;
//! - `check`: every problem in the environment; exit status 1 if there is any.

mod args;
mod check;
mod explain;
mod json;
mod render;

use args::{Cli, Command};
use clap::Parser;
use resilience_config::{Config, ProcessEnv};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let config = Config::with_prefix(&cli.prefix, &ProcessEnv);
    match cli.command {
        Command::Explain { json, service } => {
            let services = match service {
                Some(name) => vec![name],
                None => config.service_names(),
            };
            if json {
                println!("{}", json::document(&config, &services));
            } else {
                print!("{}", explain::table(&config, &services));
            }
            explain::warn_on_stderr(&config);
            ExitCode::SUCCESS
        }
        Command::Check => {
            let report = check::run(&config);
            print!("{}", report.text);
            if report.problems == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
    }
}
