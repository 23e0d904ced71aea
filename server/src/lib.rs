//! The Mycorrhizal server: configuration, start-up, HTTP and operations over the engine.
//!
//! Start-up order is fixed: config -> open database -> pre-migration snapshot -> migrations ->
//! bind the listener. Nothing listens while migrations run.

pub mod account_removal;
pub mod alerts;
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
pub mod database;
pub mod dav;
pub mod diagnostics;
pub mod error;
pub mod http;
pub mod import_cli;
pub mod integrations;
pub mod integrity;
pub mod jobs;
pub mod keys;
pub mod maintenance;
pub mod metrics;
pub mod notify;
pub mod ops;
pub mod outbound;
pub mod outbox;
pub mod reach;
pub mod release;
pub mod restore;
pub mod retention;
pub mod state;
pub mod status;
pub mod sync;
pub mod telemetry;
pub mod web;

/// mimalloc instead of the system allocator: parsing, JSON and indexing allocate many small
/// values, and glibc's malloc and free were about a quarter of an import's profile. Set here (not
/// only in `main.rs`) so the benches and tests that link this crate measure what runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::future::Future;

use anyhow::Context;
use ops::events::{Event, emit};
use serde_json::json;
use tokio::net::TcpListener;

pub use config::Config;
pub use database::open_engine;
pub use state::AppState;

/// What the shared HTTP stack needs to know of the front doors (it imports none of them).
const DOORS: http::Doors =
    http::Doors { buckets: &[("dav", dav::is_dav_path, dav::rate)], not_found_page: web::not_found_for };

/// The whole application: every front door's routes under the shared HTTP stack.
pub fn app(state: AppState) -> axum::Router {
    let routes = api::router(&state.config).merge(web::router(&state)).merge(dav::router(&state));
    dav::at_root(http::serve(routes, state.clone(), DOORS), &state)
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
    let built = match database::ready_to_serve(&engine).await {
        Ok(()) => AppState::build(engine.clone(), config).await.map_err(anyhow::Error::msg),
        Err(e) => Err(e),
    };
    let state = match built {
        Ok(state) => state,
        Err(reason) => {
            engine.shutdown();
            return Err(reason);
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
    let old = keys::MasterKey::from_config(&config).map_err(|e| e.to_string())?;
    let new = keys::MasterKey::derive(new_key.as_bytes(), keys::MasterSource::DataEncryptionKey);
    let result = keys::rewrap(&engine, &old, &new).await;
    engine.shutdown();
    result.map_err(|e| e.to_string())
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
