//! Account rules, written once: who may register, what a valid username and email are, the
//! first account becoming admin, password changes that end every session, the last admin who
//! cannot be demoted or deleted, and deleting an account with all its data.

use jiff::Timestamp;
use mycorrhizal_engine::{Error as EngineError, GlobalView, Tx};

use super::Error;
use super::records::{Account, ApiToken, DeviceGrant, ResetToken, Session};
use crate::outbox::{self, Target};
use mycorrhizal_engine::Engine;

use super::Auth;

pub const LANGUAGES: &[&str] = &["en", "de", "it", "es", "fr"];
pub const DATE_FORMATS: &[&str] = &["eu", "us", "iso", "ca", "eu-hyphen", "us-mmm", "us-mmmm", "eu-mmm", "eu-mmmm"];

pub fn normalize_username(raw: &str) -> Result<String, Error> {
    let name = raw.trim().to_lowercase();
    let len = name.chars().count();
    if len == 0 || len > 50 {
        return Err(Error::validation("username", "must be 1 to 50 characters"));
    }
    if name.contains('@') || name.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(Error::validation("username", "must not contain @, spaces or control characters"));
    }
    Ok(name)
}

pub fn normalize_email(raw: &str) -> Result<String, Error> {
    let email = raw.trim().to_lowercase();
    let valid = email.len() <= 254
        && email.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty() && domain.contains('.') && !domain.starts_with('.') && !domain.ends_with('.')
        })
        && !email.chars().any(|c| c.is_whitespace() || c.is_control());
    if !valid {
        return Err(Error::validation("email", "must be a valid email address"));
    }
    Ok(email)
}

pub fn check_language(value: &str) -> Result<String, Error> {
    LANGUAGES
        .contains(&value)
        .then(|| value.to_string())
        .ok_or_else(|| Error::invalid_input("language", format!("must be one of {}", LANGUAGES.join(", "))))
}

/// Validates a new password for `username`/`email`: the offline strength rule, then (when
/// enabled) the breached-password range check, which fails open.
pub async fn check_new_password(
    auth: &Auth,
    field: &str,
    password: &str,
    username: &str,
    email: &str,
) -> Result<(), Error> {
    let local = email.split('@').next().unwrap_or("");
    let verdict = super::password::strength(password, &[username, local]);
    if !verdict.is_valid {
        return Err(Error::validation(field, verdict.feedback));
    }
    if match &auth.breach {
        Some(check) => check.is_breached(password).await,
        None => false,
    } {
        return Err(Error::validation(field, "This password appears in known data breaches; choose another"));
    }
    Ok(())
}

/// What a new account starts with.
pub struct NewAccount {
    pub username: String,
    pub email: String,
    pub password: Option<String>,
    pub language: Option<String>,
    pub oidc: Option<(String, String)>,
    /// An admin creating the account may make it an admin.
    pub is_admin: bool,
}

/// Creates an account. The first account of the instance is an admin.
pub async fn create(auth: &Auth, engine: &Engine, new: NewAccount) -> Result<(u64, Account), Error> {
    let username = normalize_username(&new.username)?;
    let email = normalize_email(&new.email)?;
    let language = match new.language.as_deref() {
        Some(l) if !l.is_empty() => check_language(l)?,
        _ => "en".to_string(),
    };
    let password_hash = match new.password {
        Some(password) => {
            check_new_password(auth, "password", &password, &username, &email).await?;
            Some(auth.hasher.hash(password).await?)
        }
        None => None,
    };
    let now = engine.clock().now();
    let (oidc_provider, oidc_subject) = new.oidc.map(|(p, s)| (Some(p), Some(s))).unwrap_or((None, None));
    let mut account = Account {
        username,
        email,
        password_hash,
        is_admin: new.is_admin,
        language,
        date_format: "iso".into(),
        custom_fields: Vec::new(),
        token_version: 0,
        totp: None,
        recovery_codes: Vec::new(),
        oidc_subject,
        oidc_provider,
        created_at: now,
        updated_at: now,
    };
    let created = engine
        .write_async(move |tx| {
            let mut account = account.clone();
            if tx.global().list::<Account>()?.is_empty() {
                account.is_admin = true;
            }
            let id = tx.global().insert(&account)?;
            Ok((id, account))
        })
        .await;
    match created {
        Ok((id, created)) => {
            account = created;
            Ok((id, account))
        }
        Err(EngineError::Duplicate { index }) => Err(Error::AlreadyExists { field: index.to_string() }),
        Err(e) => Err(e.into()),
    }
}

