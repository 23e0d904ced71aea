//! Passwords verified lately: a password checked in the last [`REMEMBER`] is recalled without
//! hashing again (a DAV client sends it with every request; argon2 costs tens of milliseconds of
//! a core), as long as the account's token version and password hash are unchanged. Keyed by a
//! digest salted per process, so it says nothing outside it. Used by [`super::credentials`].

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::records::Account;

/// How long a verified password is recalled.
pub const REMEMBER: Duration = Duration::from_secs(15 * 60);
/// Past this many remembered entries, expired ones are dropped.
const MEMO_PRUNE_AT: usize = 10_000;

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
    pub(super) fn key(&self, identifier: &str, password: &str) -> [u8; 32] {
        let mut hash = Sha256::new();
        hash.update(self.salt);
        hash.update(identifier.as_bytes());
        hash.update([0]);
        hash.update(password.as_bytes());
        hash.finalize().into()
    }

    /// Whether `password` was verified for `id` lately and the account has not changed since.
    pub(super) fn recalls(&self, key: &[u8; 32], id: u64, account: &Account) -> bool {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.get(key).is_some_and(|r| {
            r.until > Instant::now()
                && r.user == id
                && r.token_version == account.token_version
                && r.password_hash == account.password_hash
        })
    }

    pub(super) fn remember(&self, key: [u8; 32], id: u64, account: &Account) {
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
