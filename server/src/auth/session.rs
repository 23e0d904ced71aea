//! Session tokens: HS256 JWTs signed with `JWT_SECRET_KEY` carrying the account's token version
//! and a server-side session id (`sid`), set as the httpOnly `auth_token` cookie. A 2FA challenge
//! is a separate short JWT with `purpose: "2fa"`, never accepted as a session.

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

pub const COOKIE: &str = "auth_token";
pub const PENDING_COOKIE: &str = "2fa_pending";
/// Lifetime of a 2FA challenge.
pub const PENDING_SECONDS: i64 = 600;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Claims {
    pub user_id: u64,
    pub username: String,
    pub token_version: u64,
    pub authorized: bool,
    pub exp: i64,
    pub iat: i64,
    /// Server-side session id (absent on a 2FA challenge).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sid: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purpose: Option<String>,
}

/// Why a token was refused; each maps to the spec's exact 401 message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenError {
    BadSignature,
    Expired,
    Malformed,
}

impl TokenError {
    /// The error an account operation answers for it: an expired token is `TOKEN_EXPIRED`.
    pub fn refusal(self) -> super::Error {
        match self {
            TokenError::Expired => super::Error::TokenExpired(self.message()),
            other => super::Error::Unauthorized(other.message()),
        }
    }

    pub fn message(self) -> &'static str {
        match self {
            TokenError::BadSignature => "Invalid token signature",
            TokenError::Expired => "Token expired",
            TokenError::Malformed => "Malformed token",
        }
    }
}

/// Signs and checks tokens with one secret.
#[derive(Clone)]
pub struct Signer {
    encoding: EncodingKey,
    decoding: DecodingKey,
}

impl Signer {
    pub fn new(secret: &[u8]) -> Signer {
        Signer { encoding: EncodingKey::from_secret(secret), decoding: DecodingKey::from_secret(secret) }
    }

    pub fn sign(&self, claims: &Claims) -> String {
        // HMAC signing of a serializable struct cannot fail.
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), claims, &self.encoding).expect("HS256 signing")
    }

    /// Checks the signature, then expiry against `now` (unix seconds) from the server's one
    /// injectable clock rather than the library's own reading of the system time.
    pub fn verify(&self, token: &str, now: i64) -> Result<Claims, TokenError> {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.validate_exp = false;
        validation.set_required_spec_claims(&["exp"]);
        let claims = jsonwebtoken::decode::<Claims>(token, &self.decoding, &validation).map(|d| d.claims).map_err(
            |e| match e.kind() {
                ErrorKind::InvalidSignature => TokenError::BadSignature,
                _ => TokenError::Malformed,
            },
        )?;
        if claims.exp <= now {
            return Err(TokenError::Expired);
        }
        Ok(claims)
    }
}

/// Cookie attributes from the configuration.
#[derive(Debug, Clone)]
pub struct CookiePolicy {
    pub secure: bool,
    pub domain: Option<String>,
}

impl CookiePolicy {
    /// `Set-Cookie` value for `name=value` living `max_age` seconds (0 clears it).
    pub fn cookie(&self, name: &str, value: &str, max_age: i64) -> String {
        let mut cookie = format!("{name}={value}; Path=/; Max-Age={max_age}; HttpOnly; SameSite=Lax");
        if self.secure {
            cookie.push_str("; Secure");
        }
        if let Some(domain) = &self.domain {
            cookie.push_str("; Domain=");
            cookie.push_str(domain);
        }
        cookie
    }
}

/// The value of cookie `name` in a `Cookie` header.
pub fn read_cookie<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header.split(';').map(str::trim).find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(exp: i64) -> Claims {
        Claims {
            user_id: 1,
            username: "ada".into(),
            token_version: 0,
            authorized: true,
            exp,
            iat: 0,
            sid: Some(9),
            purpose: None,
        }
    }

    #[test]
    fn each_refusal_has_its_message() {
        let now = jiff::Timestamp::now().as_second();
        let a = Signer::new(b"first secret first secret first secret!");
        let b = Signer::new(b"other secret other secret other secret!");
        let token = a.sign(&claims(now + 60));
        assert_eq!(a.verify(&token, now).unwrap().sid, Some(9));
        assert_eq!(b.verify(&token, now).unwrap_err().message(), "Invalid token signature");
        assert_eq!(a.verify(&a.sign(&claims(now - 5)), now).unwrap_err().message(), "Token expired");
        assert_eq!(a.verify("not.a.jwt", now).unwrap_err().message(), "Malformed token");
    }

    #[test]
    fn cookies_are_read_and_written() {
        assert_eq!(read_cookie("a=1; auth_token=xyz; b=2", "auth_token"), Some("xyz"));
        assert_eq!(read_cookie("auth_token_x=1", "auth_token"), None);
        let policy = CookiePolicy { secure: true, domain: Some("example.org".into()) };
        let c = policy.cookie(COOKIE, "v", 60);
        assert!(
            c.contains("HttpOnly")
                && c.contains("SameSite=Lax")
                && c.contains("Secure")
                && c.contains("Domain=example.org")
        );
    }
}
