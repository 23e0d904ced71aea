//! Signing in and out, once for every front door: the JSON API (`api::auth`) and the web client
//! (`web::auth`) call these and only translate the outcome (a JSON body or a redirect).
//!
//! The rules live here: the lockout and spray checks before any password work, one answer for an
//! unknown account and a wrong password, the short-lived `2fa_pending` cookie when a second
//! factor is on, and the session started only once every factor passed.

use std::net::IpAddr;

use super::Error;
use super::oidc::OidcClient;
use super::records::{Account, ResetToken, random_token, sha256_hex};
use super::session::{self, Claims};
use super::{accounts, credentials, second_factor};
use crate::outbox::{self, Target};
use mycorrhizal_engine::Engine;

use super::Auth;

/// What a correct password leads to.
pub enum SignIn {
    /// Signed in: the session cookie to set.
    Session { account: Account, cookie: String },
    /// A second factor is on: this `2fa_pending` cookie carries the half-done sign-in.
    SecondFactor { pending_cookie: String },
}

/// Creates an account through self-service registration, refused while `DISABLE_REGISTRATION`
/// is on. The first account of a fresh instance is its admin (`accounts::create`).
pub async fn register(auth: &Auth, engine: &Engine, new: accounts::NewAccount) -> Result<(u64, Account), Error> {
    if auth.settings.disable_registration {
        return Err(Error::Forbidden("Registration is disabled.".into()));
    }
    let (id, account) = accounts::create(auth, engine, new).await?;
    tracing::info!(event = "account_registered", component = "auth", user_id = id, is_admin = account.is_admin);
    Ok((id, account))
}

/// Checks `identifier` (username or email) and `password` for a caller at `ip`.
pub async fn with_password(
    auth: &Auth,
    engine: &Engine,
    identifier: &str,
    password: String,
    ip: IpAddr,
) -> Result<SignIn, Error> {
    let proven = credentials::check(auth, engine, identifier, password, ip, None).await?;
    let (id, account) = (proven.id, proven.account.clone());
    if proven.needs_second_factor() {
        let now = engine.clock().now().as_second();
        let claims = Claims {
            user_id: id,
            username: account.username.clone(),
            token_version: account.token_version,
            authorized: false,
            exp: now + session::PENDING_SECONDS,
            iat: now,
            sid: None,
            purpose: Some("2fa".into()),
        };
        let pending_cookie =
            auth.cookies.cookie(session::PENDING_COOKIE, &auth.signer.sign(&claims), session::PENDING_SECONDS);
        return Ok(SignIn::SecondFactor { pending_cookie });
    }
    let (_, cookie) = auth.start_session(engine, id, &account, false).await?;
    tracing::info!(event = "login_succeeded", component = "auth", user_id = id, result = "success");
    Ok(SignIn::Session { account, cookie })
}

/// Completes a sign-in waiting for its second factor with `code` (a TOTP code or a recovery
/// code), `pending` the request's `2fa_pending` cookie. Returns the account and the cookies to set
/// (the session, and the pending one cleared).
pub async fn with_second_factor(
    auth: &Auth,
    engine: &Engine,
    pending: Option<String>,
    code: &str,
) -> Result<(Account, Vec<String>), Error> {
    let pending = pending.ok_or(Error::Unauthorized("No sign-in is waiting for a second factor"))?;
    let claims = auth.signer.verify(&pending, engine.clock().now().as_second()).map_err(|e| e.refusal())?;
    if claims.purpose.as_deref() != Some("2fa") {
        return Err(Error::Unauthorized("Invalid token"));
    }
    let user_id = claims.user_id;
    let account: Account =
        accounts::read(engine, move |view| view.get(user_id).map_err(|_| Error::Unauthorized("Invalid token"))).await?;
    if account.token_version != claims.token_version || !account.totp.as_ref().is_some_and(|t| t.enabled) {
        return Err(Error::Unauthorized("Session expired, please sign in again"));
    }
    let account = second_factor::use_second_factor(auth, engine, user_id, code, true).await?;
    let (_, session_cookie) = auth.start_session(engine, user_id, &account, false).await?;
    let clear = auth.cookies.cookie(session::PENDING_COOKIE, "", 0);
    Ok((account, vec![session_cookie, clear]))
}