/// Reads the accounts' tables on the blocking pool (`crm::blocking`), in one read
/// transaction: no redb read on an async worker.
pub async fn read<T: Send + 'static>(
    engine: &Engine,
    work: impl FnOnce(&GlobalView) -> Result<T, Error> + Send + 'static,
) -> Result<T, Error> {
    crate::crm::blocking(engine, move |engine| work(&engine.global()?)).await?
}

/// Every account's id (the users a job walks), read on the blocking pool. Takes only the engine.
pub async fn ids(engine: &mycorrhizal_engine::Engine) -> crate::crm::Result<Vec<u64>> {
    let accounts = crate::crm::blocking(engine, |engine| engine.global()?.list::<Account>()).await??;
    Ok(accounts.into_iter().map(|(id, _)| id).collect())
}

/// Account `id`.
pub async fn get(engine: &Engine, id: u64) -> Result<Account, Error> {
    read(engine, move |view| Ok(view.get(id)?)).await
}

/// Finds an account by username or email (an identifier with `@` is an email).
pub async fn find(engine: &mycorrhizal_engine::Engine, identifier: &str) -> Result<Option<(u64, Account)>, Error> {
    let identifier = identifier.trim().to_lowercase();
    let key = if identifier.contains('@') { "email" } else { "username" };
    crate::crm::blocking(engine, move |engine| Ok(engine.global()?.find::<Account>(key, &identifier)?)).await?
}

/// Sets a new password: bumps the token version (every session ends) and, for an admin or
/// reset-token path, revokes every API token too. Returns the updated account.
pub async fn set_password(
    auth: &Auth,
    engine: &Engine,
    user_id: u64,
    password: String,
    revoke_tokens: bool,
    notify: bool,
) -> Result<Account, Error> {
    let hash = auth.hasher.hash(password).await?;
    let mail = if notify && auth.sends_mail { Some(password_changed_mail(auth, engine, user_id).await?) } else { None };
    let account = engine
        .write_async(move |tx| {
            let now = tx.now();
            let mut account: Account = tx.global().get(user_id)?;
            account.password_hash = Some(hash.clone());
            account.token_version += 1;
            account.updated_at = now;
            tx.global().put(user_id, &account)?;
            end_sessions(tx, user_id)?;
            if revoke_tokens {
                revoke_tokens_of(tx, user_id, now)?;
            }
            // The notice is queued with the change itself: both happen, or neither.
            if let Some((subject, sealed)) = &mail {
                let target =
                    Target::Email { to: account.email.clone(), subject: subject.clone(), text: sealed.clone() };
                outbox::enqueue(tx, user_id, target, None)?;
            }
            Ok(account)
        })
        .await?;
    if notify {
        auth.outbox.wake();
    }
    Ok(account)
}

/// The "your password was changed" notice, its text sealed for the outbox.
async fn password_changed_mail(auth: &Auth, engine: &Engine, user_id: u64) -> Result<(String, Vec<u8>), Error> {
    let account: Account = read(engine, move |view| Ok(view.get(user_id)?)).await?;
    let text = format!(
        "Hello {},\n\nThe password of your Mycorrhizal account was just changed and every other session was signed out.\nIf this was not you, reset your password at once and tell your administrator.\n",
        account.username
    );
    let sealed = seal_mail(auth, user_id, &text)?;
    Ok(("Your Mycorrhizal password was changed".to_string(), sealed))
}

