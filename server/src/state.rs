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
    /// Whether the outside systems the configuration names answer (cached 30 s).
    pub reach: Arc<crate::reach::Reach>,
    /// When this process built its state (uptime; the baseline of a job never run yet).
    pub started_at: jiff::Timestamp,
    /// Subscriptions to remote address books and calendars: who is syncing now.
    pub sync: crate::sync::run::Syncer,
    /// The users' photo library, document archive, file library and WebDAV connections.
    pub integrations: crate::integrations::Integrations,
}

impl AppState {
    /// Builds the services over an engine `database::ready_to_serve` has prepared. Fails
    /// (refusing boot) when the data key cannot be unwrapped or a service cannot be built.
    pub async fn build(engine: Engine, config: Config) -> Result<AppState, String> {
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
        let engine_now = engine.clock().now();
        let reach = Arc::new(crate::reach::Reach::of(&config, http.clone()));
        let sync = crate::sync::run::Syncer::new(
            engine.clone(),
            auth.data_key.clone(),
            config.features.caldav_block_private_urls,
            Duration::from_secs(config.features.caldav_sync_interval_hours * 3600),
        );
        let root_secret = config.jwt_secret.as_ref().map(|s| s.expose().to_string()).unwrap_or_default();
        let integrations = crate::integrations::Integrations::new(engine.clone(), auth.data_key.clone(), &root_secret)?;
        let imports = Arc::new(crate::crm::import::Sessions::in_dir(config.data_dir.clone()));
        Ok(AppState {
            sync,
            integrations,
            notify,
            engine,
            config: Arc::new(config),
            auth: Arc::new(auth),
            http,
            oidc,
            imports,
            started_at: engine_now,
            reach,
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
    /// user's scope. Every request-time read goes through here (redb blocks), but for the few
    /// keyed reads of [`AppState::read_keyed`].
    pub async fn read<T: Send + 'static>(
        &self,
        user: &crate::auth::AuthUser,
        work: impl FnOnce(&mycorrhizal_engine::UserView) -> crate::crm::Result<T> + Send + 'static,
    ) -> crate::crm::Result<T> {
        let scope = self.scope(user);
        Ok(self.blocking(move |_| scope.view().map_err(crate::crm::Error::from).and_then(|v| work(&v))).await??)
    }

    /// Reads a handful of rows by key on the async thread that serves the request (the caller's
    /// session, one contact): such reads take microseconds from the page cache, while a hop to
    /// the blocking pool and back costs two thread switches; on a small box those switches were
    /// most of a GET's time (#55 item 1, BENCHMARKS.md "Load"). Scans, lists, searches and
    /// anything that may read many pages go through [`AppState::read`] or
    /// [`AppState::blocking`], where a read from disk cannot stall the async threads.
    pub fn read_keyed<T>(&self, work: impl FnOnce(&Engine) -> T) -> T {
        work(&self.engine)
    }

    /// Runs blocking engine work (redb reads, snapshots) off the async threads.
    pub async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Engine) -> T + Send + 'static,
    ) -> crate::crm::Result<T> {
        crate::crm::blocking(&self.engine, work).await
    }
}
