//! The Mycorrhizal server: configuration, start-up, HTTP and operations over the engine.
//!
//! Start-up order is fixed: config -> open database -> pre-migration snapshot -> migrations ->
//! bind the listener. Nothing listens while migrations run.

pub mod allocator;
pub mod api;
pub mod auth;
pub mod backup;
pub mod backup_cli;
pub mod build_info;
pub mod bundle_cli;
pub mod cli;
pub mod config;
pub mod cpu_pool;
pub mod crm;
pub mod dav;
pub mod diagnostics;
pub mod error;
pub mod http;
pub mod import_cli;
pub mod integrity;
pub mod jobs;
pub mod notify;
pub mod ops;
pub mod outbound;
pub mod state;
pub mod telemetry;
pub mod web;

/// mimalloc instead of the system allocator: parsing, JSON and indexing allocate many small
/// values, and glibc's malloc and free were about a quarter of an import's profile. Set here (not
/// only in `main.rs`) so the benches and tests that link this crate measure what runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::future::Future;
use std::time::Instant;

use anyhow::Context;
use mycorrhizal_engine::{Engine, MigrationReport, Options, SearchOptions};
use ops::events::{Event, emit};
use serde_json::json;
use tokio::net::TcpListener;

pub use config::Config;
pub use state::AppState;

/// What the shared HTTP stack needs to know of the front doors (it imports none of them).
const DOORS: http::Doors =
    http::Doors { buckets: &[("dav", dav::is_dav_path, dav::rate)], not_found_page: web::not_found_for };

/// The whole application: every front door's routes under the shared HTTP stack.
pub fn app(state: AppState) -> axum::Router {
    let routes = api::router(&state.config).merge(web::router(&state)).merge(dav::router(&state));
    dav::at_root(http::serve(routes, state.clone(), DOORS), &state)
}

/// Opens the engine for `config`, migrating behind a verified snapshot, and records what happened.
pub async fn open_engine(config: &Config) -> anyhow::Result<Engine> {
    std::fs::create_dir_all(&config.data_dir)
        .with_context(|| format!("cannot create DATA_DIR {}", config.data_dir.display()))?;
    if let Some(fs_type) = ops::fs::network_filesystem(&config.data_dir) {
        tracing::warn!(
            event = "network_filesystem",
            component = "app",
            fs_type = %fs_type,
            "the database is on a network filesystem ({fs_type}); this risks corruption: keep DATA_DIR on local disk"
        );
    }
    let path = config.database_path();
    let options = Options {
        pre_migration_dir: Some(config.pre_migration_dir.clone()),
        search: Some(search_options(config)),
        migrations: crm::migrations(),
        cache_bytes: config.db_cache_bytes,
        ..Options::default()
    };
    let started_at = jiff::Timestamp::now();
    let started = Instant::now();
    let opened = tokio::task::spawn_blocking(move || Engine::open(path, options)).await?;
    let (engine, report) = match opened {
        Ok(opened) => opened,
        Err(e) => {
            tracing::error!(event = "migration_failed", component = "migration", error = %e);
            return Err(anyhow::Error::new(e).context("cannot open the database"));
        }
    };
    record_migration(&engine, &report, started_at, started.elapsed().as_millis() as u64).await;
    if let Some(snapshot) = &report.snapshot {
        // Signed like an operator backup, so `mycorrhizal restore` takes it for a rollback.
        let signed = backup::Signer::from_config(config).and_then(|s| backup::sign_existing(&snapshot.path, &s));
        if let Err(e) = signed {
            tracing::warn!(event = "pre_migration_snapshot_unsigned", component = "migration", error = %e);
        }
    }
    adopt_files(&engine, &config.data_dir).await;
    Ok(engine)
}

/// How the server runs its search index (`DATA_DIR/search`, the searchable kinds, the commit
/// interval and writer memory the configuration sets).
pub fn search_options(config: &Config) -> SearchOptions {
    let mut search = SearchOptions::new(config.data_dir.join("search"), crm::search_sources());
    search.commit_interval = std::time::Duration::from_millis(config.search_commit_interval_ms);
    search.writer_memory = config.search_writer_bytes;
    search
}

/// Moves contact pictures and attachments an earlier version kept as files into the database
/// (see [`crm::contact::picture`], [`crm::attachment`]); a no-op once done. Should it fail (a full
/// disk), the server still starts: the files stay where they are and the next start moves them.
async fn adopt_files(engine: &Engine, data_dir: &std::path::Path) {
    let (engine2, dir) = (engine.clone(), data_dir.to_path_buf());
    match tokio::task::spawn_blocking(move || crm::attachment::ops::adopt_files(&engine2, &dir)).await {
        Ok(Ok(adopted)) if adopted.moved > 0 || adopted.removed > 0 => tracing::info!(
            event = "attachments_adopted",
            component = "migration",
            moved = adopted.moved,
            removed = adopted.removed,
            "attachments moved from files into the database"
        ),
        Ok(Ok(_)) => {}
        Ok(Err(e)) => tracing::error!(event = "attachments_adoption_failed", component = "migration", error = %e),
        Err(e) => tracing::error!(event = "attachments_adoption_failed", component = "migration", error = %e),
    }
    let (engine, dir) = (engine.clone(), data_dir.to_path_buf());
    match tokio::task::spawn_blocking(move || crm::contact::picture::adopt_files(&engine, &dir)).await {
        Ok(Ok(adopted)) if adopted.moved > 0 || adopted.removed > 0 => tracing::info!(
            event = "pictures_adopted",
            component = "migration",
            moved = adopted.moved,
            removed = adopted.removed,
            "contact pictures moved from files into the database"
        ),
        Ok(Ok(_)) => {}
        Ok(Err(e)) => tracing::error!(event = "pictures_adoption_failed", component = "migration", error = %e),
        Err(e) => tracing::error!(event = "pictures_adoption_failed", component = "migration", error = %e),
    }
}

