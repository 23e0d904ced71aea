//! The user's integrations with the systems where the rest of their life is kept: the photo
//! library (Immich), the document archive (Paperless-ngx), the file library (Seafile) and a
//! WebDAV server (Nextcloud, ownCloud or any other). Each links a contact to things there as
//! external identities (`crm::external`), and the photo library records the photos a linked
//! person appears in as external activities.
//!
//! - [`config`]: one global record per user (`sys:integrations`) holding each system's address
//!   and credential, the credential sealed with the data key and bound to the root secret
//!   ([`Integrations::binding`]): after `JWT_SECRET_KEY` changes it no longer opens and the
//!   user is asked to enter it again. A credential never leaves the server.
//! - [`remote`]: every request, under the guarded-always posture (`outbound::always_client`):
//!   private, loopback and link-local destinations are refused with no switch. Each outcome is
//!   recorded on the configuration; a failure is an `integration_failed` event.
//! - [`immich`], [`paperless`], [`seafile`], [`webdav`]: one file per system, its parsers pure
//!   (fuzzed) and its operations over [`remote`].
//! - [`health`]: the `integration_<system>` diagnostics.

pub mod config;
pub mod connect;
pub mod health;
pub mod immich;
pub mod paperless;
pub mod remote;
pub mod seafile;
pub mod webdav;

use std::time::Duration;

use mycorrhizal_engine::Engine;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::keys::DataKey;

/// How long one request to an integration may take.
pub const TIMEOUT: Duration = Duration::from_secs(20);

/// The systems a user can connect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum System {
    Immich,
    Paperless,
    Seafile,
    /// Nextcloud, ownCloud or any WebDAV server (the existing clients' name for it).
    Nextcloud,
}

impl System {
    pub const ALL: [System; 4] = [System::Immich, System::Paperless, System::Seafile, System::Nextcloud];

