//! The session-signing secret: its strength rules, and the generated key persisted in the data
//! folder (mode 0600) when `JWT_SECRET_KEY` is unset.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Secret text whose `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: String) -> Self {
        Secret(value)
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// Minimum secret length in bytes.
pub const MIN_LEN: usize = 32;

const PLACEHOLDERS: &[&str] = &[
    "changeme",
    "change-me",
    "change_me",
    "secret",
    "password",
    "placeholder",
    "example",
    "your-",
    "your_",
    "replace",
    "default",
    "insecure",
    "jwt-key",
    "jwt_key",
    "todo",
    "xxxx",
];

/// Rejects short, low-entropy and placeholder secrets, saying which rule failed.
pub fn check_strength(value: &str) -> Result<(), String> {
    if value.len() < MIN_LEN {
        return Err(format!(
            "must be at least {MIN_LEN} bytes (got {}); generate one with `openssl rand -hex 32`",
            value.len()
        ));
    }
    let lower = value.to_ascii_lowercase();
    if let Some(word) = PLACEHOLDERS.iter().find(|w| lower.contains(*w)) {
        return Err(format!("looks like a placeholder (contains {word:?}); use random bytes"));
    }
    let bytes = value.as_bytes();
    let distinct: HashSet<u8> = bytes.iter().copied().collect();
    if distinct.len() < 10 || bits_per_byte(bytes) < 3.0 || is_periodic(bytes) {
        return Err("has too little entropy; use random bytes, e.g. `openssl rand -hex 32`".into());
    }
    Ok(())
}

fn bits_per_byte(bytes: &[u8]) -> f64 {
    let mut counts = [0usize; 256];
    for b in bytes {
        counts[*b as usize] += 1;
    }
    let n = bytes.len() as f64;
    counts.iter().filter(|c| **c > 0).map(|c| *c as f64 / n).map(|p| -p * p.log2()).sum()
}

/// A short pattern repeated ("abcdabcd...").
fn is_periodic(bytes: &[u8]) -> bool {
    (1..=bytes.len() / 2).any(|p| bytes.iter().enumerate().skip(p).all(|(i, b)| *b == bytes[i - p]))
}

/// The file that holds the generated secret.
pub fn path(data_dir: &Path) -> PathBuf {
    data_dir.join("jwt_secret")
}

/// Returns the persisted secret, creating it (32 random bytes, hex, mode 0600) on first start.
/// The flag says whether it was generated now.
pub fn load_or_generate(data_dir: &Path) -> std::io::Result<(Secret, bool)> {
    let path = path(data_dir);
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let value = text.trim().to_string();
            check_strength(&value).map_err(|reason| {
                std::io::Error::other(format!("{}: the persisted secret is unusable: {reason}", path.display()))
            })?;
            Ok((Secret(value), false))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut raw = [0u8; 32];
            getrandom::fill(&mut raw).map_err(|e| std::io::Error::other(e.to_string()))?;
            let value = hex::encode(raw);
            write_private(&path, value.as_bytes())?;
            Ok((Secret(value), true))
        }
        Err(e) => Err(e),
    }
}

fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weak_secrets_are_refused() {
        assert!(check_strength("short").is_err());
        assert!(check_strength(&"a".repeat(64)).is_err());
        assert!(check_strength(&"abcdefgh".repeat(8)).is_err(), "periodic");
        assert!(check_strength("please-changeme-please-changeme-1234").is_err());
        assert!(check_strength("3f9c1a7be2d04c88a9e15b6f70d2c4e1937ab0c5d8e2f61a4b7c9d0e3f5a8b21").is_ok());
    }

    #[test]
    fn the_generated_secret_is_persisted_private_and_reused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let (first, generated) = load_or_generate(dir.path()).unwrap();
        assert!(generated);
        assert!(check_strength(first.expose()).is_ok());
        let mode = std::fs::metadata(path(dir.path())).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let (again, generated) = load_or_generate(dir.path()).unwrap();
        assert!(!generated);
        assert_eq!(first, again);
        assert_eq!(format!("{first:?}"), "Secret(<redacted>)");
    }
}
