//! Accounts and authentication, the accounts domain: who is calling, and may they.
//!
//! [`Auth`] holds the signing key, the password hasher, the unwrapped data key, the cookie
//! policy and the limiters. Sessions are server-side rows named in the JWT (`sid`), so logging
//! out or bumping the account's token version ends them for real. Operations answer typed views
//! ([`view`]) or [`Error`], never HTTP: the extractors that turn a request into a user
//! (`http::caller`) and the sign-in gate (`http::gate`) are the front doors' plumbing.

pub mod accounts;
pub mod breach;
pub mod credentials;
pub mod devices;
pub mod error;
pub mod limits;
pub mod memo;
pub mod oidc;
pub mod password;
pub mod records;
pub mod second_factor;
pub mod session;
pub mod signin;
pub mod tokens;
pub mod totp;
pub mod view;

use jiff::{SignedDuration, Timestamp};
use mycorrhizal_engine::{Engine, UserId};

use crate::config::Config;
pub use error::Error;
use records::{Account, ApiToken, Scope, Session, sha256_hex};
use session::{Claims, CookiePolicy, Signer};

/// The prefix that marks an API token (anything else in a bearer header is a JWT).
pub const TOKEN_PREFIX: &str = "mycorrhizal_";
/// How often `last_seen_at` / `last_used_at` are written at most (each write is a commit).
const TOUCH_EVERY: SignedDuration = SignedDuration::from_secs(60);

pub struct Auth {
    pub signer: Signer,
    pub hasher: password::Hasher,
    pub data_key: crate::keys::DataKey,
    pub cookies: CookiePolicy,
    /// Absolute session lifetime (`JWT_EXPIRY_HOURS`).
    pub session_lifetime: SignedDuration,
    /// A session unused this long ends (`SESSION_IDLE_TIMEOUT_HOURS`).
    pub idle_timeout: SignedDuration,
    pub limits: limits::Limits,
    /// Passwords verified lately ([`memo`]).
    pub memo: memo::Memo,
    /// The breached-password check, when `HIBP_CHECK_ENABLED`.
    pub breach: Option<breach::BreachCheck>,
    /// The accounts' settings: registration, the front end's URL, single sign-on.
    pub settings: crate::config::Auth,
    /// Whether account mail (reset links, password-changed notices) can go out.
    pub sends_mail: bool,
    /// Wakes the outbox's delivery worker once an account mail is queued.
    pub outbox: std::sync::Arc<crate::outbox::Signal>,
    /// `DATA_DIR`: files an earlier version kept per user are removed with the account.
    pub data_dir: std::path::PathBuf,
}

/// A request's authenticated caller.
#[derive(Debug, Clone)]
pub struct AuthUser {
    pub id: UserId,
    pub account: Account,
    pub via: Via,
}

/// How the caller authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    Session { sid: u64 },
    ApiToken { id: u64, scope: Scope },
}

impl Auth {
    /// Builds the service; fails (refusing boot) when the data key cannot be unwrapped. `http`
    /// is the shared outbound client (the breached-password check), `outbox` the delivery
    /// worker's wake-up.
    pub async fn new(
        engine: &Engine,
        config: &Config,
        http: reqwest::Client,
        outbox: std::sync::Arc<crate::outbox::Signal>,
    ) -> Result<Auth, crate::keys::Error> {
        let secret = config.jwt_secret.as_ref().ok_or(crate::keys::Error::NoSecret)?;
        let master = crate::keys::MasterKey::from_config(config)?;
        let data_key = crate::keys::DataKey::load_or_create(engine, &master).await?;
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
        Ok(Auth {
            signer: Signer::new(secret.expose().as_bytes()),
            hasher: password::Hasher::new(cores),
            data_key,
            cookies: CookiePolicy { secure: config.auth.cookie_secure, domain: config.auth.cookie_domain.clone() },
            session_lifetime: SignedDuration::from_hours(config.auth.jwt_expiry_hours as i64),
            idle_timeout: SignedDuration::from_hours(config.auth.session_idle_hours as i64),
            limits: limits::Limits::new(config.spray.clone(), &config.rates),
            memo: memo::Memo::default(),
            breach: config
                .features
                .hibp_check_enabled
                .then(|| breach::BreachCheck::new(http, config.auth.hibp_api_url.clone())),
            settings: config.auth.clone(),
            sends_mail: !matches!(config.auth.email, crate::config::Email::Disabled),
            outbox,
            data_dir: config.data_dir.clone(),
        })
    }

