//! Web Push (RFC 8030) with VAPID (RFC 8292) and message encryption (RFC 8291): the server's
//! VAPID key pair, the browsers a user registered, and the pieces of one push request.
//!
//! The VAPID key is a P-256 key pair generated on first use (the first `GET` of the public key or
//! the first push) and stored sealed with the data key in `map:webpush`; browsers subscribe with
//! its public half (`applicationServerKey`). A subscription (`endpoint`, `keys.p256dh`,
//! `keys.auth`) belongs to one user; its keys are sealed, its endpoint is kept to recognise the
//! browser (registering an endpoint again replaces it, also when another user had it: the browser
//! belongs to whoever signed in on it last). A push service's 404 or 410 removes the subscription.
//!
//! A message is `{"title", "body"}` as JSON, encrypted as one aes128gcm record (RFC 8188, record
//! size 4096) with an ephemeral ECDH P-256 key, HKDF-SHA256 and AES-128-GCM, and sent with
//! `Authorization: vapid t=<ES256 JWT>, k=<public key>`, `TTL`, `Urgency` and a `Topic` derived
//! from the message's idempotency key (a push service replaces an undelivered repeat).
//!
//! What it does not do: the delivery attempt itself is `super::deliver`'s; the browser side is
//! the web client's script and service worker.

use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes128Gcm, Nonce};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use hkdf::Hkdf;
use jiff::Timestamp;
use mycorrhizal_engine::Engine;
use p256::ecdsa::signature::Signer;
use p256::ecdsa::{Signature, SigningKey};
use p256::elliptic_curve::sec1::ToEncodedPoint;
use p256::{PublicKey, SecretKey};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use super::channels::{PushSubscription, config_of, endpoint_digest};
use super::notifier::Notifier;
use crate::crm::{Error, Result};
use crate::keys::DataKey;

const KEY_TABLE: &str = "map:webpush";
const KEY_NAME: &str = "vapid_private";
/// Record size of the single aes128gcm record a message is.
pub const RECORD_SIZE: u32 = 4096;
/// Most bytes of a message's text (the JSON, padding delimiter and tag must fit one record).
const MAX_BODY: usize = 3000;
/// Most browsers one user may register.
pub const MAX_SUBSCRIPTIONS: usize = 20;
/// How long a push service keeps an undelivered message (a day: the digest is daily).
pub const TTL_SECONDS: u32 = 86_400;

fn keys_binding(user: u64) -> String {
    crate::keys::binding("push_subscriptions", user, "keys")
}

/// A subscription as its owner sees it (never its keys).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PushSubscriptionView {
    pub id: u64,
    pub endpoint: String,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Timestamp,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PushSubscriptionList {
    pub subscriptions: Vec<PushSubscriptionView>,
}

/// The keys of a browser's `PushSubscription.toJSON()`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PushKeys {
    /// The browser's P-256 public key, uncompressed (65 bytes), base64url.
    #[schema(pattern = r"^[A-Za-z0-9_-]{87}={0,1}$")]
    pub p256dh: String,
    /// The 16-byte authentication secret, base64url.
    #[schema(pattern = r"^[A-Za-z0-9_-]{22}(==)?$")]
    pub auth: String,
}

/// A browser's `PushSubscription.toJSON()` (`expirationTime` is accepted and ignored), or the
/// existing web client's flat form (`p256dh` and `auth` beside `endpoint`, with a
/// `device_label`, accepted and not kept).
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PushSubscriptionInput {
    /// The push service's URL for this browser, http or https.
    #[schema(schema_with = crate::outbound::url_schema)]
    pub endpoint: String,
    /// The keys (or, flat, `p256dh` and `auth`).
    pub keys: Option<PushKeys>,
    #[schema(pattern = r"^[A-Za-z0-9_-]{87}={0,1}$")]
    pub p256dh: Option<String>,
    #[schema(pattern = r"^[A-Za-z0-9_-]{22}(==)?$")]
    pub auth: Option<String>,
    #[schema(max_length = 200)]
    pub device_label: Option<String>,
    #[serde(rename = "expirationTime")]
    pub expiration_time: Option<f64>,
}