/// Ends the session `token` names on the server, if any (the request's session cookie or bearer
/// value). Returns the cookies that clear every sign-in cookie, and the provider's end-session
/// URL for an SSO session whose provider has one (`id_token`: the cookie kept for its hint).
pub async fn sign_out(
    auth: &Auth,
    engine: &Engine,
    oidc: Option<&OidcClient>,
    token: Option<String>,
    id_token: Option<String>,
) -> (Vec<String>, Option<String>) {
    let mut ended = None;
    if let Some(token) = token
        && let Ok(claims) = auth.signer.verify(&token, engine.clock().now().as_second())
        && let Some(sid) = claims.sid
    {
        ended = auth.end_session(engine, sid).await;
    }
    let redirect_url = match (ended, oidc) {
        (Some(session), Some(oidc)) if session.sso => sso_logout_url(auth, oidc, id_token).await,
        _ => None,
    };
    let cookies = [session::COOKIE, session::PENDING_COOKIE, "id_token"]
        .into_iter()
        .map(|name| auth.cookies.cookie(name, "", 0))
        .collect();
    (cookies, redirect_url)
}

/// The provider's end-session URL for an SSO session, when the provider has one.
async fn sso_logout_url(auth: &Auth, oidc: &OidcClient, id_token: Option<String>) -> Option<String> {
    let endpoint = oidc.discovery().await.ok()?.end_session_endpoint?;
    let mut url = reqwest::Url::parse(&endpoint).ok()?;
    {
        let mut query = url.query_pairs_mut();
        if let Some(token) = id_token {
            query.append_pair("id_token_hint", &token);
        }
        if let Some(frontend) = &auth.settings.frontend_url {
            query.append_pair("post_logout_redirect_uri", frontend);
        }
    }
    Some(url.to_string())
}

/// What the provider's redirect brings back to the single sign-on callback.
pub struct ProviderReturn {
    pub code: Option<String>,
    pub state: Option<String>,
    /// Set when the provider (or the user there) declined.
    pub error: Option<String>,
}

/// How a single sign-on callback ended.
pub enum ProviderSignIn {
    /// Signed in: the session's JWT (the native client's deep link carries it) and the cookies
    /// to set (the session, the ID token kept for the provider's sign-out).
    Session { user_id: u64, token: String, cookies: Vec<String> },
    /// Back to the login page with this code: `oidc_denied`, `oidc_error`, `oidc_no_account` or
    /// `oidc_no_email`.
    Refused(&'static str),
}

/// The cookies the login step sets (`state`, `nonce`, the PKCE verifier, the client kind) and
/// the callback clears whatever happens.
pub const PROVIDER_COOKIES: [&str; 4] = ["oidc_state", "oidc_nonce", "oidc_pkce", "oidc_client"];

/// Completes a single sign-on: checks the provider's return against the state the login step
/// kept in the request's cookies (`kept` reads one by name), exchanges the code and verifies the ID token, finds, links or
/// provisions the account (`accounts::link_identity`), and starts an SSO session.
pub async fn with_provider(
    auth: &Auth,
    engine: &Engine,
    oidc: &OidcClient,
    kept: impl Fn(&str) -> Option<String>,
    back: ProviderReturn,
) -> Result<ProviderSignIn, Error> {
    let (code, nonce, verifier) = match returned(back, kept) {
        Ok(found) => found,
        Err(reason) => return Ok(refused(reason)),
    };
    let (identity, id_token) = match oidc.finish(&code, &verifier, &nonce).await {
        Ok(found) => found,
        Err(e) => {
            tracing::warn!(event = "oidc_failed", component = "auth", error = %e);
            return Ok(refused("oidc_error"));
        }
    };
    let issuer = oidc.config.provider_url.trim_end_matches('/');
    let (user_id, account) = match accounts::link_identity(auth, engine, issuer, &identity).await? {
        Ok(found) => found,
        Err(reason) => return Ok(refused(reason)),
    };
    let (token, session_cookie) = auth.start_session(engine, user_id, &account, true).await?;
    let id_cookie = auth.cookies.cookie("id_token", &id_token, auth.session_lifetime.as_secs());
    tracing::info!(event = "oidc_login_succeeded", component = "auth", user_id);
    Ok(ProviderSignIn::Session { user_id, token, cookies: vec![session_cookie, id_cookie] })
}

fn refused(reason: &'static str) -> ProviderSignIn {
    tracing::info!(event = "oidc_login_failed", component = "auth", reason);
    ProviderSignIn::Refused(reason)
}

/// The code to exchange, with the nonce and PKCE verifier `kept` for it; or why the return is
/// refused: the provider declined, a part is missing, or `state` is not the one the login kept.
fn returned(
    back: ProviderReturn,
    kept: impl Fn(&str) -> Option<String>,
) -> Result<(String, String, String), &'static str> {
    if back.error.is_some() {
        return Err("oidc_denied");
    }
    let (Some(code), Some(returned_state)) = (back.code, back.state) else { return Err("oidc_error") };
    let (Some(expected), Some(nonce), Some(verifier)) = (kept("oidc_state"), kept("oidc_nonce"), kept("oidc_pkce"))
    else {
        return Err("oidc_error");
    };
    if returned_state != expected {
        return Err("oidc_error");
    }
    Ok((code, nonce, verifier))
}

