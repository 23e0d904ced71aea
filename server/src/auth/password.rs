//! Passwords: argon2id hashing at OWASP parameters on the blocking pool behind a concurrency
//! bound (a login flood queues instead of starving the server), and the offline strength rule
//! (length, a common-password list, an entropy floor).

use std::sync::{Arc, LazyLock};

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use serde::Serialize;
use tokio::sync::Semaphore;
use utoipa::ToSchema;

pub const MIN_LEN: usize = 8;
pub const MAX_LEN: usize = 128;
/// Estimated bits below which a password is refused.
pub const MIN_ENTROPY: f64 = 40.0;

static COMMON: LazyLock<std::collections::HashSet<&'static str>> =
    LazyLock::new(|| include_str!("common-passwords.txt").lines().map(str::trim).filter(|l| !l.is_empty()).collect());

fn argon2() -> Argon2<'static> {
    // OWASP: m = 19 MiB, t = 2, p = 1. These are valid constants, so `new` cannot fail.
    let params = Params::new(19_456, 2, 1, None).expect("valid argon2 parameters");
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
}

/// Hashes and verifies passwords off the async threads, at most `permits` at a time.
#[derive(Clone)]
pub struct Hasher {
    permits: Arc<Semaphore>,
}

impl Hasher {
    pub fn new(permits: usize) -> Self {
        Hasher { permits: Arc::new(Semaphore::new(permits.max(1))) }
    }

    /// The PHC string of `password` under a fresh salt; a failure is not the caller's doing.
    pub async fn hash(&self, password: String) -> Result<String, super::Error> {
        use super::Error;
        let _permit = self.permits.acquire().await.map_err(Error::internal)?;
        tokio::task::spawn_blocking(move || {
            let mut salt = [0u8; 16];
            getrandom::fill(&mut salt).map_err(Error::internal)?;
            let salt = SaltString::encode_b64(&salt).map_err(Error::internal)?;
            argon2().hash_password(password.as_bytes(), &salt).map(|h| h.to_string()).map_err(Error::internal)
        })
        .await
        .map_err(Error::internal)?
    }

    /// Verifies `password` against `hash`. With no hash (unknown user, SSO-only account) it
    /// verifies against a fixed dummy so the timing does not reveal which case it was.
    pub async fn verify(&self, password: String, hash: Option<String>) -> bool {
        let Ok(_permit) = self.permits.acquire().await else {
            return false;
        };
        tokio::task::spawn_blocking(move || {
            let stored = hash.as_deref().unwrap_or(DUMMY_HASH);
            let ok = PasswordHash::new(stored)
                .is_ok_and(|parsed| argon2().verify_password(password.as_bytes(), &parsed).is_ok());
            ok && hash.is_some()
        })
        .await
        .unwrap_or(false)
    }
}

/// argon2id hash of a random string nobody knows, at the production parameters.
const DUMMY_HASH: &str =
    "$argon2id$v=19$m=19456,t=2,p=1$bXljb3JyaGl6YWxkdW1teQ$1B3qGmq8v0pYk3c0bQ1mC5m0sVvJb2l2bWpQm2n0q7A";

/// The answer of `/check-password-strength`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Strength {
    pub is_valid: bool,
    pub entropy: f64,
    /// 0 (very weak) to 4 (strong).
    pub score: u8,
    pub feedback: String,
    pub min_entropy: f64,
    pub char_set_size: u32,
    pub length: usize,
}

/// Judges a password offline. `context` holds words the password must not be (username, email).
pub fn strength(password: &str, context: &[&str]) -> Strength {
    let length = password.chars().count();
    let char_set_size = char_set(password);
    let effective = effective_length(password);
    let entropy = if char_set_size > 0 { (effective as f64) * f64::from(char_set_size).log2() } else { 0.0 };
    let entropy = (entropy * 10.0).round() / 10.0;
    let lower = password.to_lowercase();
    let feedback = if length < MIN_LEN {
        format!("Use at least {MIN_LEN} characters")
    } else if length > MAX_LEN {
        format!("Use at most {MAX_LEN} characters")
    } else if COMMON.contains(lower.as_str()) {
        "This is one of the most common passwords; choose another".to_string()
    } else if context.iter().any(|c| !c.is_empty() && lower.contains(&c.to_lowercase())) {
        "Do not include your username or email".to_string()
    } else if entropy < MIN_ENTROPY {
        "Too predictable: make it longer or mix letters, digits and symbols".to_string()
    } else {
        String::new()
    };
    let score = match entropy {
        e if e < 28.0 => 0,
        e if e < 40.0 => 1,
        e if e < 60.0 => 2,
        e if e < 80.0 => 3,
        _ => 4,
    };
    let is_valid = feedback.is_empty();
    Strength {
        is_valid,
        entropy,
        score: if is_valid { score } else { score.min(1) },
        feedback: if is_valid { "Strong enough".into() } else { feedback },
        min_entropy: MIN_ENTROPY,
        char_set_size,
        length,
    }
}

fn char_set(password: &str) -> u32 {
    let has = |f: fn(&char) -> bool| password.chars().any(|c| f(&c));
    let mut size = 0;
    if has(char::is_ascii_lowercase) {
        size += 26;
    }
    if has(char::is_ascii_uppercase) {
        size += 26;
    }
    if has(char::is_ascii_digit) {
        size += 10;
    }
    if has(|c| c.is_ascii_punctuation() || *c == ' ') {
        size += 33;
    }
    if has(|c| !c.is_ascii()) {
        size += 100;
    }
    size
}

/// Length that counts a run of the same character, or a straight run like `abcd`/`1234`, once.
fn effective_length(password: &str) -> usize {
    let chars: Vec<char> = password.chars().collect();
    let mut count = 0;
    for (i, c) in chars.iter().enumerate() {
        let step = |a: char, b: char| (b as i64) - (a as i64);
        let predictable = i > 0 && {
            let d = step(chars[i - 1], *c);
            d == 0 || (i > 1 && (d == 1 || d == -1) && step(chars[i - 2], chars[i - 1]) == d)
        };
        if !predictable {
            count += 1;
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_strength_rule_refuses_short_long_common_and_predictable_passwords() {
        assert!(!strength("short1!", &[]).is_valid);
        assert!(!strength(&"Ab1!".repeat(40), &[]).is_valid, "over 128");
        assert!(!strength("Password123", &[]).is_valid, "common, case-insensitively");
        assert!(!strength("aaaaaaaaaaaaaaaa", &[]).is_valid);
        assert!(!strength("abcdefghijklmnop", &[]).is_valid, "a straight run");
        assert!(!strength("ada-lovelace-2024", &["ada-lovelace"]).is_valid, "contains the username");
        let good = strength("correct horse battery staple", &[]);
        assert!(good.is_valid, "{}", good.feedback);
        assert!(good.score >= 3);
        assert!(strength("Tr0ub4dor&3x", &[]).is_valid);
    }

    #[tokio::test]
    async fn hashes_verify_and_unknown_users_never_do() {
        let hasher = Hasher::new(2);
        let hash = hasher.hash("correct horse battery staple".into()).await.unwrap();
        assert!(hash.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"));
        assert!(hasher.verify("correct horse battery staple".into(), Some(hash.clone())).await);
        assert!(!hasher.verify("wrong".into(), Some(hash)).await);
        assert!(!hasher.verify("anything".into(), None).await);
    }
}
