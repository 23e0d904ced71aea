//! The command line: `mycorrhizal [serve]` runs the server (the default); `--version` prints the
//! build. Configuration comes from the environment, not flags, so one place describes it.

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "mycorrhizal", version = crate::build_info::VERSION, long_version = crate::build_info::LONG_VERSION, about = "Self-hosted personal CRM server")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the server (the default). Configured by environment variables; see the README.
    Serve,
}