/// Seals a mail's text for the outbox (it may hold a reset link).
pub fn seal_mail(auth: &Auth, user_id: u64, text: &str) -> Result<Vec<u8>, Error> {
    auth.data_key.encrypt(text.as_bytes(), &outbox::text_binding(user_id)).map_err(Error::internal)
}

pub(crate) fn end_sessions(tx: &mycorrhizal_engine::Tx<'_>, user_id: u64) -> mycorrhizal_engine::Result<()> {
    for (id, session) in tx.global().list::<Session>()? {
        if session.user_id == user_id {
            tx.global().delete::<Session>(id)?;
        }
    }
    Ok(())
}

/// Revokes every live API token of `user_id`; returns how many.
pub(crate) fn revoke_tokens_of(
    tx: &mycorrhizal_engine::Tx<'_>,
    user_id: u64,
    now: Timestamp,
) -> mycorrhizal_engine::Result<u64> {
    let mut revoked = 0;
    for (id, mut token) in tx.global().list::<ApiToken>()? {
        if token.user_id == user_id && token.revoked_at.is_none() {
            token.revoked_at = Some(now);
            tx.global().put(id, &token)?;
            revoked += 1;
        }
    }
    Ok(revoked)
}

fn other_admins(tx: &mycorrhizal_engine::Tx<'_>, user_id: u64) -> mycorrhizal_engine::Result<usize> {
    Ok(tx.global().list::<Account>()?.iter().filter(|(id, a)| *id != user_id && a.is_admin).count())
}

/// Sets the admin flag; the last admin cannot be demoted.
pub async fn set_admin(engine: &Engine, user_id: u64, is_admin: bool) -> Result<Account, Error> {
    let result = engine
        .write_async(move |tx| {
            let mut account: Account = tx.global().get(user_id)?;
            if account.is_admin && !is_admin && other_admins(tx, user_id)? == 0 {
                return Ok(Err(Error::Conflict("The last admin cannot be demoted".into())));
            }
            account.is_admin = is_admin;
            account.updated_at = tx.now();
            tx.global().put(user_id, &account)?;
            Ok(Ok(account))
        })
        .await?;
    result
}

/// Removes the account's sign-in side inside `tx`, the account deletion's transaction
/// (`crate::account_removal`): its sessions, API tokens, device grants, reset tokens and the
/// account row. Refuses to remove the last admin (the inner error; nothing is removed then).
pub fn remove_in(tx: &Tx<'_>, user_id: u64) -> mycorrhizal_engine::Result<Result<(), Error>> {
    let account: Account = tx.global().get(user_id)?;
    if account.is_admin && other_admins(tx, user_id)? == 0 {
        return Ok(Err(Error::Conflict("The last admin cannot be deleted".into())));
    }
    end_sessions(tx, user_id)?;
    for (id, token) in tx.global().list::<ApiToken>()? {
        if token.user_id == user_id {
            tx.global().delete::<ApiToken>(id)?;
        }
    }
    for (id, grant) in tx.global().list::<DeviceGrant>()? {
        if grant.user_id == user_id {
            tx.global().delete::<DeviceGrant>(id)?;
        }
    }
    for (id, reset) in tx.global().list::<ResetToken>()? {
        if reset.user_id == user_id {
            tx.global().delete::<ResetToken>(id)?;
        }
    }
    tx.global().delete::<Account>(user_id)?;
    Ok(Ok(()))
}

/// Applies `change` to the caller's account in one write and returns the result.
pub async fn update(
    engine: &Engine,
    user_id: u64,
    change: impl Fn(&mut Account) -> Result<(), Error> + Send + 'static,
) -> Result<Account, Error> {
    let outcome = engine
        .write_async(move |tx| {
            let mut account: Account = tx.global().get(user_id)?;
            if let Err(e) = change(&mut account) {
                return Ok(Err(e));
            }
            account.updated_at = tx.now();
            tx.global().put(user_id, &account)?;
            Ok(Ok(account))
        })
        .await?;
    outcome
}