/// How long a password-reset link works.
const RESET_LIFETIME: jiff::SignedDuration = jiff::SignedDuration::from_hours(1);

/// Mails a single-use reset link (an hour) to the account with `email`, if there is one with a
/// password. Answers the same whether or not it exists, so accounts cannot be enumerated.
pub async fn request_reset(auth: &Auth, engine: &Engine, email: &str) -> Result<(), Error> {
    let email = accounts::normalize_email(email)?;
    if let Some((user_id, account)) = accounts::find(engine, &email).await?
        && account.password_hash.is_some()
    {
        let token = random_token(32);
        let now = engine.clock().now();
        let reset = ResetToken {
            user_id,
            hash: sha256_hex(&token),
            expires_at: now.checked_add(RESET_LIFETIME).map_err(Error::internal)?,
        };
        let link = match &auth.settings.frontend_url {
            Some(base) => format!("{}/reset-password?token={token}", base.trim_end_matches('/')),
            None => format!("Reset token: {token}"),
        };
        let text = format!(
            "Hello {},\n\nSomeone asked to reset the password of your Mycorrhizal account. If it was you, open:\n\n{link}\n\nThe link works once, for one hour. If it was not you, ignore this message.\n",
            account.username
        );
        let sealed = accounts::seal_mail(auth, user_id, &text)?;
        let to = account.email.clone();
        // The token and its mail are one write: a crash after the answer loses neither, and the
        // outbox delivers the mail off this request (the answer cannot reveal the account).
        engine
            .write_async(move |tx| {
                for (id, old) in tx.global().list::<ResetToken>()? {
                    if old.user_id == user_id || old.expires_at < now {
                        tx.global().delete::<ResetToken>(id)?;
                    }
                }
                tx.global().insert(&reset)?;
                let subject = "Reset your Mycorrhizal password".to_string();
                let target = Target::Email { to: to.clone(), subject, text: sealed.clone() };
                outbox::enqueue(tx, user_id, target, None).map(|_| ())
            })
            .await?;
        auth.outbox.wake();
    }
    Ok(())
}

/// Applies reset `token`: the new `password` (strength rules apply) with the effect of an admin
/// reset: every session and API token of the account ends.
pub async fn confirm_reset(auth: &Auth, engine: &Engine, token: &str, password: String) -> Result<(), Error> {
    let invalid = || Error::invalid_input("token", "is invalid or expired");
    if token.len() < 16 {
        return Err(invalid());
    }
    let hash = sha256_hex(token.trim());
    let now = engine.clock().now();
    let (token_id, user_id, account) = accounts::read(engine, move |view| {
        let (token_id, reset) = view.find::<ResetToken>("hash", &hash)?.ok_or_else(invalid)?;
        if reset.expires_at <= now {
            return Err(invalid());
        }
        let account: Account = view.get(reset.user_id).map_err(|_| invalid())?;
        Ok((token_id, reset.user_id, account))
    })
    .await?;
    accounts::check_new_password(auth, "password", &password, &account.username, &account.email).await?;
    // Claim the token first: of two concurrent confirms, one wins.
    let claimed = engine.write_async(move |tx| tx.global().delete::<ResetToken>(token_id)).await;
    if claimed.is_err() {
        return Err(invalid());
    }
    accounts::set_password(auth, engine, user_id, password, true, true).await?;
    tracing::info!(event = "password_reset_completed", component = "auth", user_id);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn back(code: Option<&str>, state: Option<&str>, error: Option<&str>) -> ProviderReturn {
        ProviderReturn {
            code: code.map(str::to_string),
            state: state.map(str::to_string),
            error: error.map(str::to_string),
        }
    }

    fn kept(name: &str) -> Option<String> {
        match name {
            "oidc_state" => Some("s1".into()),
            "oidc_nonce" => Some("n1".into()),
            "oidc_pkce" => Some("v1".into()),
            _ => None,
        }
    }

    #[test]
    fn a_return_matching_the_kept_state_hands_back_code_nonce_and_verifier() {
        let found = returned(back(Some("c"), Some("s1"), None), kept);
        assert_eq!(found, Ok(("c".into(), "n1".into(), "v1".into())));
    }

    #[test]
    fn a_declined_incomplete_or_forged_return_is_refused() {
        assert_eq!(returned(back(Some("c"), Some("s1"), Some("access_denied")), kept), Err("oidc_denied"));
        assert_eq!(returned(back(None, Some("s1"), None), kept), Err("oidc_error"));
        assert_eq!(returned(back(Some("c"), None, None), kept), Err("oidc_error"));
        assert_eq!(returned(back(Some("c"), Some("other"), None), kept), Err("oidc_error"));
        let nothing_kept = |_: &str| None;
        assert_eq!(returned(back(Some("c"), Some("s1"), None), nothing_kept), Err("oidc_error"));
    }
}
