//! Each user's integration settings: one global record per user (`sys:integrations`, keyed by
//! the user's id) with a [`Connection`] per system. The credential is sealed
//! ([`Integrations::binding`]) and only ever said to be set; the address is checked by the
//! guard when saved (`super::connect`) and at every request. What happened at the last use is kept beside it
//! ([`Health`]), so the settings page, the API and the diagnostics tell the truth.

use jiff::Timestamp;
use mycorrhizal_engine::{GlobalRecord, Tx, global_tables};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{Error, Integrations, Result, System};
use crate::crm::Error as CrmError;

/// Every system's connection of one user.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct IntegrationConfig {
    pub immich: Option<Connection>,
    pub paperless: Option<Connection>,
    pub seafile: Option<Connection>,
    pub nextcloud: Option<Connection>,
}

impl GlobalRecord for IntegrationConfig {
    global_tables!("integrations");
}

impl IntegrationConfig {
    pub fn get(&self, system: System) -> Option<&Connection> {
        match system {
            System::Immich => self.immich.as_ref(),
            System::Paperless => self.paperless.as_ref(),
            System::Seafile => self.seafile.as_ref(),
            System::Nextcloud => self.nextcloud.as_ref(),
        }
    }

    pub fn slot(&mut self, system: System) -> &mut Option<Connection> {
        match system {
            System::Immich => &mut self.immich,
            System::Paperless => &mut self.paperless,
            System::Seafile => &mut self.seafile,
            System::Nextcloud => &mut self.nextcloud,
        }
    }
}

/// One system's settings.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Connection {
    /// Normalised: no trailing slash (Immich: no trailing `/api` either).
    pub base_url: String,
    /// The WebDAV account's name (empty for the others).
    pub username: String,
    /// The credential sealed with the data key, bound to the root secret.
    pub sealed_secret: Vec<u8>,
    /// Immich: whether the scheduled sync runs.
    pub sync_enabled: bool,
    /// WebDAV: the collection listed as `/` (Nextcloud's `remote.php/dav/files/<user>`, or the
    /// address itself for another server), found when saved.
    pub dav_root: String,
    pub updated_at: Timestamp,
    pub health: Health,
}

/// What happened when the system was last used.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Health {
    pub last_ok_at: Option<Timestamp>,
    pub last_failure_at: Option<Timestamp>,
    /// The last failure's message (what the user is told), empty after a success.
    pub last_error: String,
    pub consecutive_failures: u32,
    /// Immich: the last sync.
    pub last_synced_at: Option<Timestamp>,
    /// `success` or `error` (empty before the first sync).
    pub last_sync_status: String,
    pub last_sync_error: String,
}

/// A connection's credentials, opened for one use.
#[derive(Clone)]
pub struct Opened {
    pub system: System,
    pub user: u64,
    pub base_url: String,
    pub username: String,
    pub secret: String,
    pub dav_root: String,
}

impl std::fmt::Debug for Opened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Opened({}, {}, <secret>)", self.system.name(), self.base_url)
    }
}

/// What the settings say of a system (never the credential).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = IntegrationConfigView)]
pub struct ConfigView {
    /// Empty when not configured.
    pub base_url: String,
    /// Immich: whether an API key is stored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub has_api_key: Option<bool>,
    /// Paperless and Seafile: whether an API token is stored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub has_api_token: Option<bool>,
    /// WebDAV: whether an app password is stored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub has_app_password: Option<bool>,
    /// WebDAV: the account name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// Immich: whether the scheduled sync runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync_enabled: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub last_synced_at: Option<Timestamp>,
    /// Immich: `success`, `error`, or empty before the first sync.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_sync_status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_sync_error: Option<String>,
    /// `not_configured`, `untested` (saved, not used since), `ok`, `failing`, or
    /// `credential_unreadable` (the stored credential no longer opens after a key change:
    /// enter it again).
    pub status: String,
    /// What the status means for the user (the last failure's message when failing).
    pub status_message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub last_ok_at: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub last_failure_at: Option<Timestamp>,
}

