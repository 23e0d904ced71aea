//! `mycorrhizal`: parse the command line and the configuration, then serve.

use std::process::ExitCode;

use clap::Parser;
use mycorrhizal::cli::{Cli, Command};
use mycorrhizal::{Config, backup_cli, telemetry};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => serve(),
        Command::RewrapDataKey { new_key_file } => rewrap(new_key_file),
        Command::Backup { out } => operator(|config| backup_cli::backup(config, out.as_deref())),
        Command::Verify { backup } => operator(|config| backup_cli::verify(config, &backup)),
        Command::Restore { backup } => operator(|config| backup_cli::restore(config, &backup)),
        Command::Healthcheck => match Config::from_env() {
            Ok(config) => ExitCode::from(backup_cli::healthcheck(&config)),
            Err(_) => ExitCode::from(2),
        },
        Command::ExportBundle { user, out } => bundle(|config, runtime| {
            let manifest = runtime.block_on(mycorrhizal::bundle_cli::export(config, &user, &out))?;
            let rows: u64 = manifest.counts.values().sum();
            Ok(format!("{}: {rows} rows, {} files", out.display(), manifest.files.len()))
        }),
        Command::ImportBundle { user, file } => bundle(|config, runtime| {
            let i = runtime.block_on(mycorrhizal::bundle_cli::import(config, &user, &file))?;
            let made: u64 = i.imported.values().sum();
            let skipped: u64 = i.skipped.values().sum();
            let kinds: Vec<String> = i.imported.iter().map(|(k, n)| format!("{k} {n}")).collect();
            Ok(format!(
                "imported {made} rows ({}), {} pictures, {} attachments; {skipped} skipped",
                kinds.join(", "),
                i.pictures,
                i.attachments
            ))
        }),
        Command::Import { user, format, update_duplicates, categories, file } => {
            let Some(categories) = mycorrhizal::crm::import::Categories::parse(&categories) else {
                eprintln!("mycorrhizal: --categories must be tags or circles");
                return ExitCode::from(2);
            };
            import(&user, format.as_deref(), update_duplicates, categories, &file)
        }
    }
}

fn import(
    user: &str,
    format: Option<&str>,
    update_duplicates: bool,
    categories: mycorrhizal::crm::import::Categories,
    file: &std::path::Path,
) -> ExitCode {
    let Some(config) = load_config() else {
        return ExitCode::from(2);
    };
    telemetry::init("warn", config.log_pretty);
    let outcome = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| e.to_string()).and_then(
        |runtime| {
            let options = mycorrhizal::import_cli::Options { format, update_duplicates, categories };
            runtime.block_on(mycorrhizal::import_cli::run(config, user, file, options))
        },
    );
    match outcome {
        Ok(result) => {
            println!(
                "{} rows: {} created, {} updated, {} skipped, {} failed",
                result.total_processed, result.created, result.updated, result.skipped, result.error_count
            );
            for error in &result.errors {
                println!("  {error}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("mycorrhizal: import failed: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs a bundle command on a runtime of its own and prints its outcome.
fn bundle(run: impl FnOnce(mycorrhizal::Config, &tokio::runtime::Runtime) -> Result<String, String>) -> ExitCode {
    let Some(config) = load_config() else {
        return ExitCode::from(2);
    };
    telemetry::init("warn", config.log_pretty);
    let outcome = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())
        .and_then(|runtime| run(config, &runtime));
    match outcome {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("mycorrhizal: {e}");
            ExitCode::FAILURE
        }
    }
}

fn rewrap(new_key_file: Option<std::path::PathBuf>) -> ExitCode {
    let Some(config) = load_config() else {
        return ExitCode::from(2);
    };
    telemetry::init(&config.log_level, config.log_pretty);
    let new_key = match new_key_file {
        Some(path) => {
            std::fs::read_to_string(&path).map(|s| s.trim().to_string()).map_err(|e| format!("{}: {e}", path.display()))
        }
        None => std::env::var("NEW_DATA_ENCRYPTION_KEY")
            .map_err(|_| "set NEW_DATA_ENCRYPTION_KEY or pass --new-key-file".to_string()),
    };
    let outcome = new_key.and_then(|key| {
        let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| e.to_string())?;
        runtime.block_on(mycorrhizal::rewrap_data_key(config, key))
    });
    match outcome {
        Ok(()) => {
            println!(
                "The data key is now wrapped by the new key. Start the server with DATA_ENCRYPTION_KEY set to it."
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("mycorrhizal: rewrap failed: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs an operator command with the configuration (exit code 2 when it is invalid); logs
/// only warnings, so the command's own lines are what the operator reads.
fn operator(command: impl FnOnce(Config) -> u8) -> ExitCode {
    let Some(config) = load_config() else {
        return ExitCode::from(2);
    };
    telemetry::init("warn", config.log_pretty);
    ExitCode::from(command(config))
}

fn load_config() -> Option<Config> {
    match Config::from_env() {
        Ok(config) => Some(config),
        Err(errors) => {
            telemetry::init("info", false);
            for error in &errors {
                tracing::error!(event = "config_invalid", component = "app", variable = %error.variable, error = %error.reason, "invalid configuration: {error}");
                eprintln!("mycorrhizal: invalid configuration: {error}");
            }
            None
        }
    }
}

fn serve() -> ExitCode {
    // First, before any thread or allocation of note: the allocator's options (re-executes).
    let unsettled = mycorrhizal::allocator::settle();
    let Some(config) = load_config() else {
        return ExitCode::from(2);
    };
    telemetry::init(&config.log_level, config.log_pretty);
    if let Some(reason) = unsettled {
        tracing::warn!(event = "allocator_defaults", component = "app", error = %reason);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
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
