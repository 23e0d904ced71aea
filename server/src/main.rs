//! `mycorrhizal`: parse the command line and the configuration, then serve.

use std::process::ExitCode;

use clap::Parser;
use mycorrhizal::cli::{Cli, Command};
use mycorrhizal::{Config, telemetry};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => serve(),
    }
}

fn serve() -> ExitCode {
    let config = match Config::from_env() {
        Ok(config) => config,
        Err(errors) => {
            telemetry::init("info", false);
            for error in &errors {
                tracing::error!(event = "config_invalid", component = "app", variable = %error.variable, error = %error.reason, "invalid configuration: {error}");
                eprintln!("mycorrhizal: invalid configuration: {error}");
            }
            return ExitCode::from(2);
        }
    };
    telemetry::init(&config.log_level, config.log_pretty);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("mycorrhizal: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(mycorrhizal::run(config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(event = "startup_failed", component = "app", error = %format!("{e:#}"));
            eprintln!("mycorrhizal: {e:#}");
            ExitCode::FAILURE
        }
    }
}
