//! Encryption at rest. One random data key encrypts sensitive, non-searchable fields (TOTP
//! secrets, later integration credentials) with XChaCha20-Poly1305. The data key is stored only
//! wrapped by a master key: `DATA_ENCRYPTION_KEY` / `DATA_ENCRYPTION_KEY_FILE` when set, otherwise
//! one derived from `JWT_SECRET_KEY` (HKDF-SHA256). Every ciphertext is bound to its table, user
//! and field through the associated data, so a value copied to another row does not decrypt.

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use hkdf::Hkdf;
use mycorrhizal_engine::Engine;
use sha2::Sha256;

use crate::config::Config;

/// Why the keys could not be loaded, created or used. Start-up prints it and stops.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("DATA_ENCRYPTION_KEY_FILE {path}: {source}")]
    KeyFile { path: std::path::PathBuf, source: std::io::Error },
    #[error("JWT_SECRET_KEY is not loaded")]
    NoSecret,
    #[error("no randomness: {0}")]
    NoRandomness(getrandom::Error),
    #[error("encryption failed")]
    Encryption,
    /// The stored data key does not open with the configured master key.
    #[error("{}", unwrap_failure(*.0))]
    WrongMasterKey(Option<MasterSource>),
    #[error("stored data key has a bad length")]
    BadLength,
    #[error("no data key has been created yet")]
    NotCreated,
    #[error(transparent)]
    Engine(#[from] mycorrhizal_engine::Error),
    #[error(transparent)]
    Blocking(#[from] crate::crm::Error),
}

const TABLE: &str = "map:keys";
const WRAPPED: &str = "data_key";
const SOURCE: &str = "master_source";
const NONCE_LEN: usize = 24;

/// Where the master key came from; recorded beside the wrapped key so a failed unwrap can say why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MasterSource {
    DataEncryptionKey,
    JwtSecret,
}

impl MasterSource {
    /// The variable the key came from, as an operator reads it.
    pub fn variable(self) -> &'static str {
        match self {
            MasterSource::DataEncryptionKey => "DATA_ENCRYPTION_KEY",
            MasterSource::JwtSecret => "JWT_SECRET_KEY",
        }
    }

    fn tag(self) -> &'static [u8] {
        match self {
            MasterSource::DataEncryptionKey => b"data_encryption_key",
            MasterSource::JwtSecret => b"jwt_secret_key",
        }
    }
}

/// A master key, derived from operator-supplied material.
pub struct MasterKey {
    key: [u8; 32],
    pub source: MasterSource,
}

impl MasterKey {
    /// Derives a master key from `material` (any length; HKDF spreads it to 32 bytes).
    pub fn derive(material: &[u8], source: MasterSource) -> MasterKey {
        let info: &[u8] = match source {
            MasterSource::DataEncryptionKey => b"mycorrhizal data-key wrap v1",
            MasterSource::JwtSecret => b"mycorrhizal data-key wrap from jwt secret v1",
        };
        let mut key = [0u8; 32];
        // 32 bytes is far below HKDF-SHA256's 8160-byte limit, so expand cannot fail.
        let _ = Hkdf::<Sha256>::new(Some(b"mycorrhizal"), material).expand(info, &mut key);
        MasterKey { key, source }
    }

    /// The master key the configuration names.
    pub fn from_config(config: &Config) -> Result<MasterKey, Error> {
        if let Some(key) = &config.auth.data_encryption_key {
            return Ok(Self::derive(key.expose().as_bytes(), MasterSource::DataEncryptionKey));
        }
        if let Some(path) = &config.auth.data_encryption_key_file {
            let text = std::fs::read_to_string(path).map_err(|source| Error::KeyFile { path: path.clone(), source })?;
            return Ok(Self::derive(text.trim().as_bytes(), MasterSource::DataEncryptionKey));
        }
        let secret = config.jwt_secret.as_ref().ok_or(Error::NoSecret)?;
        Ok(Self::derive(secret.expose().as_bytes(), MasterSource::JwtSecret))
    }

    /// A key for another purpose derived from this one (HKDF-SHA256 with `purpose` as info), so
    /// the same operator secret can sign backups without the data key's wrapping key ever
    /// serving two uses.
    pub fn subkey(&self, purpose: &[u8]) -> [u8; 32] {
        let mut key = [0u8; 32];
        // 32 bytes is far below HKDF-SHA256's limit, so expand cannot fail.
        let _ = Hkdf::<Sha256>::new(Some(b"mycorrhizal subkey"), &self.key).expand(purpose, &mut key);
        key
    }

    fn cipher(&self) -> XChaCha20Poly1305 {
        XChaCha20Poly1305::new((&self.key).into())
    }
}

/// The unwrapped data key: encrypts and decrypts fields.
#[derive(Clone)]
pub struct DataKey {
    cipher: XChaCha20Poly1305,
}

impl std::fmt::Debug for DataKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DataKey(<redacted>)")
    }
}

/// The associated data a field ciphertext is bound to.
pub fn binding(table: &str, user: u64, field: &str) -> String {
    format!("{table}|{user}|{field}")
}

fn random<const N: usize>() -> Result<[u8; N], Error> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).map_err(Error::NoRandomness)?;
    Ok(bytes)
}

fn seal(cipher: &XChaCha20Poly1305, plaintext: &[u8], aad: &[u8]) -> Result<Vec<u8>, Error> {
    let nonce = random::<NONCE_LEN>()?;
    let mut out = nonce.to_vec();
    let sealed =
        cipher.encrypt(XNonce::from_slice(&nonce), Payload { msg: plaintext, aad }).map_err(|_| Error::Encryption)?;
    out.extend(sealed);
    Ok(out)
}

