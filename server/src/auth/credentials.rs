//! The one check of an identifier and a secret, for every door that takes a password: the
//! session sign-in (`signin::with_password`, for the JSON API and the web client) and HTTP Basic
//! on CardDAV/CalDAV. In order: the identifier normalised; the lockout and spray checks before
//! any password work; an API token of the door's scope in place of the password, where the door
//! takes one; one answer for an unknown account and a wrong password; every failure and success
//! counted by the limiters. What a second factor means is the door's word: the session sign-in
//! asks for it, DAV refuses a password alone (its clients cannot answer a challenge).
//!
//! A password verified in the last [`REMEMBER`] is recalled without hashing again (a DAV client
//! sends it with every request; argon2 costs tens of milliseconds of a core), as long as the
//! account's token version and password hash are unchanged. The memo is keyed by a digest
//! salted per process, so it says nothing outside it.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mycorrhizal_engine::Engine;
use sha2::{Digest, Sha256};

use super::records::{Account, Scope};
use super::{Auth, Error, TOKEN_PREFIX, Via, accounts};

/// How long a verified password is recalled.
pub const REMEMBER: Duration = Duration::from_secs(15 * 60);
/// Past this many remembered entries, expired ones are dropped.
const MEMO_PRUNE_AT: usize = 10_000;

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

/// Passwords verified lately (see the module's note).
pub struct Memo {
    entries: Mutex<HashMap<[u8; 32], Remembered>>,
    salt: [u8; 32],
}

#[derive(Clone)]
struct Remembered {
    user: u64,
    token_version: u64,
    password_hash: Option<String>,
    until: Instant,
}

impl Default for Memo {
    fn default() -> Self {
        let mut salt = [0u8; 32];
        let _ = getrandom::fill(&mut salt);
        Memo { entries: Mutex::default(), salt }
    }
}

impl Memo {
    fn key(&self, identifier: &str, password: &str) -> [u8; 32] {
        let mut hash = Sha256::new();
        hash.update(self.salt);
        hash.update(identifier.as_bytes());
        hash.update([0]);
        hash.update(password.as_bytes());
        hash.finalize().into()
    }

    /// Whether `password` was verified for `id` lately and the account has not changed since.
    fn recalls(&self, key: &[u8; 32], id: u64, account: &Account) -> bool {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.get(key).is_some_and(|r| {
            r.until > Instant::now()
                && r.user == id
                && r.token_version == account.token_version
                && r.password_hash == account.password_hash
        })
    }

    fn remember(&self, key: [u8; 32], id: u64, account: &Account) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        if entries.len() > MEMO_PRUNE_AT {
            entries.retain(|_, r| r.until > now);
        }
        let entry = Remembered {
            user: id,
            token_version: account.token_version,
            password_hash: account.password_hash.clone(),
            until: now + REMEMBER,
        };
        entries.insert(key, entry);
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
            limits.login_failed(&identifier, ip);
            tracing::info!(event = "login_failed", component = "auth", result = "failure");
            Err(Error::InvalidCredentials)
        }
    }
}

async fn by_token(auth: &Auth, engine: &Engine, identifier: &str, token: &str, scope: Scope) -> Option<Proven> {
    let user = auth.authenticate(engine, token).await.ok()?;
    let named = user.account.username.to_lowercase() == identifier || user.account.email.to_lowercase() == identifier;
    (matches!(user.via, Via::ApiToken { scope: s, .. } if s == scope) && named).then(|| Proven {
        id: user.id.0,
        account: user.account,
        by_token: true,
    })
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
