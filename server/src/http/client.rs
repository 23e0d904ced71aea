//! Who is on the other end: the client IP (believing `X-Forwarded-For` / `X-Real-IP` only from
//! `TRUSTED_PROXIES`), and the client-version gate of the session-minting routes.

use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::HeaderMap;
use axum::http::request::Parts;

use crate::config::{IpNet, Version};
use crate::error::ApiError;
use crate::state::AppState;

/// The client's IP address as far as this server can trust it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientIp(pub IpAddr);

/// The client address given the TCP peer and the proxy headers.
/// The socket peer of a request; in-process tests have no socket and count as loopback.
pub fn socket_peer(extensions: &axum::http::Extensions) -> IpAddr {
    extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.ip())
        .unwrap_or(IpAddr::from([127, 0, 0, 1]))
}

pub fn client_ip(peer: IpAddr, headers: &HeaderMap, trusted: &[IpNet]) -> IpAddr {
    let is_trusted = |ip: IpAddr| trusted.iter().any(|net| net.contains(ip));
    if !is_trusted(peer) {
        return peer;
    }
    let forwarded: Vec<IpAddr> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|part| part.trim().parse().ok())
        .collect();
    // Walk from the nearest hop outwards: the first address no trusted proxy vouches for.
    if let Some(ip) = forwarded.iter().rev().copied().find(|ip| !is_trusted(*ip)) {
        return ip;
    }
    if let Some(first) = forwarded.first() {
        return *first;
    }
    headers.get("x-real-ip").and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse().ok()).unwrap_or(peer)
}

impl FromRequestParts<AppState> for ClientIp {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        let peer = socket_peer(&parts.extensions);
        Ok(ClientIp(client_ip(peer, &parts.headers, &state.config.trusted_proxies)))
    }
}

/// Enforces `MIN_CLIENT_VERSION` on a session-minting route, before any credential work.
pub fn check_client_version(floor: Option<Version>, headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(floor) = floor else {
        if let Some(v) = headers.get("x-client-version").and_then(|v| v.to_str().ok()) {
            tracing::debug!(event = "client_version", version = v);
        }
        return Ok(());
    };
    let refuse =
        |why: &str| ApiError::ClientNotSupported(format!("{why}; this server needs client version {floor} or newer"));
    let raw = headers.get("x-client-version").ok_or_else(|| refuse("X-Client-Version is missing"))?;
    let text = raw.to_str().map_err(|_| refuse("X-Client-Version is not text"))?.trim();
    let version: Version = text.parse().map_err(|_| refuse("X-Client-Version is not a major.minor.patch version"))?;
    if version < floor {
        return Err(refuse(&format!("client version {version} is too old")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn forwarded_headers_count_only_from_trusted_peers() {
        let trusted = vec!["127.0.0.1/8".parse().unwrap(), "10.0.0.0/8".parse().unwrap()];
        let h = headers(&[("x-forwarded-for", "203.0.113.7, 10.1.1.1")]);
        assert_eq!(client_ip("127.0.0.1".parse().unwrap(), &h, &trusted), "203.0.113.7".parse::<IpAddr>().unwrap());
        assert_eq!(
            client_ip("198.51.100.2".parse().unwrap(), &h, &trusted),
            "198.51.100.2".parse::<IpAddr>().unwrap(),
            "untrusted peer: header ignored"
        );
        let spoofed = headers(&[("x-forwarded-for", "1.2.3.4, 203.0.113.9")]);
        assert_eq!(
            client_ip("127.0.0.1".parse().unwrap(), &spoofed, &trusted),
            "203.0.113.9".parse::<IpAddr>().unwrap(),
            "the client's own prefix is not believed"
        );
        let real = headers(&[("x-real-ip", "203.0.113.5")]);
        assert_eq!(client_ip("127.0.0.1".parse().unwrap(), &real, &trusted), "203.0.113.5".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn the_version_gate_refuses_missing_malformed_and_old_clients() {
        let floor = Some(Version(0, 6, 0));
        assert!(check_client_version(None, &headers(&[])).is_ok());
        assert!(check_client_version(floor, &headers(&[])).is_err());
        assert!(check_client_version(floor, &headers(&[("x-client-version", "v0.7.0")])).is_err());
        assert!(check_client_version(floor, &headers(&[("x-client-version", "0.5.9")])).is_err());
        assert!(check_client_version(floor, &headers(&[("x-client-version", "0.6.0")])).is_ok());
        assert!(check_client_version(floor, &headers(&[("x-client-version", "1.0.0")])).is_ok());
    }
}