/// Sets the account's language (one of [`LANGUAGES`]); returns the stored value.
pub async fn set_language(engine: &Engine, user_id: u64, language: &str) -> Result<String, Error> {
    let language = check_language(language.trim())?;
    let stored = language.clone();
    update(engine, user_id, move |a| {
        a.language = stored.clone();
        Ok(())
    })
    .await?;
    Ok(language)
}

/// Replaces the user's custom contact field names: each 1 to 50 characters once trimmed, listed
/// once ignoring ASCII case, at most 100. Returns the stored names.
pub async fn set_custom_fields(engine: &Engine, user_id: u64, given: Vec<String>) -> Result<Vec<String>, Error> {
    let mut names: Vec<String> = Vec::new();
    for (i, name) in given.iter().enumerate() {
        let name = name.trim();
        if name.is_empty() || name.chars().count() > 50 {
            return Err(Error::validation(format!("custom_fields[{i}]"), "must be 1 to 50 characters"));
        }
        if names.iter().any(|n| n.eq_ignore_ascii_case(name)) {
            return Err(Error::validation(format!("custom_fields[{i}]"), "is listed twice"));
        }
        names.push(name.to_string());
    }
    if names.len() > 100 {
        return Err(Error::validation("custom_fields", "at most 100 fields"));
    }
    let stored = names.clone();
    update(engine, user_id, move |a| {
        a.custom_fields = stored.clone();
        Ok(())
    })
    .await?;
    Ok(names)
}

/// Sets the account's date format (one of [`DATE_FORMATS`]); returns the stored value.
pub async fn set_date_format(engine: &Engine, user_id: u64, format: &str) -> Result<String, Error> {
    let format = format.trim().to_string();
    if !DATE_FORMATS.contains(&format.as_str()) {
        return Err(Error::invalid_input("date_format", format!("must be one of {}", DATE_FORMATS.join(", "))));
    }
    let stored = format.clone();
    update(engine, user_id, move |a| {
        a.date_format = stored.clone();
        Ok(())
    })
    .await?;
    Ok(format)
}

/// Changes `user`'s password after checking the current one: every other session and API token
/// of the account ends, and the owner is told by mail. Returns the account (the caller may start
/// a fresh session for the one it serves).
pub async fn change_password(
    auth: &Auth,
    engine: &Engine,
    user: &super::AuthUser,
    current: &str,
    new: String,
) -> Result<Account, Error> {
    let hash = user.account.password_hash.clone();
    if hash.is_none() {
        return Err(Error::invalid_input("current_password", "this account signs in through single sign-on"));
    }
    if !auth.hasher.verify(current.to_string(), hash).await {
        return Err(Error::invalid_input("current_password", "is incorrect"));
    }
    if current == new {
        return Err(Error::invalid_input("new_password", "must differ from the current password"));
    }
    check_new_password(auth, "new_password", &new, &user.account.username, &user.account.email).await?;
    set_password(auth, engine, user.id.0, new, false, true).await
}

/// One page (1-based) of every account, and how many there are.
pub async fn page(engine: &Engine, page: usize, limit: usize) -> Result<(Vec<(u64, Account)>, usize), Error> {
    let all = read(engine, |view| Ok(view.list::<Account>()?)).await?;
    let total = all.len();
    let page = all.into_iter().skip(page.saturating_sub(1).saturating_mul(limit)).take(limit).collect();
    Ok((page, total))
}

/// Every other account of the instance as `(id, username)`, by username: whom a contact can be
/// shared with.
pub async fn directory(engine: &Engine, except: u64) -> Result<Vec<(u64, String)>, Error> {
    let all = read(engine, |view| Ok(view.list::<Account>()?)).await?;
    let mut users: Vec<(u64, String)> =
        all.into_iter().filter(|(id, _)| *id != except).map(|(id, a)| (id, a.username)).collect();
    users.sort_by(|a, b| a.1.cmp(&b.1));
    Ok(users)
}

