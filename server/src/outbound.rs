//! Guarding outbound destinations (SSRF): a URL whose host is or resolves to a private, loopback,
//! link-local or otherwise internal address is refused when the integration's posture says so.
//! Every integration that calls a configured or user-supplied URL checks it here first.
//!
//! [`check`] is the early answer (a form or an API call naming a URL). What closes the
//! DNS-rebinding window is [`guarded_client`]: its resolver looks the host up once, refuses the
//! answer if any address is internal, and hands exactly the checked addresses to the connector,
//! so the connection goes to an address that was checked (no second lookup). An IP literal never
//! reaches a resolver, so it is checked before the request ([`check_literal`]); a redirect is
//! followed (at most three) only to a public literal or a name the same resolver will check.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

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
                || (o[0] == 192 && o[1] == 0 && o[2] == 0)
                || (o[0] == 198 && (o[1] & 0xfe) == 18)
                || o[0] == 0
                || o[0] >= 240
        }
        IpAddr::V6(v6) => {
            // IPv4-mapped (::ffff:a.b.c.d) and the deprecated IPv4-compatible (::a.b.c.d) forms.
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_internal(IpAddr::V4(v4));
            }
            let s = v6.segments();
            if s[..6] == [0, 0, 0, 0, 0, 0] && !v6.is_loopback() && !v6.is_unspecified() {
                let [a, b] = s[6].to_be_bytes();
                let [c, d] = s[7].to_be_bytes();
                return is_internal(IpAddr::V4(std::net::Ipv4Addr::new(a, b, c, d)));
            }
            // NAT64 (64:ff9b::/96) carries an IPv4 address in its last 32 bits.
            if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
                let [a, b] = s[6].to_be_bytes();
                let [c, d] = s[7].to_be_bytes();
                return is_internal(IpAddr::V4(std::net::Ipv4Addr::new(a, b, c, d)));
            }
            let first = s[0];
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                || (first & 0xffc0) == 0xfec0
                || (first == 0x2001 && s[1] == 0x0db8)
        }
    }
}

/// Checks that `url` has the shape the API documents for a receiver URL (the `pattern` of the
/// webhook, ntfy, Gotify and push-endpoint fields): http or https, a lower-case
/// host name or IPv4 literal of 1 to 62 characters, an optional port 1 to 65535, at most eight
/// path segments of unreserved characters; no query, fragment, credentials or IPv6 literal. The
/// server refuses what its document refuses, so a client reading the document is never surprised.
pub fn check_shape(url: &str) -> Result<(), String> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or("must start with http:// or https://")?;
    let (host, mut rest) = rest.split_at(rest.find([':', '/']).unwrap_or(rest.len()));
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    let b = host.as_bytes();
    let host_ok = (1..=62).contains(&b.len())
        && b.iter().all(|c| alnum(c) || *c == b'.' || *c == b'-')
        && b.first().is_some_and(alnum)
        && b.last().is_some_and(alnum);
    if !host_ok {
        return Err("must name its host in lower-case letters, digits, '.' and '-' (no IPv6 literal)".into());
    }
    if let Some(after) = rest.strip_prefix(':') {
        let (port, tail) = after.split_at(after.find('/').unwrap_or(after.len()));
        let ok = (1..=5).contains(&port.len())
            && !port.starts_with('0')
            && port.bytes().all(|c| c.is_ascii_digit())
            && port.parse::<u32>().is_ok_and(|p| p <= 65_535);
        if !ok {
            return Err("must have a port from 1 to 65535, if any".into());
        }
        rest = tail;
    }
    if let Some(path) = rest.strip_prefix('/') {
        let segments: Vec<&str> = path.split('/').collect();
        let ok = segments.len() <= 8
            && segments
                .iter()
                .all(|s| s.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'~' | b'-')));
        if !ok {
            return Err(
                "must have at most 8 path segments of letters, digits, '.', '_', '~' and '-', and no query or fragment"
                    .into(),
            );
        }
    }
    Ok(())
}

/// Parses `url` and checks it is http(s) with a host.
fn parse(url: &str) -> Result<Url, String> {
    let parsed = Url::parse(url).map_err(|e| format!("{url:?} is not a URL: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!("{url:?} must be http or https"));
    }
    if parsed.host_str().is_none() {
        return Err(format!("{url:?} has no host"));
    }
    Ok(parsed)
}

/// The literal address of `url`'s host, if it is one (brackets of IPv6 removed).
fn literal(url: &Url) -> Option<IpAddr> {
    url.host_str()?.trim_matches(['[', ']']).parse().ok()
}

const REFUSED: &str = "is a private or internal address, which this integration may not reach";

/// Refuses `url` when its host is an internal IP literal (names are the resolver's business).
pub fn check_literal(url: &Url, block_internal: bool) -> Result<(), String> {
    match literal(url) {
        Some(ip) if block_internal && is_internal(ip) => Err(format!("{ip} {REFUSED}")),
        _ => Ok(()),
    }
}

/// Checks that `url` is http(s) and, when `block_internal`, that its host is or resolves only to
/// public addresses. An early answer for forms; the connection itself is guarded by
/// [`guarded_client`].
pub async fn check(url: &str, block_internal: bool) -> Result<Url, String> {
    let parsed = parse(url)?;
    if !block_internal {
        return Ok(parsed);
    }
    check_literal(&parsed, true)?;
    if literal(&parsed).is_none()
        && let Some(host) = parsed.host_str()
    {
        let port = parsed.port_or_known_default().unwrap_or(443);
        resolve_public(host, port).await?;
    }
    Ok(parsed)
}

/// Resolves `host` once; refuses it when any answer is internal (or there is none).
async fn resolve_public(host: &str, port: u16) -> Result<Vec<SocketAddr>, String> {
    let addresses: Vec<SocketAddr> =
        tokio::net::lookup_host((host, port)).await.map_err(|e| format!("cannot resolve {host}: {e}"))?.collect();
    if addresses.is_empty() {
        return Err(format!("{host} has no address"));
    }
    if let Some(bad) = addresses.iter().find(|a| is_internal(a.ip())) {
        return Err(format!("{host} resolves to {} which {REFUSED}", bad.ip()));
    }
    Ok(addresses)
}

/// A resolver that hands the connector only addresses it checked.
struct PublicOnly;

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_string();
        Box::pin(async move {
            let addresses = resolve_public(&host, 0)
                .await
                .map_err(|e| Box::new(Refused(e)) as Box<dyn std::error::Error + Send + Sync>)?;
            Ok(Box::new(addresses.into_iter()) as Addrs)
        })
    }
}

