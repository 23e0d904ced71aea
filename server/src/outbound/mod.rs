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
//!
//! [`image`] fetches a user-named image for an upload preview under those rules.

pub mod image;

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

/// The shape of a receiver's URL that the API document states (`url` of webhooks and channels,
/// a push subscription's `endpoint`): http(s), a host name whose last label starts with a letter
/// or a dotted IPv4 address, an optional port 1-65535, and a path of RFC 3986 path characters.
/// No IPv6 literal, no credentials, no fragment. [`documented_shape`] accepts exactly this.
pub const URL_SHAPE: &str = concat!(
    r"^https?://((([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)*[A-Za-z]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)",
    r"|((25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])){3}))",
    r"(:([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?",
    r"(/[A-Za-z0-9._~!$&'()*+,;=:@%-]*)*$"
);

/// [`URL_SHAPE`] with a query allowed (webhooks: some receivers take their key in one).
pub const URL_SHAPE_WITH_QUERY: &str = concat!(
    r"^https?://((([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)*[A-Za-z]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)",
    r"|((25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])){3}))",
    r"(:([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?",
    r"(/[A-Za-z0-9._~!$&'()*+,;=:@%-]*)*(\?[A-Za-z0-9._~!$&'()*+,;=:@%/?-]*)?$"
);

/// The document's schema of a receiver URL ([`URL_SHAPE`], at most 2000 characters).
pub fn url_schema() -> utoipa::openapi::Object {
    shaped(URL_SHAPE, utoipa::openapi::Type::String.into())
}

/// The document's schema of a webhook's URL ([`URL_SHAPE_WITH_QUERY`]), null allowed (an edit
/// that leaves the URL as it is).
pub fn url_with_query_schema() -> utoipa::openapi::Object {
    shaped(URL_SHAPE_WITH_QUERY, [utoipa::openapi::Type::String, utoipa::openapi::Type::Null].into_iter().collect())
}

fn shaped(pattern: &str, ty: utoipa::openapi::schema::SchemaType) -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new().schema_type(ty).max_length(Some(2000)).pattern(Some(pattern)).build()
}

/// What a URL of another shape is told.
pub const SHAPE_REFUSED: &str = "must be an http or https URL of at most 2000 characters: a host name or IPv4 address, an \
     optional port, and a path (no spaces, credentials or fragment)";

/// Whether `url` has the documented shape ([`URL_SHAPE`], or [`URL_SHAPE_WITH_QUERY`] when
/// `query`), checked by hand so that the document and the check cannot disagree: what the
/// document allows is accepted, and nothing else.
pub fn documented_shape(url: &str, query: bool) -> bool {
    let Some(rest) = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://")) else {
        return false;
    };
    let (rest, query_part) = match rest.split_once('?') {
        Some((before, after)) if query => (before, Some(after)),
        Some(_) => return false,
        None => (rest, None),
    };
    let (authority, path) = rest.find('/').map_or((rest, ""), |i| rest.split_at(i));
    let (host, port) = authority.split_once(':').map_or((authority, None), |(h, p)| (h, Some(p)));
    let pchar = |b: u8| b.is_ascii_alphanumeric() || b"._~!$&'()*+,;=:@%-".contains(&b);
    let port_ok = port.is_none_or(|p| {
        !p.starts_with('0') && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()) && p.parse::<u16>().is_ok()
    });
    (ipv4_shape(host) || name_shape(host))
        && port_ok
        && path.bytes().all(|b| b == b'/' || pchar(b))
        && query_part.is_none_or(|q| q.bytes().all(|b| b == b'/' || b == b'?' || pchar(b)))
}

/// Four decimal octets 0-255 without leading zeros.
fn ipv4_shape(host: &str) -> bool {
    let octets: Vec<&str> = host.split('.').collect();
    octets.len() == 4
        && octets.iter().all(|o| {
            !o.is_empty()
                && o.len() <= 3
                && o.bytes().all(|b| b.is_ascii_digit())
                && (o.len() == 1 || !o.starts_with('0'))
                && o.parse::<u8>().is_ok()
        })
}

/// Dot-separated labels of 1-63 letters, digits and inner hyphens, the last starting with a
/// letter (so that no name reads as an IPv4 number).
fn name_shape(host: &str) -> bool {
    let labels: Vec<&str> = host.split('.').collect();
    let label_ok = |l: &str| {
        let b = l.as_bytes();
        (1..=63).contains(&b.len())
            && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
            && b[0] != b'-'
            && b[b.len() - 1] != b'-'
    };
    labels.iter().all(|l| label_ok(l)) && labels.last().is_some_and(|l| l.as_bytes()[0].is_ascii_alphabetic())
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
    resolve_checked(host, port, false).await
}