/// A system's settings as saved (`PUT /<system>/config`).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[schema(as = IntegrationConfigInput)]
pub struct ConfigInput {
    /// The server's address, `http` or `https`, at most 2000 characters.
    #[serde(default)]
    #[schema(required = true, max_length = 2000)]
    pub base_url: String,
    /// Immich: the API key; left out or empty, the stored one is kept.
    #[schema(max_length = 512)]
    pub api_key: Option<String>,
    /// Paperless and Seafile: the API token; left out or empty, the stored one is kept.
    #[schema(max_length = 512)]
    pub api_token: Option<String>,
    /// WebDAV: the account name.
    #[schema(max_length = 200)]
    pub username: Option<String>,
    /// WebDAV: an app password (a real account password is refused); left out or empty, the
    /// stored one is kept.
    #[schema(max_length = 512)]
    pub app_password: Option<String>,
    /// Immich: whether the scheduled sync runs (default true).
    pub sync_enabled: Option<bool>,
}

impl ConfigInput {
    fn secret(&self, system: System) -> Option<String> {
        let given = match system {
            System::Immich => &self.api_key,
            System::Paperless | System::Seafile => &self.api_token,
            System::Nextcloud => &self.app_password,
        };
        given.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(String::from)
    }
}

/// The user's settings (the default when never saved).
pub fn read(i: &Integrations, user: u64) -> Result<IntegrationConfig> {
    match i.engine.global()?.get::<IntegrationConfig>(user) {
        Ok(c) => Ok(c),
        Err(mycorrhizal_engine::Error::NotFound) => Ok(IntegrationConfig::default()),
        Err(e) => Err(e.into()),
    }
}

fn config_in(tx: &Tx<'_>, user: u64) -> mycorrhizal_engine::Result<IntegrationConfig> {
    match tx.global().get::<IntegrationConfig>(user) {
        Ok(c) => Ok(c),
        Err(mycorrhizal_engine::Error::NotFound) => Ok(IntegrationConfig::default()),
        Err(e) => Err(e),
    }
}

/// Removes `user`'s settings (an account's deletion).
pub(crate) fn remove_user(tx: &Tx<'_>, user: u64) -> mycorrhizal_engine::Result<u64> {
    Ok(u64::from(tx.global().remove::<IntegrationConfig>(user)?))
}

/// Whether the sealed credential opens.
fn opens(i: &Integrations, user: u64, system: System, c: &Connection) -> bool {
    i.data_key.decrypt(&c.sealed_secret, &i.binding(user, system)).is_some()
}

/// What the settings say of `system`.
pub fn view(i: &Integrations, user: u64, system: System) -> Result<ConfigView> {
    let config = read(i, user)?;
    Ok(view_of(i, user, system, config.get(system)))
}

pub fn view_of(i: &Integrations, user: u64, system: System, c: Option<&Connection>) -> ConfigView {
    let has = c.is_some();
    let flag = |s: System| (system == s).then_some(has);
    let (status, message) = match c {
        None => ("not_configured", format!("{} is not connected.", system.label())),
        Some(c) if !opens(i, user, system, c) => (
            "credential_unreadable",
            format!(
                "The stored {} can no longer be read (the server's secret key changed): re-enter the credential.",
                system.secret_words()
            ),
        ),
        Some(c) if c.health.consecutive_failures > 0 => ("failing", c.health.last_error.clone()),
        Some(c) if c.health.last_ok_at.is_some() => ("ok", format!("{} answered at its last use.", system.label())),
        Some(_) => ("untested", "Saved; not used yet.".to_string()),
    };
    let health = c.map(|c| c.health.clone()).unwrap_or_default();
    let immich = system == System::Immich;
    ConfigView {
        base_url: c.map(|c| c.base_url.clone()).unwrap_or_default(),
        has_api_key: flag(System::Immich),
        has_api_token: (matches!(system, System::Paperless | System::Seafile)).then_some(has),
        has_app_password: flag(System::Nextcloud),
        username: (system == System::Nextcloud).then(|| c.map(|c| c.username.clone()).unwrap_or_default()),
        sync_enabled: immich.then(|| c.is_some_and(|c| c.sync_enabled)),
        last_synced_at: if immich { health.last_synced_at } else { None },
        last_sync_status: immich.then(|| health.last_sync_status.clone()),
        last_sync_error: immich.then(|| health.last_sync_error.clone()),
        status: status.to_string(),
        status_message: message,
        last_ok_at: health.last_ok_at,
        last_failure_at: health.last_failure_at,
    }
}

