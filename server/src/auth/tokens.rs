//! API tokens: `mycorrhizal_<random>` bearer secrets for scripts and sync clients, shown once,
//! stored as SHA-256, always expiring. Each operation here is what every front door calls (the
//! JSON API's `/api-tokens` and `/admin/api-tokens`, the web client's settings page); a user only
//! ever reaches their own tokens: another user's id is not found.

use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::Error;
use super::records::{ApiToken, Scope, random_token, sha256_hex};
use super::{TOKEN_PREFIX, accounts};
use mycorrhizal_engine::Engine;

#[derive(Deserialize, ToSchema)]
pub struct NewToken {
    pub name: String,
    /// 1 to 365, default 90. There is no never-expiring token.
    pub expires_in_days: Option<i64>,
    /// `full` (default) or `carddav`.
    #[schema(value_type = Option<String>)]
    pub scope: Option<Scope>,
}

/// A token as listed: never the secret.
#[derive(Serialize, ToSchema)]
pub struct TokenView {
    pub id: u64,
    pub name: String,
    #[schema(value_type = String)]
    pub scope: Scope,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Timestamp,
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_used_at: Option<Timestamp>,
    #[schema(value_type = String, format = DateTime)]
    pub expires_at: Timestamp,
    #[schema(value_type = Option<String>, format = DateTime)]
    pub revoked_at: Option<Timestamp>,
}

impl TokenView {
    pub fn from(id: u64, t: &ApiToken) -> Self {
        TokenView {
            id,
            name: t.name.clone(),
            scope: t.scope,
            created_at: t.created_at,
            last_used_at: t.last_used_at,
            expires_at: t.expires_at,
            revoked_at: t.revoked_at,
        }
    }
}

/// A token as its creation (or rotation) answers it: the view and, shown only here, the
/// plaintext `token`.
#[derive(Serialize, ToSchema)]
pub struct TokenCreated {
    #[serde(flatten)]
    pub view: TokenView,
    /// The bearer secret (`mycorrhizal_...`); only its SHA-256 is kept.
    pub token: String,
}

/// `{tokens}`: the caller's tokens, revoked and expired ones included.
#[derive(Serialize, ToSchema)]
pub struct TokenList {
    pub tokens: Vec<TokenView>,
}

/// `{revoked}`: how many tokens a revoke-all ended.
#[derive(Debug, Serialize, ToSchema)]
pub struct TokensRevoked {
    pub revoked: u64,
}

/// A token just made: its view and the plaintext, which is never shown again.
pub struct Minted {
    pub view: TokenView,
    pub plaintext: String,
}

fn mint(
    user_id: u64,
    name: String,
    scope: Scope,
    lifetime: SignedDuration,
    now: Timestamp,
) -> Result<(ApiToken, String), Error> {
    let plaintext = format!("{TOKEN_PREFIX}{}", random_token(32));
    let token = ApiToken {
        user_id,
        name,
        hash: sha256_hex(&plaintext),
        scope,
        created_at: now,
        last_used_at: None,
        expires_at: now.checked_add(lifetime).map_err(Error::internal)?,
        revoked_at: None,
    };
    Ok((token, plaintext))
}

/// A new token of `user_id`, named 1 to 100 characters, expiring in 1 to 365 days (default 90).
pub async fn create(engine: &Engine, user_id: u64, new: NewToken) -> Result<Minted, Error> {
    let name = new.name.trim().to_string();
    if name.is_empty() || name.chars().count() > 100 {
        return Err(Error::validation("name", "must be 1 to 100 characters"));
    }
    let days = new.expires_in_days.unwrap_or(90);
    if !(1..=365).contains(&days) {
        return Err(Error::validation("expires_in_days", "must be 1 to 365"));
    }
    let scope = new.scope.unwrap_or(Scope::Full);
    let (token, plaintext) = mint(user_id, name, scope, SignedDuration::from_hours(days * 24), engine.clock().now())?;
    let stored = token.clone();
    let id = engine.write_async(move |tx| tx.global().insert(&stored)).await?;
    Ok(Minted { view: TokenView::from(id, &token), plaintext })
}

/// Every token of `user_id`, revoked and expired ones included.
pub async fn list(engine: &Engine, user_id: u64) -> Result<Vec<TokenView>, Error> {
    let tokens = super::accounts::read(engine, |view| Ok(view.list::<ApiToken>()?)).await?;
    Ok(tokens.iter().filter(|(_, t)| t.user_id == user_id).map(|(id, t)| TokenView::from(*id, t)).collect())
}

/// Revokes token `id` of `user_id` (idempotent).
pub async fn revoke(engine: &Engine, user_id: u64, id: u64) -> Result<(), Error> {
    engine
        .write_async(move |tx| {
            let mut token: ApiToken = tx.global().get(id)?;
            if token.user_id != user_id {
                return Err(mycorrhizal_engine::Error::NotFound);
            }
            if token.revoked_at.is_none() {
                token.revoked_at = Some(tx.now());
                tx.global().put(id, &token)?;
            }
            Ok(())
        })
        .await?;
    Ok(())
}

/// Replaces token `id` in one transaction: the old one dies at once, the new one has the same
/// name, scope and lifetime.
pub async fn rotate(engine: &Engine, user_id: u64, id: u64) -> Result<Minted, Error> {
    let now = engine.clock().now();
    let (new_id, token, plaintext) = engine
        .write_async(move |tx| {
            let mut old: ApiToken = tx.global().get(id)?;
            if old.user_id != user_id {
                return Err(mycorrhizal_engine::Error::NotFound);
            }
            if old.revoked_at.is_some() {
                return Ok(Err(Error::Conflict("This token is revoked; create a new one".into())));
            }
            let lifetime = old.expires_at.duration_since(old.created_at);
            let (token, plaintext) = match mint(user_id, old.name.clone(), old.scope, lifetime, now) {
                Ok(m) => m,
                Err(e) => return Ok(Err(e)),
            };
            old.revoked_at = Some(now);
            tx.global().put(id, &old)?;
            let new_id = tx.global().insert(&token)?;
            Ok(Ok((new_id, token, plaintext)))
        })
        .await??;
    Ok(Minted { view: TokenView::from(new_id, &token), plaintext })
}

/// Revokes every token of `user_id`; returns how many were live.
pub async fn revoke_all(engine: &Engine, user_id: u64) -> Result<u64, Error> {
    Ok(engine.write_async(move |tx| accounts::revoke_tokens_of(tx, user_id, tx.now())).await?)
}