/// [`resolve_public`], loopback answers let through when `loopback` (the test builds' path).
async fn resolve_checked(host: &str, port: u16, loopback: bool) -> Result<Vec<SocketAddr>, String> {
    let addresses: Vec<SocketAddr> =
        tokio::net::lookup_host((host, port)).await.map_err(|e| format!("cannot resolve {host}: {e}"))?.collect();
    if addresses.is_empty() {
        return Err(format!("{host} has no address"));
    }
    // The address itself is not said: a user must not learn what internal names resolve to.
    if addresses.iter().any(|a| refused(a.ip(), loopback)) {
        return Err(format!("{host} resolves to an address which {REFUSED}"));
    }
    Ok(addresses)
}

fn refused(ip: IpAddr, loopback: bool) -> bool {
    is_internal(ip) && !(loopback && ip.is_loopback())
}

/// A resolver that hands the connector only addresses it checked (loopback ones too when
/// `.0`: the test builds' path of the guarded-always client).
struct PublicOnly(bool);

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_string();
        let loopback = self.0;
        Box::pin(async move {
            // Only an internal answer is a refusal; a name that does not resolve is unreachable.
            let addresses = resolve_checked(&host, 0, loopback).await.map_err(|e| {
                if e.contains(REFUSED) {
                    Box::new(Refused(e)) as Box<dyn std::error::Error + Send + Sync>
                } else {
                    Box::new(std::io::Error::new(std::io::ErrorKind::NotFound, e))
                        as Box<dyn std::error::Error + Send + Sync>
                }
            })?;
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
        // A proxy from the environment would be the only address checked: none is used.
        builder = builder.no_proxy().dns_resolver(Arc::new(PublicOnly(false)));
    }
    builder.build().map_err(|e| format!("cannot build the HTTP client: {e}"))
}

/// Whether this build lets the guarded-always integrations reach loopback (127.0.0.0/8 and
/// `::1`, nothing else internal): only a debug build, the test suite's, started with
/// `MYCORRHIZAL_TEST_LOOPBACK_OUTBOUND=1`, so that tests can reach their stand-ins. A release
/// build has no such path: this is `false` there whatever the environment says.
pub fn test_loopback() -> bool {
    #[cfg(debug_assertions)]
    {
        std::env::var_os("MYCORRHIZAL_TEST_LOOPBACK_OUTBOUND").is_some_and(|v| v == "1")
    }
    #[cfg(not(debug_assertions))]
    {
        false
    }
}

/// The early answer for a guarded-always integration (photo library, document archive, file
/// library, WebDAV): http(s), and a host that is and resolves only to public addresses.
pub async fn check_always(url: &str) -> Result<Url, String> {
    check_always_with(url, test_loopback()).await
}

/// [`check_always`], loopback let through when `loopback` (a test build's integrations).
pub async fn check_always_with(url: &str, loopback: bool) -> Result<Url, String> {
    let parsed = parse(url)?;
    match literal(&parsed) {
        Some(ip) if refused(ip, loopback) => return Err(format!("{ip} {REFUSED}")),
        Some(_) => {}
        None => {
            let host = parsed.host_str().unwrap_or_default().to_string();
            let port = parsed.port_or_known_default().unwrap_or(443);
            resolve_checked(&host, port, loopback).await?;
        }
    }
    Ok(parsed)
}

/// Refuses `url` when its host is an internal literal, under the guarded-always posture.
pub fn check_literal_always(url: &Url) -> Result<(), String> {
    check_literal_always_with(url, test_loopback())
}

/// [`check_literal_always`], loopback let through when `loopback`.
pub fn check_literal_always_with(url: &Url, loopback: bool) -> Result<(), String> {
    match literal(url) {
        Some(ip) if refused(ip, loopback) => Err(format!("{ip} {REFUSED}")),
        _ => Ok(()),
    }
}

/// The client of the guarded-always integrations: names resolved once by the guard and
/// connected to as checked, internal literals refused before the request
/// ([`check_literal_always`], the caller's). A redirect is followed (at most three) only on the
/// same host (`http` to `https` behind a proxy): a key in a header of the integration's own
/// (`x-api-key`) would otherwise travel to whatever host a redirect names.
pub fn always_client(timeout: Duration) -> Result<reqwest::Client, String> {
    always_client_with(timeout, test_loopback())
}

/// [`always_client`], loopback let through when `loopback`.
pub fn always_client_with(timeout: Duration, loopback: bool) -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(5).min(timeout))
        .timeout(timeout)
        .redirect(always_redirects(loopback))
        .user_agent(concat!("mycorrhizal/", env!("CARGO_PKG_VERSION")))
        // A proxy from the environment would be the only address checked: none is used.
        .no_proxy()
        .dns_resolver(Arc::new(PublicOnly(loopback)))
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))
}

