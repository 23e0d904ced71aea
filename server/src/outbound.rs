//! Guarding outbound destinations (SSRF): a URL whose host resolves to a private, loopback,
//! link-local or otherwise internal address is refused when the integration's posture says so.
//! Every integration that calls a configured or user-supplied URL checks it here first.
//! (Resolution and connection are two lookups; a host that changes its answer in between is not
//! caught here. The shared client also never follows redirects.)

use std::net::IpAddr;

use reqwest::Url;

/// Whether `ip` is not a public internet address.
pub fn is_internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            v4.is_private()
                || v4.is_loopback()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || (o[0] == 100 && (o[1] & 0xc0) == 64)
                || o[0] == 0
                || o[0] >= 240
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_internal(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
        }
    }
}

/// Checks that `url` is http(s) and, when `block_internal`, that its host resolves only to
/// public addresses.
pub async fn check(url: &str, block_internal: bool) -> Result<Url, String> {
    let parsed = Url::parse(url).map_err(|e| format!("{url:?} is not a URL: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!("{url:?} must be http or https"));
    }
    let host = parsed.host_str().ok_or_else(|| format!("{url:?} has no host"))?.trim_matches(['[', ']']).to_string();
    if !block_internal {
        return Ok(parsed);
    }
    let port = parsed.port_or_known_default().unwrap_or(443);
    let addresses: Vec<IpAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![ip],
        Err(_) => tokio::net::lookup_host((host.as_str(), port))
            .await
            .map_err(|e| format!("cannot resolve {host}: {e}"))?
            .map(|a| a.ip())
            .collect(),
    };
    if addresses.is_empty() || addresses.iter().any(|ip| is_internal(*ip)) {
        return Err(format!("{host} resolves to a private or internal address, which this integration may not reach"));
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_ranges_are_recognised() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fc00::1",
            "fe80::1",
            "::ffff:10.0.0.1",
        ] {
            assert!(is_internal(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111"] {
            assert!(!is_internal(ip.parse().unwrap()), "{ip}");
        }
    }

    #[tokio::test]
    async fn loopback_urls_are_refused_only_when_blocking() {
        assert!(check("http://127.0.0.1:8080/x", true).await.is_err());
        assert!(check("http://localhost:8080/x", true).await.is_err());
        assert!(check("http://127.0.0.1:8080/x", false).await.is_ok());
        assert!(check("ftp://example.org/", false).await.is_err());
    }
}