/// The server's VAPID public key, for `pushManager.subscribe({applicationServerKey})`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct VapidKeyView {
    /// Uncompressed P-256 point (65 bytes), base64url without padding.
    pub public_key: String,
}

// ---------------------------------------------------------------------------------------------
// The VAPID key

fn vapid_binding() -> String {
    crate::keys::binding("webpush", 0, "vapid")
}

/// Why a message could not be sealed for a browser (RFC 8291): a failed attempt's reason.
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    #[error("the message is too long for one record")]
    TooLong,
    #[error("p256dh is not a P-256 public key")]
    NotAKey,
    #[error("no randomness: {0}")]
    NoRandomness(getrandom::Error),
    #[error("key derivation failed")]
    Derivation,
    #[error("encryption failed")]
    Encryption,
}

/// A P-256 secret key from the OS random source.
fn random_secret() -> std::result::Result<SecretKey, SealError> {
    loop {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(SealError::NoRandomness)?;
        // A value of zero or at least the group order (odds about 2^-32) is drawn again.
        if let Ok(key) = SecretKey::from_slice(&bytes) {
            return Ok(key);
        }
    }
}

/// The server's VAPID key, created and stored (sealed) on first use. Any failure is internal.
pub async fn vapid_key(engine: &Engine, data_key: &DataKey) -> Result<SecretKey> {
    let stored = crate::crm::blocking(engine, |engine| engine.global()?.map_get(KEY_TABLE, KEY_NAME)).await??;
    let sealed = match stored {
        Some(sealed) => sealed,
        None => {
            let fresh = random_secret().map_err(Error::internal)?;
            let sealed = data_key.encrypt(&fresh.to_bytes(), &vapid_binding()).map_err(Error::internal)?;
            // Two first uses at once: the write that comes second keeps the first one's key.
            engine
                .write_async(move |tx| match tx.global().map_get(KEY_TABLE, KEY_NAME)? {
                    Some(existing) => Ok(existing),
                    None => {
                        tx.global().map_put(KEY_TABLE, KEY_NAME, &sealed)?;
                        Ok(sealed.clone())
                    }
                })
                .await?
        }
    };
    let raw = data_key
        .decrypt(&sealed, &vapid_binding())
        .ok_or_else(|| Error::internal("the VAPID key cannot be read (data key changed)"))?;
    SecretKey::from_slice(&raw).map_err(|_| Error::internal("the stored VAPID key is not a P-256 key"))
}

/// A public key as an uncompressed point (65 bytes).
pub fn public_bytes(key: &PublicKey) -> Vec<u8> {
    key.to_encoded_point(false).as_bytes().to_vec()
}

/// The server's VAPID public key (base64url).
pub async fn public_key(notifier: &Notifier) -> Result<VapidKeyView> {
    let key = vapid_key(&notifier.engine, &notifier.data_key).await?;
    Ok(VapidKeyView { public_key: B64.encode(public_bytes(&key.public_key())) })
}