/// The guarded-always redirect rule: at most three, to the same scheme, host and port (a path
/// moved), to no refused literal. Another origin is refused: a credential in a header of the
/// integration's own would travel there (or, from https to http, in clear), and one in
/// `Authorization` would be dropped by the client.
fn always_redirects(loopback: bool) -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(move |attempt| {
        let origin = |u: &Url| (u.scheme().to_string(), u.host_str().map(str::to_string), u.port_or_known_default());
        let same_origin = attempt.previous().first().map(origin) == Some(origin(attempt.url()));
        if attempt.previous().len() >= 3 {
            attempt.error("too many redirects")
        } else if !same_origin {
            let to = format!("{}://{}", attempt.url().scheme(), attempt.url().host_str().unwrap_or_default());
            attempt.error(Refused(format!("it redirects to {to}: enter that address instead")))
        } else {
            match check_literal_always_with(attempt.url(), loopback) {
                Ok(()) => attempt.follow(),
                Err(e) => attempt.error(Refused(format!("redirect refused: {e}"))),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_receiver_url_is_accepted_exactly_when_the_documented_shape_allows_it() {
        use super::documented_shape as shape;
        for ok in [
            "https://ntfy.sh",
            "https://ntfy.sh/",
            "http://192.168.1.5:8080",
            "http://127.0.0.1:39793/hook",
            "https://Push.Example.org:65535/ntfy/v1",
            "https://a",
            "https://m/MQ~O/Nt////590~8zZQ~KETA03aHFRHv/y/50Bny*",
            "https://fcm.googleapis.com/fcm/send/dXJ1bDox:APA91bH-x_y%20z",
        ] {
            assert!(shape(ok, false), "{ok}");
        }
        for refused in [
            " https://ntfy.sh",
            "https://ntfy.sh ",
            "ftp://ntfy.sh",
            "HTTPS://ntfy.sh",
            "https://-ntfy.sh",
            "https://ntfy-.sh",
            "https://ntfy..sh",
            "https://ntfy.sh.",
            "https://ntfy.1sh",
            "https://999",
            "https://256.1.1.1",
            "https://01.1.1.1",
            "https://1.1.1",
            "https://ntfy.sh:0",
            "https://ntfy.sh:08080",
            "https://ntfy.sh:65536",
            "https://ntfy.sh:",
            "https://",
            "https://user@ntfy.sh",
            "https://[::1]/",
            "https://ntfy.sh/é",
            "https://ntfy.sh/a b",
            "https://ntfy.sh/#top",
            "https://ntfy.sh?x=1",
        ] {
            assert!(!shape(refused, false), "{refused}");
        }
        assert!(shape("https://hooks.example.org/in?key=abc&x=/y?", true));
        assert!(!shape("https://hooks.example.org/in?key=a b", true));
        assert!(shape(&format!("https://{}.org", "a".repeat(63)), false));
        assert!(!shape(&format!("https://{}.org", "a".repeat(64)), false));
    }

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

    #[tokio::test]
    async fn the_guarded_always_posture_refuses_internal_addresses_without_the_test_path() {
        // The test binary is not started with MYCORRHIZAL_TEST_LOOPBACK_OUTBOUND.
        assert!(!test_loopback());
        for url in [
            "http://127.0.0.1:2283",
            "http://localhost:2283",
            "http://[::1]/",
            "http://10.0.0.1/",
            "http://[::ffff:127.0.0.1]/",
            "http://169.254.169.254/latest",
        ] {
            assert!(check_always(url).await.is_err(), "{url}");
            assert!(
                check_literal_always(&Url::parse(url).unwrap()).is_err()
                    || literal(&Url::parse(url).unwrap()).is_none()
            );
        }
        assert!(!refused("8.8.8.8".parse().unwrap(), false));
        assert!(refused("127.0.0.1".parse().unwrap(), false));
        // The test path lets loopback through and nothing else internal.
        assert!(!refused("127.0.0.1".parse().unwrap(), true));
        assert!(!refused("::1".parse().unwrap(), true));
        assert!(refused("10.0.0.1".parse().unwrap(), true));
        assert!(refused("::ffff:127.0.0.1".parse().unwrap(), true));
        assert!(refused("169.254.169.254".parse().unwrap(), true));
    }

    #[tokio::test]
    async fn the_guarded_always_client_refuses_a_loopback_name_at_connect_time() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let client = always_client(Duration::from_secs(2)).unwrap();
        let error = client.get(format!("http://localhost:{port}/")).send().await.unwrap_err();
        assert!(is_refusal(&error), "{error:?}");
    }

    #[tokio::test]
    async fn the_guarded_always_client_follows_no_redirect_to_another_host() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        // The guarded-always redirect rule on a client that may reach this loopback server:
        // the redirect it answers goes to another host and must not be followed.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut buffer = [0u8; 1024];
            let _ = socket.read(&mut buffer).await;
            let answer = "HTTP/1.1 302 Found\r\nLocation: http://example.org/steal\r\nContent-Length: 0\r\n\r\n";
            let _ = socket.write_all(answer.as_bytes()).await;
        });
        let client = reqwest::Client::builder().redirect(always_redirects(true)).build().unwrap();
        let error = client.get(format!("http://127.0.0.1:{port}/")).send().await.unwrap_err();
        assert!(is_refusal(&error), "{error:?}");
    }
}
