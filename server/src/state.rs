//! The state every handler receives: the engine, the configuration and the shared services,
//! each built once at start-up.

use std::sync::Arc;
use std::time::Duration;

use mycorrhizal_engine::Engine;

use crate::auth::Auth;
use crate::auth::oidc::OidcClient;
use crate::config::Config;
use crate::notify::Notifier;
use crate::notify::email::Mailer;
use crate::notify::webhooks::OutboxHook;
use crate::ops::events::{Event, emit};
use crate::outbox::{Outbox, Signal};

#[derive(Clone)]
pub struct AppState {
    pub engine: Engine,
    pub config: Arc<Config>,
    pub auth: Arc<Auth>,
    /// The one outbound HTTP client (connection pool shared by every integration).
    pub http: reqwest::Client,
    /// The single sign-on client, when `OIDC_*` is configured.
    pub oidc: Option<Arc<OidcClient>>,
    /// Open import sessions (in memory, 15 minutes; lost on restart, as the spec says).
    pub imports: Arc<crate::crm::import::Sessions>,
    /// Notifications and the outbox: mail, mobile and web push, webhooks, the delivery side
    /// and the change hook that queues webhook events inside each write's transaction.
    pub notify: Arc<Notifier>,
}

impl AppState {
    /// Builds the services, once the record kinds' indexes are up to date. Fails (refusing boot)
    /// when an index backfill fails or the data key cannot be unwrapped.
    pub async fn build(engine: Engine, config: Config) -> Result<AppState, String> {
        ensure_indexes(&engine).await?;
        // A pending side written by an earlier version moves to the outbox's index by lane.
        crate::outbox::adopt_pending(&engine).await.map_err(|e| format!("cannot read the outbox: {e}"))?;
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(30))
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("mycorrhizal/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        let mailer = Mailer::new(config.auth.email.clone(), http.clone());
        let signal = Arc::new(Signal::default());
        let auth = Auth::new(&engine, &config, http.clone(), signal.clone()).await.map_err(|e| e.to_string())?;
        let oidc = config.auth.oidc.clone().map(|oidc| {
            let frontend = config.auth.frontend_url.clone().unwrap_or_default();
            let redirect_uri = format!("{}/api/v1/auth/oidc/callback", frontend.trim_end_matches('/'));
            let block = config.features.oidc_block_private_urls;
            Arc::new(OidcClient::new(oidc, config.auth.oidc_scopes.clone(), redirect_uri, block, http.clone()))
        });
        let users = {
            let engine = engine.clone();
            tokio::task::spawn_blocking(move || OutboxHook::load(&engine))
                .await
                .map_err(|e| e.to_string())?
                .map_err(|e| format!("cannot read the webhooks: {e}"))?
        };
        let hook = Arc::new(OutboxHook::new(users, signal.clone()));
        if !engine.set_change_hook(hook.clone()) {
            return Err("the engine already has a change hook (one AppState per engine)".into());
        }
        let timeout = Duration::from_secs(config.features.webhook_timeout_seconds);
        let client = crate::outbound::guarded_client(config.features.webhook_block_private_urls, timeout)?;
        let outbox = Outbox { signal, client };
        let fcm = match config.fcm.clone() {
            Some(account) => {
                Some(Arc::new(crate::notify::fcm_client::FcmClient::new(account).map_err(|e| e.to_string())?))
            }
            None => None,
        };
        let notify = Arc::new(Notifier {
            engine: engine.clone(),
            data_key: auth.data_key.clone(),
            features: config.features.clone(),
            reminder_timezone: config.reminder_timezone.clone(),
            mailer,
            fcm,
            http: http.clone(),
            outbox,
            hook,
        });
        Ok(AppState {
            notify,
            engine,
            config: Arc::new(config),
            auth: Arc::new(auth),
            http,
            oidc,
            imports: Arc::default(),
        })
    }

    /// The signed-in user's data: every read and write of a request goes through this scope.
    pub fn scope(&self, user: &crate::auth::AuthUser) -> mycorrhizal_engine::UserScope {
        self.engine.user(user.id)
    }

    /// "Today" for every date decision: the one server clock in `REMINDER_TIMEZONE`.
    pub fn today(&self) -> jiff::civil::Date {
        crate::crm::calendar::today(self.engine.clock().now(), &self.config.reminder_timezone)
    }

    /// Reads the user's data off the async threads: `work` gets one read transaction of the
    /// user's scope. Every request-time read goes through here (redb blocks).
    pub async fn read<T: Send + 'static>(
        &self,
        user: &crate::auth::AuthUser,
        work: impl FnOnce(&mycorrhizal_engine::UserView) -> crate::crm::Result<T> + Send + 'static,
    ) -> crate::crm::Result<T> {
        let scope = self.scope(user);
        Ok(self.blocking(move |_| scope.view().map_err(crate::crm::Error::from).and_then(|v| work(&v))).await??)
    }

    /// Runs blocking engine work (redb reads, snapshots) off the async threads.
    pub async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Engine) -> T + Send + 'static,
    ) -> crate::crm::Result<T> {
        crate::crm::blocking(&self.engine, work).await
    }
}

/// Derives the index entries of every record kind whose index set changed since this database was
/// last opened (`Record::INDEX_VERSION`; see the engine's `reindex`), before anything is served,
/// and records each backfill in the system timeline.
async fn ensure_indexes(engine: &Engine) -> Result<(), String> {
    let handle = engine.clone();
    let report = tokio::task::spawn_blocking(move || handle.ensure_indexes(&crate::crm::record_kinds()))
        .await
        .map_err(|e| format!("index backfill: {e}"))?
        .map_err(|e| {
            tracing::error!(event = "reindex_failed", component = "migration", error = %e);
            format!("cannot bring the indexes up to date: {e}")
        })?;
    if let Some(snapshot) = &report.snapshot {
        let detail = serde_json::json!({ "operation": "pre_reindex_snapshot", "tables": snapshot.manifest.tables.len(), "size_bytes": snapshot.manifest.size });
        emit(engine, Event::info("migration", "backup_completed").detail(detail)).await;
    }
    for kind in report.kinds.iter().filter(|k| k.rows > 0) {
        let detail = serde_json::json!({ "kind": kind.kind, "from_version": kind.from, "to_version": kind.to, "rows": kind.rows });
        emit(engine, Event::info("migration", "index_backfilled").detail(detail).duration_ms(kind.duration_ms)).await;
    }
    Ok(())
}