/// `vapid t=<JWT>, k=<public key>` for a push to `endpoint` (RFC 8292): an ES256 JWT whose `aud`
/// is the endpoint's origin, valid for 12 hours from `now`, with `sub` the operator contact.
pub fn vapid_authorization(key: &SecretKey, endpoint: &reqwest::Url, subject: &str, now: Timestamp) -> String {
    let header = B64.encode(br#"{"typ":"JWT","alg":"ES256"}"#);
    let claims = serde_json::json!({
        "aud": endpoint.origin().ascii_serialization(),
        "exp": now.as_second() + 12 * 3600,
        "sub": subject,
    });
    let input = format!("{header}.{}", B64.encode(claims.to_string()));
    let signature: Signature = SigningKey::from(key).sign(input.as_bytes());
    let jwt = format!("{input}.{}", B64.encode(signature.to_bytes()));
    format!("vapid t={jwt}, k={}", B64.encode(public_bytes(&key.public_key())))
}

// ---------------------------------------------------------------------------------------------
// RFC 8291 message encryption

/// Encrypts `plaintext` for a browser with public key `ua_public` (65 bytes) and `auth` secret,
/// with the ephemeral key `as_secret` and `salt`: the aes128gcm body (header + one record).
pub fn encrypt_with(
    plaintext: &[u8],
    ua_public: &[u8],
    auth: &[u8],
    as_secret: &SecretKey,
    salt: &[u8; 16],
) -> std::result::Result<Vec<u8>, SealError> {
    if plaintext.len() + 17 > RECORD_SIZE as usize {
        return Err(SealError::TooLong);
    }
    let ua = PublicKey::from_sec1_bytes(ua_public).map_err(|_| SealError::NotAKey)?;
    let as_public = public_bytes(&as_secret.public_key());
    let shared = p256::ecdh::diffie_hellman(as_secret.to_nonzero_scalar(), ua.as_affine());
    // IKM = HKDF(auth, ecdh_secret, "WebPush: info" || 0 || ua_public || as_public, 32)
    let mut key_info = b"WebPush: info\0".to_vec();
    key_info.extend_from_slice(ua_public);
    key_info.extend_from_slice(&as_public);
    let mut ikm = [0u8; 32];
    Hkdf::<Sha256>::new(Some(auth), shared.raw_secret_bytes())
        .expand(&key_info, &mut ikm)
        .map_err(|_| SealError::Derivation)?;
    let prk = Hkdf::<Sha256>::new(Some(salt), &ikm);
    let mut cek = [0u8; 16];
    let mut nonce = [0u8; 12];
    prk.expand(b"Content-Encoding: aes128gcm\0", &mut cek).map_err(|_| SealError::Derivation)?;
    prk.expand(b"Content-Encoding: nonce\0", &mut nonce).map_err(|_| SealError::Derivation)?;
    // One record, so it is the last: the padding delimiter is 2, no padding after it.
    let mut record = plaintext.to_vec();
    record.push(2);
    let sealed = Aes128Gcm::new(&cek.into())
        .encrypt(Nonce::from_slice(&nonce), record.as_slice())
        .map_err(|_| SealError::Encryption)?;
    let mut body = Vec::with_capacity(86 + sealed.len());
    body.extend_from_slice(salt);
    body.extend_from_slice(&RECORD_SIZE.to_be_bytes());
    body.push(as_public.len() as u8);
    body.extend_from_slice(&as_public);
    body.extend_from_slice(&sealed);
    Ok(body)
}

/// Encrypts `plaintext` for a browser with a fresh ephemeral key and salt.
pub fn encrypt(plaintext: &[u8], ua_public: &[u8], auth: &[u8]) -> std::result::Result<Vec<u8>, SealError> {
    let mut salt = [0u8; 16];
    getrandom::fill(&mut salt).map_err(SealError::NoRandomness)?;
    encrypt_with(plaintext, ua_public, auth, &random_secret()?, &salt)
}

/// The JSON a service worker shows: `{"title", "body"}`, the body cut to fit one record.
pub fn payload(title: &str, text: &str) -> Vec<u8> {
    let cut = |s: &str, max: usize| {
        let mut end = s.len().min(max);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s[..end].to_string()
    };
    serde_json::json!({ "title": cut(title, 200), "body": cut(text, MAX_BODY) }).to_string().into_bytes()
}

/// RFC 8030 `Topic` for a message key: 32 base64url characters of its digest.
pub fn topic(key: &str) -> String {
    let mut t = B64.encode(Sha256::digest(key.as_bytes()));
    t.truncate(32);
    t
}

/// A subscription's `(p256dh, auth)` in the clear.
pub fn keys_of(data_key: &DataKey, sub: &PushSubscription) -> Option<(Vec<u8>, Vec<u8>)> {
    let plain = data_key.decrypt(&sub.sealed_keys, &keys_binding(sub.user_id))?;
    if plain.len() != 65 + 16 {
        return None;
    }
    let (p256dh, auth) = plain.split_at(65);
    Some((p256dh.to_vec(), auth.to_vec()))
}

// ---------------------------------------------------------------------------------------------
// Subscriptions

fn decode_b64(field: &str, value: &str, len: usize) -> Result<Vec<u8>> {
    let trimmed = value.trim_end_matches('=');
    let bytes = B64.decode(trimmed).map_err(|_| Error::invalid(field, "must be base64url"))?;
    if bytes.len() != len {
        return Err(Error::invalid(field, format!("must be {len} bytes")));
    }
    Ok(bytes)
}

fn view(id: u64, s: &PushSubscription) -> PushSubscriptionView {
    PushSubscriptionView { id, endpoint: s.endpoint.clone(), created_at: s.created_at }
}

/// Registers a browser for the caller (replacing an earlier registration of the same endpoint,
/// whoever made it). Returns it and whether it is new.
pub async fn subscribe(
    notifier: &Notifier,
    user: u64,
    input: PushSubscriptionInput,
) -> Result<(PushSubscriptionView, bool)> {
    let endpoint = input.endpoint;
    if endpoint.len() > 2000 || !crate::outbound::documented_shape(&endpoint, false) {
        return Err(Error::invalid("endpoint", crate::outbound::SHAPE_REFUSED));
    }
    let parsed =
        reqwest::Url::parse(&endpoint).map_err(|e| Error::invalid("endpoint", format!("is not a URL: {e}")))?;
    // A push service's name is resolved (and checked) at every delivery by the guarded client;
    // here an internal literal is refused at once.
    crate::outbound::check_literal(&parsed, notifier.features.webhook_block_private_urls)
        .map_err(|reason| Error::invalid("endpoint", reason))?;
    let (p256dh, auth) = match (input.keys, input.p256dh, input.auth) {
        (Some(keys), _, _) => (keys.p256dh, keys.auth),
        (None, Some(p256dh), Some(auth)) => (p256dh, auth),
        _ => return Err(Error::invalid("keys", "is required: keys.p256dh and keys.auth (or p256dh and auth)")),
    };
    let p256dh = decode_b64("keys.p256dh", &p256dh, 65)?;
    PublicKey::from_sec1_bytes(&p256dh).map_err(|_| Error::invalid("keys.p256dh", "is not a P-256 public key"))?;
    let auth = decode_b64("keys.auth", &auth, 16)?;
    let mut keys = p256dh;
    keys.extend_from_slice(&auth);
    let sealed_keys = notifier.data_key.encrypt(&keys, &keys_binding(user)).map_err(Error::internal)?;
    notifier
        .engine
        .write_async(move |tx| {
            let g = tx.global();
            let digest = endpoint_digest(&endpoint);
            let earlier = match g.lookup::<PushSubscription>("endpoint", &digest)? {
                Some(id) => Some((id, g.get::<PushSubscription>(id)?)),
                None => None,
            };
            let mut config = config_of(tx, user)?;
            let sub = PushSubscription {
                user_id: user,
                endpoint: endpoint.clone(),
                sealed_keys: sealed_keys.clone(),
                created_at: tx.now(),
            };
            if let Some((id, old)) = earlier {
                if old.user_id != user {
                    // The browser changed hands: it leaves the other user's list.
                    let mut theirs = config_of(tx, old.user_id)?;
                    theirs.push.retain(|p| *p != id);
                    g.insert_at(old.user_id, &theirs)?;
                    config.push.push(id);
                    g.insert_at(user, &config)?;
                }
                g.put(id, &sub)?;
                return Ok(Ok((view(id, &sub), false)));
            }
            if config.push.len() >= MAX_SUBSCRIPTIONS {
                return Ok(Err(Error::Conflict(format!("at most {MAX_SUBSCRIPTIONS} browsers per user"))));
            }
            let id = g.insert(&sub)?;
            config.push.push(id);
            g.insert_at(user, &config)?;
            Ok(Ok((view(id, &sub), true)))
        })
        .await?
}

/// The caller's registered browsers.
pub fn list(notifier: &Notifier, user: u64) -> Result<PushSubscriptionList> {
    let g = notifier.engine.global()?;
    let ids = match g.get::<super::channels::ChannelConfig>(user) {
        Ok(c) => c.push,
        Err(mycorrhizal_engine::Error::NotFound) => Vec::new(),
        Err(e) => return Err(e.into()),
    };
    let mut subscriptions = Vec::new();
    for id in ids {
        match g.get::<PushSubscription>(id) {
            Ok(s) if s.user_id == user => subscriptions.push(view(id, &s)),
            Ok(_) | Err(mycorrhizal_engine::Error::NotFound) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(PushSubscriptionList { subscriptions })
}

/// Removes `user`'s subscription `id` inside `tx`; false when it is not theirs.
pub fn remove_in(tx: &mycorrhizal_engine::Tx<'_>, user: u64, id: u64) -> mycorrhizal_engine::Result<bool> {
    match tx.global().get::<PushSubscription>(id) {
        Ok(s) if s.user_id == user => {}
        Ok(_) | Err(mycorrhizal_engine::Error::NotFound) => return Ok(false),
        Err(e) => return Err(e),
    }
    tx.global().delete::<PushSubscription>(id)?;
    let mut config = config_of(tx, user)?;
    config.push.retain(|p| *p != id);
    tx.global().insert_at(user, &config)?;
    Ok(true)
}

/// Removes every browser `user` registered (an account's deletion; the configuration that lists
/// them goes with `channels::remove_user`). Returns how many.
pub(crate) fn remove_user(tx: &mycorrhizal_engine::Tx<'_>, user: u64) -> mycorrhizal_engine::Result<u64> {
    let mut removed = 0;
    for (id, s) in tx.global().list::<PushSubscription>()? {
        if s.user_id == user {
            tx.global().delete::<PushSubscription>(id)?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// Removes the caller's subscription `id` (404 when it is not theirs).
pub async fn unsubscribe(notifier: &Notifier, user: u64, id: u64) -> Result<()> {
    let removed = notifier.engine.write_async(move |tx| remove_in(tx, user, id)).await?;
    if removed { Ok(()) } else { Err(Error::NotFound) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Vec<u8> {
        B64.decode(s).expect("base64url")
    }

    /// RFC 8291, Appendix A: fixed keys and salt give the published message byte for byte.
    #[test]
    fn the_rfc_8291_example_encrypts_to_the_published_bytes() {
        let as_secret = SecretKey::from_slice(&d("yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw")).expect("key");
        assert_eq!(
            B64.encode(public_bytes(&as_secret.public_key())),
            "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8"
        );
        let ua_public = d("BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4");
        let auth = d("BTBZMqHH6r4Tts7J_aSIgg");
        let salt: [u8; 16] = d("DGv6ra1nlYgDCS1FRnbzlw").try_into().expect("16 bytes");
        let body = encrypt_with(b"When I grow up, I want to be a watermelon", &ua_public, &auth, &as_secret, &salt)
            .expect("encrypts");
        assert_eq!(
            B64.encode(body),
            "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"
        );
    }

    #[test]
    fn the_vapid_jwt_verifies_with_the_public_key_and_names_the_origin() {
        use p256::ecdsa::VerifyingKey;
        use p256::ecdsa::signature::Verifier;
        let key = random_secret().expect("key");
        let url = reqwest::Url::parse("https://push.example.net:8443/send/abc?x=1").expect("url");
        let now: Timestamp = "2026-03-01T08:00:00Z".parse().expect("instant");
        let header = vapid_authorization(&key, &url, "mailto:ops@example.org", now);
        let (jwt, k) = header.strip_prefix("vapid t=").and_then(|r| r.split_once(", k=")).expect("t and k");
        assert_eq!(d(k), public_bytes(&key.public_key()));
        let (input, sig) = jwt.rsplit_once('.').expect("signature");
        let verifying = VerifyingKey::from_sec1_bytes(&d(k)).expect("point");
        let sig = Signature::from_slice(&d(sig)).expect("r||s");
        assert!(verifying.verify(input.as_bytes(), &sig).is_ok());
        let claims: serde_json::Value =
            serde_json::from_slice(&d(input.split('.').nth(1).expect("claims"))).expect("json");
        assert_eq!(claims["aud"], "https://push.example.net:8443");
        assert_eq!(claims["exp"], now.as_second() + 12 * 3600);
        assert_eq!(claims["sub"], "mailto:ops@example.org");
    }

    #[test]
    fn a_long_text_still_fits_one_record() {
        let body = payload("t", &"ä".repeat(5000));
        assert!(body.len() + 17 <= RECORD_SIZE as usize);
        assert_eq!(topic("digest:1:2026-03-01:webpush:4").len(), 32);
    }
}