fn open(cipher: &XChaCha20Poly1305, sealed: &[u8], aad: &[u8]) -> Option<Vec<u8>> {
    if sealed.len() < NONCE_LEN {
        return None;
    }
    let (nonce, body) = sealed.split_at(NONCE_LEN);
    cipher.decrypt(XNonce::from_slice(nonce), Payload { msg: body, aad }).ok()
}

impl DataKey {
    pub fn encrypt(&self, plaintext: &[u8], binding: &str) -> Result<Vec<u8>, Error> {
        seal(&self.cipher, plaintext, binding.as_bytes())
    }

    /// `None` when the value was sealed under another key or for another row or field.
    pub fn decrypt(&self, sealed: &[u8], binding: &str) -> Option<Vec<u8>> {
        open(&self.cipher, sealed, binding.as_bytes())
    }

    /// Unwraps the stored data key with `master`, creating and storing one on first start.
    pub async fn load_or_create(engine: &Engine, master: &MasterKey) -> Result<DataKey, Error> {
        let (stored, source) = stored(engine).await?;
        match stored {
            Some(wrapped) => {
                let raw = open(&master.cipher(), &wrapped, WRAPPED.as_bytes()).ok_or(Error::WrongMasterKey(source))?;
                Ok(DataKey { cipher: XChaCha20Poly1305::new_from_slice(&raw).map_err(|_| Error::BadLength)? })
            }
            None => {
                let raw = random::<32>()?;
                store_wrapped(engine, master, &raw).await?;
                Ok(DataKey { cipher: XChaCha20Poly1305::new((&raw).into()) })
            }
        }
    }
}

/// The wrapped data key and the tag of the master key that wrapped it, read on the blocking pool.
async fn stored(engine: &Engine) -> Result<(Option<Vec<u8>>, Option<MasterSource>), Error> {
    let (wrapped, tag) = crate::crm::blocking(engine, |engine| -> mycorrhizal_engine::Result<_> {
        let view = engine.global()?;
        Ok((view.map_get(TABLE, WRAPPED)?, view.map_get(TABLE, SOURCE)?))
    })
    .await??;
    let source = [MasterSource::DataEncryptionKey, MasterSource::JwtSecret]
        .into_iter()
        .find(|source| tag.as_deref() == Some(source.tag()));
    Ok((wrapped, source))
}

fn unwrap_failure(source: Option<MasterSource>) -> String {
    if source == Some(MasterSource::JwtSecret) {
        "failed to unwrap the data key: it was wrapped with a key derived from JWT_SECRET_KEY, which has changed. \
         Restore the previous JWT_SECRET_KEY (or set DATA_ENCRYPTION_KEY to it and run `mycorrhizal rewrap-data-key`)"
            .into()
    } else {
        "failed to unwrap the data key with DATA_ENCRYPTION_KEY (wrong key?). Losing the key is unrecoverable".into()
    }
}

async fn store_wrapped(engine: &Engine, master: &MasterKey, raw: &[u8; 32]) -> Result<(), Error> {
    let wrapped = seal(&master.cipher(), raw, WRAPPED.as_bytes())?;
    let tag = master.source.tag();
    engine
        .write_async(move |tx| {
            tx.global().map_put(TABLE, WRAPPED, &wrapped)?;
            tx.global().map_put(TABLE, SOURCE, tag)
        })
        .await?;
    Ok(())
}

/// Re-wraps the data key from `old` to `new`. The data key itself, and so every encrypted
/// field, is unchanged.
pub async fn rewrap(engine: &Engine, old: &MasterKey, new: &MasterKey) -> Result<(), Error> {
    let (wrapped, source) = stored(engine).await?;
    let wrapped = wrapped.ok_or(Error::NotCreated)?;
    let raw = open(&old.cipher(), &wrapped, WRAPPED.as_bytes()).ok_or(Error::WrongMasterKey(source))?;
    let raw: [u8; 32] = raw.try_into().map_err(|_| Error::BadLength)?;
    store_wrapped(engine, new, &raw).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ciphertexts_are_bound_to_their_row_and_field() {
        let key = DataKey { cipher: XChaCha20Poly1305::new(&[7u8; 32].into()) };
        let sealed = key.encrypt(b"JBSWY3DPEHPK3PXP", &binding("sys:users", 1, "totp")).unwrap();
        assert_eq!(key.decrypt(&sealed, &binding("sys:users", 1, "totp")).unwrap(), b"JBSWY3DPEHPK3PXP");
        assert!(key.decrypt(&sealed, &binding("sys:users", 2, "totp")).is_none(), "another user");
        assert!(key.decrypt(&sealed, &binding("sys:users", 1, "other")).is_none(), "another field");
        let other = DataKey { cipher: XChaCha20Poly1305::new(&[8u8; 32].into()) };
        assert!(other.decrypt(&sealed, &binding("sys:users", 1, "totp")).is_none(), "another key");
        assert!(key.decrypt(&sealed[..10], &binding("sys:users", 1, "totp")).is_none(), "truncated");
    }

    #[test]
    fn master_keys_differ_by_material_and_source() {
        let a = MasterKey::derive(b"material", MasterSource::DataEncryptionKey);
        let b = MasterKey::derive(b"material", MasterSource::JwtSecret);
        let c = MasterKey::derive(b"other", MasterSource::DataEncryptionKey);
        assert_ne!(a.key, b.key);
        assert_ne!(a.key, c.key);
    }
}
