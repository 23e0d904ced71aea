//! The command line: `mycorrhizal [serve]` runs the server (the default); `mycorrhizal import`
//! imports a file for a user; `--version` prints the build. Configuration comes from the
//! environment, not flags, so one place describes it.

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
    /// Import a vCard, JSContact or CSV file into a user's contacts, through the same preview
    /// and duplicate detection as the web import: new contacts are added, duplicates skipped
    /// (or merged with --update-duplicates). Stop the server first (the database is opened here).
    Import {
        /// The user, by username or email.
        #[arg(long)]
        user: String,
        /// `vcf`, `jscontact` or `csv`; by default from the file's extension.
        #[arg(long)]
        format: Option<String>,
        /// Merge rows that match an existing contact into it instead of skipping them.
        #[arg(long)]
        update_duplicates: bool,
        /// Where the cards' categories go: `tags` (the default) or `circles`.
        #[arg(long, default_value = "tags")]
        categories: String,
        /// The file to import.
        file: std::path::PathBuf,
    },
    /// Write a signed backup: one consistent snapshot of the database (pictures and attachments
    /// inside it) and its `.manifest.json`. Works while the server runs (it is asked over its
    /// control socket in DATA_DIR) and while it is stopped. Exit code 0 when written.
    Backup {
        /// Folder for the backup (default: BACKUP_DIR, else DATA_DIR/backups).
        #[arg(long)]
        out: Option<std::path::PathBuf>,
    },
    /// Check a backup: its manifest's signature (needs the same DATA_ENCRYPTION_KEY or
    /// JWT_SECRET_KEY as the server that wrote it), the file's digest, that it opens, and every
    /// count. Exit codes: 0 good, 1 not good (altered, unsigned, mismatched), 2 no such backup or
    /// bad configuration, 3 no manifest (accepted only with BACKUP_ALLOW_UNSIGNED=1).
    Verify {
        /// The backup file (`.rows.lz4`; earlier builds' `.redb.lz4` and `.redb` too).
        backup: std::path::PathBuf,
    },
    /// Roll the whole instance back to a backup. The server must be stopped. Verifies first,
    /// keeps the replaced data in DATA_DIR/replaced-<time>/, migrates an older backup as start-up
    /// does, rebuilds the search index and the derived contact columns. Exit codes as for
    /// verify, plus 4 while the server runs.
    Restore {
        /// The backup file (`.rows.lz4`; earlier builds' `.redb.lz4` and `.redb` too).
        backup: std::path::PathBuf,
    },
    /// Ask the server on BIND_ADDR whether it is ready (GET /health/ready); exit 0 when it is.
    /// For container health checks, where images have no curl.
    Healthcheck,
    /// Write a user's account bundle (every record, picture and attachment, as
    /// `GET /api/v1/export/bundle` gives it) to a new file. Stop the server first.
    ExportBundle {
        /// The user, by username or email.
        #[arg(long)]
        user: String,
        /// The file to create.
        #[arg(long)]
        out: std::path::PathBuf,
    },
    /// Recreate an account bundle in a user's account, as `POST /api/v1/import/bundle` does: all
    /// of it in one commit with its references remapped, or nothing when the bundle is bad.
    /// Stop the server first.
    ImportBundle {
        /// The user, by username or email.
        #[arg(long)]
        user: String,
        /// The bundle (a .zip).
        file: std::path::PathBuf,
    },
    /// Re-wrap the data key under a new master key. The current key comes from the usual
    /// environment (DATA_ENCRYPTION_KEY, DATA_ENCRYPTION_KEY_FILE or JWT_SECRET_KEY); the new one
    /// from NEW_DATA_ENCRYPTION_KEY or --new-key-file. Stop the server first. Afterwards start it
    /// with DATA_ENCRYPTION_KEY set to the new key.
    RewrapDataKey {
        /// File holding the new master key (otherwise NEW_DATA_ENCRYPTION_KEY).
        #[arg(long)]
        new_key_file: Option<std::path::PathBuf>,
    },
}
