//! Two-factor codes: RFC 6238 TOTP (SHA-1, 6 digits, 30 s) with one step of clock drift either
//! way, never accepting a step at or before the last accepted one (no replay inside the window);
//! and single-use recovery codes stored as SHA-256.

use totp_rs::{Algorithm, Secret, TOTP};

use super::records::{random_token, sha256_hex};

pub const ISSUER: &str = "Mycorrhizal";
const STEP: u64 = 30;
pub const RECOVERY_CODES: usize = 10;

pub fn new_secret() -> Vec<u8> {
    let mut secret = vec![0u8; 20];
    getrandom::fill(&mut secret).expect("the operating system's random source is available");
    secret
}

pub fn base32(secret: &[u8]) -> String {
    Secret::Raw(secret.to_vec()).to_encoded().to_string()
}

/// The `otpauth://` URI authenticator apps scan.
pub fn otpauth_url(secret: &[u8], account: &str) -> String {
    let label = format!("{ISSUER}:{account}").replace(' ', "%20").replace('@', "%40");
    format!("otpauth://totp/{label}?secret={}&issuer={ISSUER}&algorithm=SHA1&digits=6&period={STEP}", base32(secret))
}

fn totp(secret: &[u8]) -> TOTP {
    TOTP::new_unchecked(Algorithm::SHA1, 6, 1, STEP, secret.to_vec())
}

/// The step of `code` if it is valid at `now` (unix seconds) and newer than `last_step`.
pub fn verify(secret: &[u8], code: &str, now: u64, last_step: u64) -> Option<u64> {
    let code = code.trim().replace(' ', "");
    if code.len() != 6 || !code.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let generator = totp(secret);
    let current = now / STEP;
    [current.saturating_sub(1), current, current + 1]
        .into_iter()
        .filter(|step| *step > last_step)
        .find(|step| constant_eq(generator.generate(step * STEP).as_bytes(), code.as_bytes()))
}

/// The code for `now`; for tests and for the enrolment check.
pub fn code_at(secret: &[u8], now: u64) -> String {
    totp(secret).generate(now)
}

fn constant_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Fresh recovery codes: the plaintexts to show once, and the hashes to store.
pub fn recovery_codes() -> (Vec<String>, Vec<String>) {
    let plain: Vec<String> = (0..RECOVERY_CODES)
        .map(|_| {
            let raw = random_token(9).to_lowercase().replace(['-', '_'], "x");
            format!("{}-{}", &raw[..6], &raw[6..12])
        })
        .collect();
    let hashes = plain.iter().map(|c| hash_recovery(c)).collect();
    (plain, hashes)
}

pub fn hash_recovery(code: &str) -> String {
    sha256_hex(&code.trim().to_lowercase())
}

/// Whether `code` looks like a recovery code rather than a TOTP code.
pub fn is_recovery_shape(code: &str) -> bool {
    code.trim().len() == 13 && code.trim().as_bytes().get(6) == Some(&b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_verify_once_within_drift() {
        let secret = new_secret();
        let now = 1_800_000_000;
        let code = code_at(&secret, now);
        let step = verify(&secret, &code, now, 0).expect("valid now");
        assert_eq!(verify(&secret, &code, now, step), None, "not twice");
        assert!(verify(&secret, &code, now + 30, 0).is_some(), "one step of drift");
        assert_eq!(verify(&secret, &code, now + 120, 0), None, "too old");
        assert_eq!(verify(&secret, "12345", now, 0), None);
        assert!(otpauth_url(&secret, "ada").starts_with("otpauth://totp/Mycorrhizal:ada?secret="));
    }

    #[test]
    fn recovery_codes_are_distinct_and_hashed() {
        let (plain, hashes) = recovery_codes();
        assert_eq!(plain.len(), 10);
        assert!(plain.iter().all(|c| is_recovery_shape(c)));
        assert_eq!(hash_recovery(&plain[0].to_uppercase()), hashes[0]);
        let unique: std::collections::HashSet<_> = plain.iter().collect();
        assert_eq!(unique.len(), 10);
    }
}
