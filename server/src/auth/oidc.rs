//! OpenID Connect sign-in against the one configured provider: discovery, PKCE (S256), state and
//! nonce, the code exchange, and ID-token verification against the provider's JWKS (issuer,
//! audience, expiry, nonce). Every provider URL passes the outbound guard (`OIDC_BLOCK_PRIVATE_URLS`)
//! and redirects are never followed.

use std::time::{Duration, Instant};

use base64::Engine as _;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{DecodingKey, Validation};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use tokio::sync::RwLock;

use crate::config::Oidc;
use crate::outbound;

const DISCOVERY_TTL: Duration = Duration::from_secs(3600);

/// Why a sign-in with the provider did not get as far as an identity. Logged (`oidc_failed`);
/// the browser is told only that single sign-on failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An address of the provider is not one this server may reach (the outbound guard).
    #[error("{0}")]
    Refused(String),
    /// The provider could not be reached, or answered `step` with what was not expected.
    #[error("{step}: {detail}")]
    Provider { step: &'static str, detail: String },
    /// The ID token did not verify (signature, key, issuer, audience, expiry or nonce).
    #[error("ID token: {0}")]
    IdToken(String),
}

fn provider(step: &'static str) -> impl FnOnce(reqwest::Error) -> Error {
    move |e| Error::Provider { step, detail: e.to_string() }
}

fn answered(step: &'static str, status: reqwest::StatusCode) -> Error {
    Error::Provider { step, detail: format!("answered {status}") }
}

/// The parts of the discovery document we use.
#[derive(Debug, Clone, Deserialize)]
pub struct Discovery {
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub jwks_uri: String,
    #[serde(default)]
    pub end_session_endpoint: Option<String>,
}

/// Verified identity from an ID token.
#[derive(Debug, Clone, Deserialize)]
pub struct Identity {
    pub sub: String,
    #[serde(default)]
    pub email: Option<String>,
    #[serde(default)]
    pub email_verified: Option<bool>,
    #[serde(default)]
    pub preferred_username: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub nonce: Option<String>,
}

pub struct OidcClient {
    pub config: Oidc,
    pub scopes: String,
    pub redirect_uri: String,
    pub block_private: bool,
    http: reqwest::Client,
    discovery: RwLock<Option<(Instant, Discovery)>>,
}

/// What the login step hands the browser to keep until the callback.
pub struct Start {
    pub redirect: String,
    pub state: String,
    pub nonce: String,
    pub verifier: String,
}

pub fn pkce_challenge(verifier: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

impl OidcClient {
    pub fn new(config: Oidc, scopes: String, redirect_uri: String, block_private: bool, http: reqwest::Client) -> Self {
        OidcClient { config, scopes, redirect_uri, block_private, http, discovery: RwLock::new(None) }
    }

    /// The provider's discovery document, cached for an hour.
    pub async fn discovery(&self) -> Result<Discovery, Error> {
        if let Some((at, doc)) = self.discovery.read().await.as_ref()
            && at.elapsed() < DISCOVERY_TTL
        {
            return Ok(doc.clone());
        }
        let base = self.config.provider_url.trim_end_matches('/');
        let url = format!("{base}/.well-known/openid-configuration");
        outbound::check(&url, self.block_private).await.map_err(Error::Refused)?;
        let response = self.http.get(&url).send().await.map_err(provider("discovery"))?;
        if !response.status().is_success() {
            return Err(answered("discovery", response.status()));
        }
        let doc: Discovery = response.json().await.map_err(provider("discovery document"))?;
        if doc.issuer.trim_end_matches('/') != base {
            let detail = format!("the issuer {} is not OIDC_PROVIDER_URL", doc.issuer);
            return Err(Error::Provider { step: "discovery document", detail });
        }
        *self.discovery.write().await = Some((Instant::now(), doc.clone()));
        Ok(doc)
    }

    /// Begins a sign-in: where to send the browser, and the secrets to keep in cookies.
    pub async fn start(&self, random: impl Fn() -> String) -> Result<Start, Error> {
        let doc = self.discovery().await?;
        let mut url = outbound::check(&doc.authorization_endpoint, false).await.map_err(Error::Refused)?;
        let (state, nonce, verifier) = (random(), random(), random());
        url.query_pairs_mut()
            .append_pair("response_type", "code")
            .append_pair("client_id", &self.config.client_id)
            .append_pair("redirect_uri", &self.redirect_uri)
            .append_pair("scope", &self.scopes)
            .append_pair("state", &state)
            .append_pair("nonce", &nonce)
            .append_pair("code_challenge", &pkce_challenge(&verifier))
            .append_pair("code_challenge_method", "S256");
        Ok(Start { redirect: url.to_string(), state, nonce, verifier })
    }

    /// Exchanges the code and verifies the ID token. Returns the identity and the raw ID token.
    pub async fn finish(&self, code: &str, verifier: &str, nonce: &str) -> Result<(Identity, String), Error> {
        let doc = self.discovery().await?;
        outbound::check(&doc.token_endpoint, self.block_private).await.map_err(Error::Refused)?;
        let form = [
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", self.redirect_uri.as_str()),
            ("client_id", self.config.client_id.as_str()),
            ("client_secret", self.config.client_secret.expose()),
            ("code_verifier", verifier),
        ];
        let response =
            self.http.post(&doc.token_endpoint).form(&form).send().await.map_err(provider("token exchange"))?;
        if !response.status().is_success() {
            return Err(answered("token exchange", response.status()));
        }
        #[derive(Deserialize)]
        struct Tokens {
            id_token: String,
        }
        let tokens: Tokens = response.json().await.map_err(provider("token response"))?;
        let identity = self.verify(&doc, &tokens.id_token).await?;
        if identity.nonce.as_deref() != Some(nonce) {
            return Err(Error::IdToken("the nonce does not match".into()));
        }
        Ok((identity, tokens.id_token))
    }

    async fn verify(&self, doc: &Discovery, id_token: &str) -> Result<Identity, Error> {
        let header = jsonwebtoken::decode_header(id_token).map_err(|e| Error::IdToken(format!("header: {e}")))?;
        outbound::check(&doc.jwks_uri, self.block_private).await.map_err(Error::Refused)?;
        let jwks: JwkSet = self
            .http
            .get(&doc.jwks_uri)
            .send()
            .await
            .map_err(provider("JWKS"))?
            .json()
            .await
            .map_err(provider("JWKS document"))?;
        let jwk = match &header.kid {
            Some(kid) => jwks.find(kid),
            None => jwks.keys.first(),
        }
        .ok_or_else(|| Error::IdToken("no JWKS key matches it".into()))?;
        let key = DecodingKey::from_jwk(jwk).map_err(|e| Error::IdToken(format!("JWKS key: {e}")))?;
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[doc.issuer.as_str()]);
        validation.set_audience(&[self.config.client_id.as_str()]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        jsonwebtoken::decode::<Identity>(id_token, &key, &validation)
            .map(|d| d.claims)
            .map_err(|e| Error::IdToken(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pkce_challenge_is_unpadded_base64url_of_sha256() {
        // Expected value computed independently with Python's hashlib and base64.
        assert_eq!(
            pkce_challenge("dBjftJeZ4CVP-mJ92Z2nL8ZpH1fzX3XbRqJHPuWrF3Q"),
            "zp5Nfsdm1svfiHRgjgDdte4bLPqJ61HfiW_jq4XJjnE"
        );
    }
}