    /// Creates a server-side session and returns its JWT and `Set-Cookie` value.
    pub async fn start_session(
        &self,
        engine: &Engine,
        user_id: u64,
        account: &Account,
        sso: bool,
    ) -> Result<(String, String), Error> {
        let now = engine.clock().now();
        let expires_at = now.checked_add(self.session_lifetime).map_err(Error::internal)?;
        let session = Session { user_id, created_at: now, last_seen_at: now, expires_at, sso };
        // Ended sessions are swept by the daily retention purge, not on every sign-in.
        let sid = engine.write_async(move |tx| tx.global().insert(&session)).await?;
        let claims = Claims {
            user_id,
            username: account.username.clone(),
            token_version: account.token_version,
            authorized: true,
            exp: expires_at.as_second(),
            iat: now.as_second(),
            sid: Some(sid),
            purpose: None,
        };
        let token = self.signer.sign(&claims);
        let cookie = self.cookies.cookie(session::COOKIE, &token, self.session_lifetime.as_secs());
        Ok((token, cookie))
    }

    /// Resolves a bearer value (cookie or header) to the caller.
    pub async fn authenticate(&self, engine: &Engine, token: &str) -> Result<AuthUser, Error> {
        if token.starts_with(TOKEN_PREFIX) {
            self.authenticate_api_token(engine, token).await
        } else {
            self.authenticate_session(engine, token).await
        }
    }

    async fn authenticate_session(&self, engine: &Engine, token: &str) -> Result<AuthUser, Error> {
        let claims = self.signer.verify(token, engine.clock().now().as_second()).map_err(|e| e.refusal())?;
        if claims.purpose.is_some() || !claims.authorized {
            return Err(Error::Unauthorized("Invalid token"));
        }
        let sid = claims.sid.ok_or(Error::Unauthorized("Invalid token"))?;
        let (user_id, token_version) = (claims.user_id, claims.token_version);
        // Read here, by key: see `read_global`.
        let (account, session) = read_global(engine, |view| -> Result<(Account, Session), Error> {
            let account: Account = view.get(user_id).map_err(|_| Error::Unauthorized("Invalid token"))?;
            if account.token_version != token_version {
                return Err(Error::Unauthorized("Session expired, please sign in again"));
            }
            let session: Session =
                view.get(sid).map_err(|_| Error::Unauthorized("Session expired, please sign in again"))?;
            Ok((account, session))
        })?;
        let now = engine.clock().now();
        if session.user_id != claims.user_id {
            return Err(Error::Unauthorized("Invalid token"));
        }
        let idle_end = session.last_seen_at.checked_add(self.idle_timeout).unwrap_or(Timestamp::MAX);
        if now >= session.expires_at || now >= idle_end {
            let _ = engine.write_async(move |tx| tx.global().delete::<Session>(sid).map(|_| ())).await;
            return Err(Error::TokenExpired("Session expired, please sign in again"));
        }
        if now.duration_since(session.last_seen_at) > TOUCH_EVERY {
            let engine = engine.clone();
            tokio::spawn(async move {
                let _ = engine
                    .write_async(move |tx| {
                        let mut current: Session = tx.global().get(sid)?;
                        current.last_seen_at = now;
                        tx.global().put(sid, &current)
                    })
                    .await;
            });
        }
        Ok(AuthUser { id: UserId(claims.user_id), account, via: Via::Session { sid } })
    }

    async fn authenticate_api_token(&self, engine: &Engine, token: &str) -> Result<AuthUser, Error> {
        let hash = sha256_hex(token);
        let now = engine.clock().now();
        // Read here, by key: see `read_global`.
        let (id, record, account) = read_global(engine, |view| -> Result<_, Error> {
            let (id, record) = view.find::<ApiToken>("hash", &hash)?.ok_or(Error::Unauthorized("Invalid token"))?;
            if record.revoked_at.is_some() {
                return Err(Error::Unauthorized("Invalid token"));
            }
            if record.expires_at <= now {
                return Err(Error::TokenExpired("Token expired"));
            }
            let account: Account = view.get(record.user_id).map_err(|_| Error::Unauthorized("Invalid token"))?;
            Ok((id, record, account))
        })?;
        if record.last_used_at.is_none_or(|t| now.duration_since(t) > TOUCH_EVERY) {
            let engine = engine.clone();
            tokio::spawn(async move {
                let _ = engine
                    .write_async(move |tx| {
                        let mut current: ApiToken = tx.global().get(id)?;
                        current.last_used_at = Some(now);
                        tx.global().put(id, &current)
                    })
                    .await;
            });
        }
        Ok(AuthUser { id: UserId(record.user_id), account, via: Via::ApiToken { id, scope: record.scope } })
    }

    /// Ends one server-side session; returns it when it existed.
    pub async fn end_session(&self, engine: &Engine, sid: u64) -> Option<Session> {
        engine.write_async(move |tx| tx.global().delete::<Session>(sid)).await.ok()
    }
}

/// The caller's account and session (or API token), read by key on the async thread that serves
/// the request, as [`crate::state::AppState::read_keyed`] does and for the same reason: every
/// request reads them, and a hop to the blocking pool costs more than the read.
fn read_global<T>(
    engine: &Engine,
    work: impl FnOnce(&mycorrhizal_engine::GlobalView) -> Result<T, Error>,
) -> Result<T, Error> {
    work(&engine.global()?)
}
