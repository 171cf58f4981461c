//! `resilience-config`: explain and check the effective configuration read from the
//! environment.
//!
//! - `explain [--json] [--service NAME]`: every service's retry and breaker values and where
//!   each came from;
//! - `check [--strict]`: every problem and warning in the environment; exit status 1 if
//!   there is any problem (an invalid value), or with `--strict` any warning (an unknown key).
//!
//! Status 2: bad arguments, or the output could not be written.

mod args;
mod check;
mod explain;
mod json;
mod render;

use args::{Cli, Command};
use clap::Parser;
use resilience_config::{Config, ProcessEnv};
use std::io::{self, Write};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let config = Config::with_prefix(&cli.prefix, &ProcessEnv);
    let explain = matches!(cli.command, Command::Explain { .. });
    let (out, status) = match cli.command {
        Command::Explain { json, service } => {
            let services = match service {
                Some(name) => vec![name],
                None => config.service_names(),
            };
            let out = if json {
                json::document(&config, &services) + "\n"
            } else {
                explain::table(&config, &services)
            };
            (out, ExitCode::SUCCESS)
        }
        Command::Check { strict } => {
            let report = check::run(&config, strict);
            let status = if report.failed {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            };
            (report.text, status)
        }
    };
    // `print!` panics when stdout fails: a reader that left early (`| head`) is not an error;
    // anything else is said in one line.
    let mut stdout = io::stdout().lock();
    let written = stdout
        .write_all(render::printable(&out).as_bytes())
        .and_then(|()| stdout.flush());
    if explain {
        explain::warn_on_stderr(&config);
    }
    match written {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
            eprintln!("resilience-config: cannot write the output: {e}");
            ExitCode::from(2)
        }
        _ => status,
    }
}
