//! The one check of an identifier and a secret, for every door that takes a password: the
//! session sign-in (`signin::with_password`, for the JSON API and the web client) and HTTP Basic
//! on CardDAV/CalDAV. In order: the identifier normalised; the lockout and spray checks before
//! any password work; an API token of the door's scope in place of the password, where the door
//! takes one; one answer for an unknown account and a wrong password; every failure and success
//! counted by the limiters. What a second factor means is the door's word: the session sign-in
//! asks for it, DAV refuses a password alone (its clients cannot answer a challenge).
//! A password verified lately is recalled without hashing again ([`super::memo`]).

use std::net::IpAddr;

use mycorrhizal_engine::Engine;

use super::records::{Account, Scope};
use super::{Auth, Error, TOKEN_PREFIX, Via, accounts};

/// Who the credentials prove.
#[derive(Debug, Clone)]
pub struct Proven {
    pub id: u64,
    pub account: Account,
    /// By an API token (of the scope asked) rather than the password.
    pub by_token: bool,
}

impl Proven {
    /// Whether the account asks for a second factor after its password.
    pub fn needs_second_factor(&self) -> bool {
        !self.by_token && self.account.totp.as_ref().is_some_and(|t| t.enabled)
    }
}

/// Checks `identifier` (username or email) and `secret` for a caller at `ip`. With `token_scope`,
/// an API token of that scope whose account is the one named is taken in place of the password.
/// `InvalidCredentials` for every wrong answer; `RateLimited` before any work while locked out.
pub async fn check(
    auth: &Auth,
    engine: &Engine,
    identifier: &str,
    secret: String,
    ip: IpAddr,
    token_scope: Option<Scope>,
) -> Result<Proven, Error> {
    let identifier = identifier.trim().to_lowercase();
    if identifier.is_empty() {
        return Err(Error::invalid_input("identifier", "is required"));
    }
    if secret.is_empty() {
        return Err(Error::invalid_input("password", "is required"));
    }
    let limits = &auth.limits;
    limits
        .check_login(&identifier, ip)
        .map_err(|r| Error::RateLimited { retry_after: r.retry_after.as_secs().max(1), locked: r.locked })?;
    let proven = match token_scope {
        Some(scope) if secret.starts_with(TOKEN_PREFIX) => by_token(auth, engine, &identifier, &secret, scope).await,
        _ => by_password(auth, engine, &identifier, secret).await?,
    };
    match proven {
        Some(proven) => {
            limits.login_succeeded(&identifier, ip);
            Ok(proven)
        }
        None => {
            limits.login_failed(&identifier, ip, engine.clock().now());
            tracing::info!(event = "login_failed", component = "auth", result = "failure");
            Err(Error::InvalidCredentials)
        }
    }
}

async fn by_token(auth: &Auth, engine: &Engine, identifier: &str, token: &str, scope: Scope) -> Option<Proven> {
    let user = auth.authenticate(engine, token).await.ok()?;
    let named = user.account.username.to_lowercase() == identifier || user.account.email.to_lowercase() == identifier;
    let of_scope = matches!(user.via, Via::ApiToken { scope: s, .. } if s == scope);
    (of_scope && named).then_some(Proven { id: user.id.0, account: user.account, by_token: true })
}

async fn by_password(
    auth: &Auth,
    engine: &Engine,
    identifier: &str,
    password: String,
) -> Result<Option<Proven>, Error> {
    let key = auth.memo.key(identifier, &password);
    let found = accounts::find(engine, identifier).await?;
    if let Some((id, account)) = &found
        && auth.memo.recalls(&key, *id, account)
    {
        return Ok(Some(Proven { id: *id, account: account.clone(), by_token: false }));
    }
    // Unknown accounts are verified against a dummy hash: the same work, the same answer.
    let hash = found.as_ref().and_then(|(_, a)| a.password_hash.clone());
    if !auth.hasher.verify(password, hash).await {
        return Ok(None);
    }
    Ok(found.map(|(id, account)| {
        auth.memo.remember(key, id, &account);
        Proven { id, account, by_token: false }
    }))
}