    /// Its name in paths, external identities and events (`immich`, ..., `nextcloud`).
    pub fn name(self) -> &'static str {
        match self {
            System::Immich => "immich",
            System::Paperless => "paperless",
            System::Seafile => "seafile",
            System::Nextcloud => "nextcloud",
        }
    }

    /// What a person calls it.
    pub fn label(self) -> &'static str {
        match self {
            System::Immich => "Immich",
            System::Paperless => "Paperless",
            System::Seafile => "Seafile",
            System::Nextcloud => "WebDAV",
        }
    }

    /// The input field of its credential.
    pub fn secret_field(self) -> &'static str {
        match self {
            System::Immich => "api_key",
            System::Paperless | System::Seafile => "api_token",
            System::Nextcloud => "app_password",
        }
    }

    /// What its credential is called in a sentence.
    pub fn secret_words(self) -> &'static str {
        match self {
            System::Immich => "API key",
            System::Paperless | System::Seafile => "API token",
            System::Nextcloud => "app password",
        }
    }

    pub fn parse(name: &str) -> Option<System> {
        System::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// Why an integration's operation did not happen.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A rule of ours (a field, a missing contact, a duplicate link).
    #[error(transparent)]
    Crm(#[from] crate::crm::Error),
    /// The system did not answer as asked; the message says what to do (503 for the JSON door,
    /// never 401: a client signs out on 401).
    #[error("{message}")]
    Remote { system: System, message: String },
    /// The system answered that the thing asked for is not there.
    #[error("{0}")]
    Missing(String),
    /// The user has not connected the system (409: connect it first).
    #[error("{} is not configured: connect it in the settings first.", .0.label())]
    NotConfigured(System),
}

impl From<mycorrhizal_engine::Error> for Error {
    fn from(e: mycorrhizal_engine::Error) -> Self {
        Error::Crm(e.into())
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// What the integrations need: the engine, the data key, the root secret's tag, the client.
#[derive(Clone)]
pub struct Integrations {
    pub engine: Engine,
    pub data_key: DataKey,
    /// A digest of the root secret (`JWT_SECRET_KEY`) the sealed credentials are bound to.
    root_tag: String,
    /// The guarded-always client ([`Integrations::loopback`] decides whether it reaches loopback).
    client: reqwest::Client,
    /// Whether loopback addresses are let through: only ever in a test build.
    loopback: bool,
    /// Whether uses are left unrecorded (the diagnostics' probes: looking changes nothing).
    quiet: bool,
}

impl Integrations {
    pub fn new(engine: Engine, data_key: DataKey, root_secret: &str) -> std::result::Result<Integrations, String> {
        let digest = Sha256::digest(format!("mycorrhizal integration credentials|{root_secret}").as_bytes());
        let loopback = crate::outbound::test_loopback();
        Ok(Integrations {
            engine,
            data_key,
            root_tag: hex::encode(&digest[..12]),
            client: crate::outbound::always_client_with(TIMEOUT, loopback)?,
            loopback,
            quiet: false,
        })
    }

    /// The same, reaching loopback stand-ins: only a debug build (the tests') has this.
    #[cfg(debug_assertions)]
    pub fn with_loopback(mut self) -> Integrations {
        self.loopback = true;
        self.client = crate::outbound::always_client_with(TIMEOUT, true).expect("the client builds as before");
        self
    }

    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// Whether loopback is let through (a test build's stand-ins).
    pub fn loopback(&self) -> bool {
        self.loopback
    }

    /// The same integrations, recording nothing of their uses (the diagnostics' probes).
    pub fn quiet(&self) -> bool {
        self.quiet
    }

    pub fn quietly(&self) -> Integrations {
        Integrations { quiet: true, ..self.clone() }
    }

    /// What `user`'s credential for `system` is sealed to: the row, the field and the root
    /// secret, so that a changed `JWT_SECRET_KEY` leaves it unreadable (the spec's rule 6).
    pub fn binding(&self, user: u64, system: System) -> String {
        crate::keys::binding("integrations", user, &format!("{}|{}", system.name(), self.root_tag))
    }
}

/// The contact named by `uid` (its vCard UID or id).
pub async fn contact_of(scope: &mycorrhizal_engine::UserScope, uid: &str) -> Result<u64> {
    let (reader, uid) = (scope.clone(), uid.to_string());
    tokio::task::spawn_blocking(move || {
        let v = reader.view().map_err(crate::crm::Error::from)?;
        crate::crm::contact::named(&v, &uid).ok_or(Error::Crm(crate::crm::Error::NotFound))
    })
    .await
    .map_err(crate::crm::Error::internal)?
}

/// Stores a link an integration made: contact `contact` to `external_id` in `system`, opened at
/// `url`, described by `metadata`. One thing of a system links one contact (409 otherwise).
pub async fn save_link(
    scope: &mycorrhizal_engine::UserScope,
    contact: u64,
    system: System,
    external_id: String,
    url: String,
    metadata: serde_json::Map<String, serde_json::Value>,
) -> Result<crate::crm::external::ops::ExternalIdentityView> {
    let input = crate::crm::external::ops::ExternalIdentityInput {
        entity_id: None,
        contact_id: Some(contact),
        system: system.name().into(),
        external_id,
        url: Some(url),
        metadata: Some(metadata),
        sync_status: None,
    };
    // A contact is one person of the photo library; it may hold any number of documents or files.
    let saved = if system == System::Immich {
        crate::crm::external::ops::create_only_identity(scope, input).await
    } else {
        crate::crm::external::ops::save_identity(scope, None, input).await
    };
    let row = saved.map_err(|e| match e {
        crate::crm::Error::Engine(mycorrhizal_engine::Error::Duplicate { .. }) => {
            Error::Crm(crate::crm::Error::Conflict("It is already linked to a contact.".into()))
        }
        e => Error::Crm(e),
    })?;
    let reader = scope.clone();
    tokio::task::spawn_blocking(move || {
        let v = reader.view().map_err(crate::crm::Error::from)?;
        Ok(crate::crm::external::ops::ExternalIdentityView::of(&v, &row))
    })
    .await
    .map_err(crate::crm::Error::internal)?
}

/// Removes link `identity` of `system` from contact `uid` (404 when it is not one).
pub async fn unlink(scope: &mycorrhizal_engine::UserScope, uid: &str, system: System, identity: u64) -> Result<()> {
    let contact = contact_of(scope, uid).await?;
    let reader = scope.clone();
    let owned = tokio::task::spawn_blocking(move || -> crate::crm::Result<bool> {
        let v = reader.view()?;
        Ok(v.get::<crate::crm::external::ExternalIdentity>(identity)
            .is_ok_and(|r| r.body.contact_id == contact && r.body.system == system.name()))
    })
    .await
    .map_err(crate::crm::Error::internal)??;
    if !owned {
        return Err(Error::Missing(format!("{} link not found", system.label())));
    }
    crate::crm::external::ops::delete_identity(scope, identity).await?;
    Ok(())
}