async fn record_migration(engine: &Engine, report: &MigrationReport, at: jiff::Timestamp, ms: u64) {
    if report.steps.is_empty() {
        return;
    }
    let versions = json!({ "from_version": report.from, "to_version": report.to });
    emit(engine, Event::info("migration", "migration_started").detail(versions.clone()).at(at)).await;
    if let Some(snapshot) = &report.snapshot {
        let detail = json!({ "operation": "pre_migration_snapshot", "tables": snapshot.manifest.tables.len(), "size_bytes": snapshot.manifest.size });
        emit(engine, Event::info("migration", "backup_completed").detail(detail).at(at)).await;
    }
    emit(engine, Event::info("migration", "migration_completed").detail(versions).duration_ms(ms)).await;
}

/// Serves `state` on `listener` until `shutdown` resolves, then records the stop.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let addr = listener.local_addr()?;
    tracing::info!(event = "listening", component = "app", addr = %addr);
    let engine = state.engine.clone();
    let app = app(state).into_make_service_with_connect_info::<std::net::SocketAddr>();
    // Without TCP_NODELAY a streamed answer's last small write (a chunked body's end) waits for
    // the client's delayed ACK of the one before: 40 ms on Linux (seen on DAV reports).
    let listener = axum::serve::ListenerExt::tap_io(listener, |connection: &mut tokio::net::TcpStream| {
        if let Err(e) = connection.set_nodelay(true) {
            tracing::debug!(event = "nodelay_unset", component = "app", error = %e);
        }
    });
    axum::serve(listener, app).with_graceful_shutdown(shutdown).await?;
    emit(&engine, Event::info("app", "application_stopped")).await;
    engine.shutdown();
    Ok(())
}

/// Uses `JWT_SECRET_KEY`, or the generated secret persisted in the data folder.
pub fn load_secret(config: &mut Config) -> anyhow::Result<()> {
    std::fs::create_dir_all(&config.data_dir)
        .with_context(|| format!("cannot create DATA_DIR {}", config.data_dir.display()))?;
    if config.jwt_secret.is_none() {
        let (secret, generated) = config::secret::load_or_generate(&config.data_dir)
            .context("JWT_SECRET_KEY is unset and the generated secret could not be used")?;
        if generated {
            tracing::warn!(
                event = "jwt_secret_generated",
                component = "app",
                path = %config::secret::path(&config.data_dir).display(),
                "JWT_SECRET_KEY is unset: generated a random key and saved it in the data folder (mode 0600); back it up with the data"
            );
        }
        config.jwt_secret = Some(secret);
    }
    Ok(())
}

/// The whole server: load config, open and migrate, bind, serve until SIGINT/SIGTERM.
pub async fn run(mut config: Config) -> anyhow::Result<()> {
    load_secret(&mut config)?;
    let shutdown = shutdown_signal()?;
    let engine = open_engine(&config).await?;
    let state = match AppState::build(engine.clone(), config).await {
        Ok(state) => state,
        Err(reason) => {
            engine.shutdown();
            anyhow::bail!("{reason}");
        }
    };
    let detail = json!({ "version": build_info::VERSION, "commit": build_info::COMMIT });
    emit(&engine, Event::info("app", "application_started").detail(detail)).await;
    let listener = match TcpListener::bind(state.config.bind_addr).await {
        Ok(listener) => listener,
        Err(e) => {
            engine.shutdown();
            return Err(anyhow::Error::new(e).context(format!("cannot listen on BIND_ADDR {}", state.config.bind_addr)));
        }
    };
    jobs::start(state.clone());
    // Bound before the server says it listens, so whoever waits for that finds the data folder settled.
    match backup::control::listen(&state.config.data_dir) {
        Ok(control) => {
            let state = state.clone();
            tokio::spawn(async move {
                if let Err(e) = backup::control::serve(control, state).await {
                    tracing::error!(event = "control_socket_failed", component = "backup", error = %e);
                }
            });
        }
        Err(e) => {
            tracing::error!(event = "control_socket_failed", component = "backup", error = %e, "`mycorrhizal backup` cannot reach this server; stop it to back up");
        }
    }
    serve(listener, state, shutdown).await
}

/// Re-wraps the data key from the configured master key to `new_key`.
pub async fn rewrap_data_key(mut config: Config, new_key: String) -> Result<(), String> {
    if new_key.len() < 32 {
        return Err("the new key must be at least 32 bytes".into());
    }
    load_secret(&mut config).map_err(|e| format!("{e:#}"))?;
    let engine = open_engine(&config).await.map_err(|e| format!("{e:#}"))?;
    let old = auth::keys::MasterKey::from_config(&config)?;
    let new = auth::keys::MasterKey::derive(new_key.as_bytes(), auth::keys::MasterSource::DataEncryptionKey);
    let result = auth::keys::rewrap(&engine, &old, &new).await;
    engine.shutdown();
    result
}

/// Installs the SIGINT and SIGTERM handlers now (so a signal that arrives before serving starts
/// is not lost to the default action) and returns a future that resolves on either.
pub fn shutdown_signal() -> anyhow::Result<impl Future<Output = ()> + Send + 'static> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt()).context("cannot install the SIGINT handler")?;
    let mut terminate = signal(SignalKind::terminate()).context("cannot install the SIGTERM handler")?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {},
            _ = terminate.recv() => {},
        }
        tracing::info!(event = "shutdown_requested", component = "app");
    })
}