/// The address as stored: trimmed, no trailing slash (Immich: no trailing `/api`), http(s)
/// with a host, at most 2000 characters.
pub fn normalise(system: System, raw: &str) -> std::result::Result<String, String> {
    let mut url = raw.trim().trim_end_matches('/').to_string();
    if system == System::Immich && url.to_ascii_lowercase().ends_with("/api") {
        url.truncate(url.len() - 4);
        url = url.trim_end_matches('/').to_string();
    }
    if url.is_empty() {
        return Err("is required".into());
    }
    if url.chars().count() > 2000 {
        return Err("must be at most 2000 characters".into());
    }
    match reqwest::Url::parse(&url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host_str().is_some() => {
            if !u.username().is_empty() || u.password().is_some() {
                return Err("must not hold credentials: enter them in their own field".into());
            }
            if u.query().is_some() || u.fragment().is_some() {
                return Err("must be the server's address, without a query or fragment".into());
            }
            Ok(url)
        }
        _ => Err("must be an http:// or https:// URL".into()),
    }
}

/// Checks `system`'s settings before they are saved: the address (the guard too), the
/// credential (required the first time, kept when left out after while the server and account
/// are the same). Returns them opened, and whether the sync is on (left out: as it was, on at
/// first).
pub async fn prepare(i: &Integrations, user: u64, system: System, input: ConfigInput) -> Result<(Opened, bool)> {
    let base_url = normalise(system, &input.base_url).map_err(|r| CrmError::invalid("base_url", r))?;
    crate::outbound::check_always_with(&base_url, i.loopback()).await.map_err(|r| CrmError::invalid("base_url", r))?;
    let secret = input.secret(system);
    if secret.as_ref().is_some_and(|s| s.chars().count() > 512) {
        return Err(CrmError::invalid(system.secret_field(), "must be at most 512 characters").into());
    }
    // Only WebDAV has an account name; another system's is not kept.
    let username = match system {
        System::Nextcloud => input.username.as_deref().map(str::trim).unwrap_or_default().to_string(),
        _ => String::new(),
    };
    if system == System::Nextcloud {
        if username.is_empty() {
            return Err(CrmError::invalid("username", "is required").into());
        }
        if username.chars().count() > 200 {
            return Err(CrmError::invalid("username", "must be at most 200 characters").into());
        }
    }
    let current = read(i, user)?;
    let kept = current
        .get(system)
        .filter(|c| c.base_url == base_url && c.username == username)
        .and_then(|c| i.data_key.decrypt(&c.sealed_secret, &i.binding(user, system)))
        .and_then(|s| String::from_utf8(s).ok());
    let Some(plain) = secret.or(kept) else {
        let reason = format!("is required when first connecting {} (or after its address changes)", system.label());
        return Err(CrmError::invalid(system.secret_field(), reason).into());
    };
    let sync_enabled = input.sync_enabled.or_else(|| current.get(system).map(|c| c.sync_enabled)).unwrap_or(true);
    let opened = Opened { system, user, base_url, username, secret: plain, dav_root: String::new() };
    Ok((opened, sync_enabled))
}

/// Stores settings [`prepare`] checked, the credential sealed. What was known of the
/// connection's health stays while the address and the credential do.
pub async fn store(i: &Integrations, opened: Opened, sync_enabled: bool) -> Result<ConfigView> {
    let (user, system) = (opened.user, opened.system);
    let binding = i.binding(user, system);
    let sealed = i.data_key.encrypt(opened.secret.as_bytes(), &binding).map_err(CrmError::internal)?;
    let (data_key, secret) = (i.data_key.clone(), opened.secret.clone());
    let same_secret =
        move |old: &Connection| data_key.decrypt(&old.sealed_secret, &binding).is_some_and(|s| s == secret.as_bytes());
    let saved = i
        .engine
        .write_async(move |tx| {
            let mut c = config_in(tx, user)?;
            let slot = c.slot(system);
            let health = slot
                .as_ref()
                .filter(|old| old.base_url == opened.base_url && same_secret(old))
                .map(|old| old.health.clone());
            *slot = Some(Connection {
                base_url: opened.base_url.clone(),
                username: opened.username.clone(),
                sealed_secret: sealed.clone(),
                sync_enabled,
                dav_root: opened.dav_root.clone(),
                updated_at: tx.now(),
                health: health.unwrap_or_default(),
            });
            tx.global().insert_at(user, &c)?;
            Ok(c)
        })
        .await?;
    Ok(view_of(i, user, system, saved.get(system)))
}

