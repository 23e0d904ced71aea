//! The state every handler receives: the engine, the configuration and the shared services,
//! each built once at start-up.

use std::sync::Arc;
use std::time::Duration;

use mycorrhizal_engine::Engine;

use crate::auth::Auth;
use crate::auth::breach::BreachCheck;
use crate::auth::oidc::OidcClient;
use crate::config::Config;
use crate::error::ApiError;
use crate::notify::email::Mailer;

#[derive(Clone)]
pub struct AppState {
    pub engine: Engine,
    pub config: Arc<Config>,
    pub auth: Arc<Auth>,
    /// The one outbound HTTP client (connection pool shared by every integration).
    pub http: reqwest::Client,
    pub breach_check: BreachCheck,
    pub mailer: Mailer,
    /// The single sign-on client, when `OIDC_*` is configured.
    pub oidc: Option<Arc<OidcClient>>,
}

impl AppState {
    /// Builds the services. Fails (refusing boot) when the data key cannot be unwrapped.
    pub async fn build(engine: Engine, config: Config) -> Result<AppState, String> {
        let auth = Auth::new(&engine, &config).await?;
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(30))
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("mycorrhizal/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        let breach_check = BreachCheck::new(http.clone(), config.auth.hibp_api_url.clone());
        let mailer = Mailer::new(config.auth.email.clone(), http.clone());
        let oidc = config.auth.oidc.clone().map(|oidc| {
            let frontend = config.auth.frontend_url.clone().unwrap_or_default();
            let redirect_uri = format!("{}/api/v1/auth/oidc/callback", frontend.trim_end_matches('/'));
            let block = config.features.oidc_block_private_urls;
            Arc::new(OidcClient::new(oidc, config.auth.oidc_scopes.clone(), redirect_uri, block, http.clone()))
        });
        Ok(AppState { engine, config: Arc::new(config), auth: Arc::new(auth), http, breach_check, mailer, oidc })
    }

    /// Runs blocking engine work (redb reads, snapshots) off the async threads.
    pub async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Engine) -> T + Send + 'static,
    ) -> Result<T, ApiError> {
        let engine = self.engine.clone();
        tokio::task::spawn_blocking(move || work(&engine)).await.map_err(ApiError::internal)
    }
}