/// An admin's password reset of account `id`: the strength rules apply, and every session and
/// API token of the account ends.
pub async fn reset_password(auth: &Auth, engine: &Engine, id: u64, password: String) -> Result<Account, Error> {
    let account: Account = read(engine, move |view| Ok(view.get(id)?)).await?;
    check_new_password(auth, "password", &password, &account.username, &account.email).await?;
    let account = set_password(auth, engine, id, password, true, false).await?;
    tracing::info!(event = "admin_password_reset", component = "auth", user_id = id);
    Ok(account)
}

/// Clears account `id`'s second factor (an admin's help for a lost phone); the user can enrol again.
pub async fn reset_second_factor(engine: &Engine, id: u64) -> Result<(), Error> {
    engine
        .write_async(move |tx| {
            let mut account: Account = tx.global().get(id)?;
            account.totp = None;
            account.recovery_codes.clear();
            account.updated_at = tx.now();
            tx.global().put(id, &account)
        })
        .await?;
    Ok(())
}

/// Finds or creates the account for a verified identity (OIDC account linking): the account
/// already linked to it; else the account with its email, when the provider verified the email (or
/// `OIDC_TRUST_EMAIL`), now linked; else a new account when `OIDC_AUTO_PROVISION` is on.
/// `Err(code)` names the login page's error.
pub async fn link_identity(
    auth: &Auth,
    engine: &Engine,
    issuer: &str,
    identity: &super::oidc::Identity,
) -> Result<Result<(u64, Account), &'static str>, Error> {
    let subject_key = format!("{issuer} {}", identity.sub);
    let email = identity.email.as_deref().map(|e| e.trim().to_lowercase()).filter(|e| !e.is_empty());
    let email_usable = identity.email_verified == Some(true) || auth.settings.oidc_trust_email;
    let by_email = email.clone().filter(|_| email_usable);
    let (linked, same_email) = read(engine, move |view| {
        let linked = view.find::<Account>("oidc", &subject_key)?;
        let same_email = match (&linked, by_email) {
            (None, Some(email)) => view.find::<Account>("email", &email)?.map(|(id, _)| id),
            _ => None,
        };
        Ok((linked, same_email))
    })
    .await?;
    if let Some(found) = linked {
        return Ok(Ok(found));
    }
    if let Some(id) = same_email {
        let (provider, subject) = (issuer.to_string(), identity.sub.clone());
        let account = engine
            .write_async(move |tx| {
                let mut account: Account = tx.global().get(id)?;
                account.oidc_provider = Some(provider.clone());
                account.oidc_subject = Some(subject.clone());
                account.updated_at = tx.now();
                tx.global().put(id, &account)?;
                Ok(account)
            })
            .await?;
        return Ok(Ok((id, account)));
    }
    if !auth.settings.oidc_auto_provision {
        return Ok(Err("oidc_no_account"));
    }
    let Some(email) = email else { return Ok(Err("oidc_no_email")) };
    if !email_usable {
        return Ok(Err("oidc_no_account"));
    }
    let base = identity
        .preferred_username
        .clone()
        .or_else(|| email.split('@').next().map(str::to_string))
        .unwrap_or_else(|| "user".into())
        .to_lowercase()
        .replace(['@', ' '], "-");
    let base: String = base.chars().take(40).collect();
    for attempt in 0..20 {
        let username = if attempt == 0 { base.clone() } else { format!("{base}-{attempt}") };
        let new = NewAccount {
            username,
            email: email.clone(),
            password: None,
            language: None,
            oidc: Some((issuer.to_string(), identity.sub.clone())),
            is_admin: false,
        };
        match create(auth, engine, new).await {
            Ok(created) => return Ok(Ok(created)),
            Err(Error::AlreadyExists { field }) if field == "username" => continue,
            Err(Error::AlreadyExists { .. }) => return Ok(Err("oidc_no_account")),
            Err(e) => return Err(e),
        }
    }
    Ok(Err("oidc_error"))
}