/// Why the guarded resolver refused a host.
#[derive(Debug)]
pub struct Refused(pub String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

/// Whether a request error came from the guard (a refused destination), which is permanent.
pub fn is_refusal(error: &reqwest::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if e.is::<Refused>() || e.to_string().contains(REFUSED) {
            return true;
        }
        source = e.source();
    }
    false
}

/// The HTTP client for user-supplied destinations (webhooks, topic and push channels). With
/// `block_internal`, names are resolved by the guard and connected to as checked, and a redirect
/// to an internal literal is refused; without it, the client is ordinary. Redirects are followed
/// at most three times either way.
pub fn guarded_client(block_internal: bool, timeout: Duration) -> Result<reqwest::Client, String> {
    let policy = reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() >= 3 {
            return attempt.error("too many redirects");
        }
        match check_literal(attempt.url(), block_internal) {
            Ok(()) => attempt.follow(),
            Err(e) => attempt.error(Refused(format!("redirect refused: {e}"))),
        }
    });
    let mut builder = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(5).min(timeout))
        .timeout(timeout)
        .redirect(policy)
        .user_agent(concat!("mycorrhizal/", env!("CARGO_PKG_VERSION")));
    if block_internal {
        builder = builder.dns_resolver(Arc::new(PublicOnly));
    }
    builder.build().map_err(|e| format!("cannot build the HTTP client: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn receiver_urls_have_the_documented_shape() {
        for good in [
            "https://ntfy.sh",
            "http://127.0.0.1:65535/",
            "https://hooks.example.org:8443/a/b.c/d_e/f~g/h-i",
            "http://a",
            "https://x/1/2/3/4/5/6/7/8",
        ] {
            assert_eq!(check_shape(good), Ok(()), "{good}");
        }
        for bad in [
            "https://m/MQ~O/Nt////590~8zZQ~KETA03aHFRHv/y/50Bny*",
            " https://ntfy.sh",
            "https://ntfy.sh ",
            "ftp://ntfy.sh",
            "https://Ntfy.sh",
            "http://[::1]:9",
            "https://ntfy.sh:0",
            "https://ntfy.sh:65536",
            "https://ntfy.sh:08080",
            "https://ntfy.sh:",
            "https://-ntfy.sh",
            "https://ntfy.sh/a?b=c",
            "https://ntfy.sh/#top",
            "https://user:pw@ntfy.sh",
            "https://x/1/2/3/4/5/6/7/8/9",
            "https://",
        ] {
            assert!(check_shape(bad).is_err(), "{bad}");
        }
    }

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
            "::",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "::ffff:10.0.0.1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::a00:1",
            "ff02::1",
        ] {
            assert!(is_internal(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8"] {
            assert!(!is_internal(ip.parse().unwrap()), "{ip}");
        }
    }

    #[tokio::test]
    async fn loopback_urls_are_refused_only_when_blocking() {
        assert!(check("http://127.0.0.1:8080/x", true).await.is_err());
        assert!(check("http://[::1]:8080/x", true).await.is_err());
        assert!(check("http://[::ffff:10.0.0.1]/x", true).await.is_err());
        assert!(check("http://169.254.169.254/latest", true).await.is_err());
        assert!(check("http://localhost:8080/x", true).await.is_err());
        assert!(check("http://127.0.0.1:8080/x", false).await.is_ok());
        assert!(check("ftp://example.org/", false).await.is_err());
    }

    #[tokio::test]
    async fn the_guarded_client_refuses_a_name_resolving_to_loopback_at_connect_time() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let client = guarded_client(true, Duration::from_secs(2)).unwrap();
        let error = client.get(format!("http://localhost:{port}/")).send().await.unwrap_err();
        assert!(is_refusal(&error), "{error:?}");
        let open = guarded_client(false, Duration::from_secs(2)).unwrap();
        let accepted = tokio::spawn(async move { listener.accept().await.is_ok() });
        let _ = open.get(format!("http://localhost:{port}/")).send().await;
        assert!(accepted.await.unwrap(), "without blocking the same name is reached");
    }
}