/// Forgets `system`'s settings; the links and activities stay (they are the user's records).
pub async fn delete(i: &Integrations, user: u64, system: System) -> Result<()> {
    i.engine
        .write_async(move |tx| {
            let mut c = config_in(tx, user)?;
            if c.slot(system).take().is_some() {
                tx.global().insert_at(user, &c)?;
            }
            Ok(())
        })
        .await?;
    Ok(())
}

/// `system`'s credentials opened for a use: not configured and unreadable are refusals the
/// user can act on.
pub fn open(i: &Integrations, user: u64, system: System) -> Result<Opened> {
    let config = read(i, user)?;
    let Some(c) = config.get(system) else { return Err(Error::NotConfigured(system)) };
    let Some(secret) = i.data_key.decrypt(&c.sealed_secret, &i.binding(user, system)) else {
        return Err(Error::Remote {
            system,
            message: format!(
                "{} authentication failed: the stored {} can no longer be read after a key change; re-enter the credential.",
                system.label(),
                system.secret_words()
            ),
        });
    };
    Ok(Opened {
        system,
        user,
        base_url: c.base_url.clone(),
        username: c.username.clone(),
        secret: String::from_utf8_lossy(&secret).into_owned(),
        dav_root: c.dav_root.clone(),
    })
}

/// Every user with `system` configured (the scheduled sync, the diagnostics).
pub fn configured(i: &Integrations, system: System) -> Result<Vec<(u64, Connection)>> {
    Ok(i.engine
        .global()?
        .list::<IntegrationConfig>()?
        .into_iter()
        .filter_map(|(user, c)| c.get(system).cloned().map(|c| (user, c)))
        .collect())
}

/// Records how a use of `system` went (only when it changes what is known, or a day passed,
/// so that a busy page does not write on every request).
pub async fn record(i: &Integrations, user: u64, system: System, outcome: std::result::Result<(), String>) {
    let now = i.engine.clock().now();
    let known = read(i, user).ok().and_then(|c| c.get(system).map(|c| c.health.clone()));
    let Some(known) = known else { return };
    let unchanged = match &outcome {
        Ok(()) => {
            known.consecutive_failures == 0 && known.last_ok_at.is_some_and(|at| now.duration_since(at).as_hours() < 24)
        }
        Err(_) => false,
    };
    if unchanged {
        return;
    }
    let _ = i
        .engine
        .write_async(move |tx| {
            let mut c = config_in(tx, user)?;
            if let Some(conn) = c.slot(system).as_mut() {
                let h = &mut conn.health;
                match &outcome {
                    Ok(()) => {
                        h.last_ok_at = Some(tx.now());
                        h.consecutive_failures = 0;
                        h.last_error.clear();
                    }
                    Err(message) => {
                        h.last_failure_at = Some(tx.now());
                        h.consecutive_failures = h.consecutive_failures.saturating_add(1);
                        h.last_error = message.clone();
                    }
                }
                tx.global().insert_at(user, &c)?;
            }
            Ok(())
        })
        .await;
}

/// Records an Immich sync's outcome.
pub async fn record_sync(i: &Integrations, user: u64, outcome: std::result::Result<(), String>) {
    let _ = i
        .engine
        .write_async(move |tx| {
            let mut c = config_in(tx, user)?;
            if let Some(conn) = c.slot(System::Immich).as_mut() {
                let h = &mut conn.health;
                h.last_synced_at = Some(tx.now());
                match &outcome {
                    Ok(()) => {
                        h.last_sync_status = "success".into();
                        h.last_sync_error.clear();
                    }
                    Err(message) => {
                        h.last_sync_status = "error".into();
                        h.last_sync_error = message.clone();
                    }
                }
                tx.global().insert_at(user, &c)?;
            }
            Ok(())
        })
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_normalised_and_checked() {
        assert_eq!(
            normalise(System::Immich, " https://photos.example.org/api/ ").unwrap(),
            "https://photos.example.org"
        );
        assert_eq!(normalise(System::Paperless, "https://p.example.org/").unwrap(), "https://p.example.org");
        assert_eq!(normalise(System::Paperless, "https://p.example.org/api").unwrap(), "https://p.example.org/api");
        assert!(normalise(System::Seafile, "").is_err());
        assert!(normalise(System::Seafile, "ftp://x.example.org").is_err());
        assert!(normalise(System::Seafile, "https://me:pw@x.example.org").is_err());
        assert!(normalise(System::Seafile, "https://x.example.org/?a=1").is_err());
    }
}
