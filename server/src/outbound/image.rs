//! Fetching an external image for an upload preview (`GET /proxy/image`): the URL must be http(s)
//! on a public address, the answer a success, at most [`MAX_PHOTO`] bytes and a JPEG, PNG, GIF
//! or WebP by its content (no SVG); 10 seconds; the shared client follows no redirect.

use std::time::Duration;

use crate::crm::{contact::picture::MAX_PHOTO, contact::picture::sniff};

/// How long the whole fetch may take.
const TIMEOUT: Duration = Duration::from_secs(10);

/// A fetched image and its content type.
#[derive(Debug)]
pub struct Image {
    pub mime: &'static str,
    pub bytes: Vec<u8>,
}

/// Why no image came back.
#[derive(Debug, PartialEq)]
pub enum FetchError {
    /// No URL was given.
    Missing,
    /// The URL, or what it answered, is refused (the `url` field's fault).
    Refused(String),
    /// The remote server failed.
    Remote(String),
}

/// Fetches `url` with `client` under the preview's rules.
pub async fn fetch(client: &reqwest::Client, url: Option<&str>) -> Result<Image, FetchError> {
    let url = url.filter(|u| !u.trim().is_empty()).ok_or(FetchError::Missing)?;
    let url = super::check(url, true).await.map_err(FetchError::Refused)?;
    let mut response = client
        .get(url)
        .timeout(TIMEOUT)
        .send()
        .await
        .map_err(|_| FetchError::Remote("The image could not be fetched".into()))?;
    if !response.status().is_success() {
        return Err(FetchError::Remote(format!("The image server answered {}", response.status())));
    }
    let mut bytes = Vec::new();
    while let Some(chunk) =
        response.chunk().await.map_err(|_| FetchError::Remote("The image download failed".into()))?
    {
        bytes.extend_from_slice(&chunk);
        if bytes.len() > MAX_PHOTO {
            return Err(FetchError::Refused("the image is larger than 10 MB".into()));
        }
    }
    checked(bytes)
}

/// Accepts `bytes` only as one of the picture formats.
fn checked(bytes: Vec<u8>) -> Result<Image, FetchError> {
    let (mime, _) = sniff(&bytes).ok_or_else(|| FetchError::Refused("is not a JPEG, PNG, GIF or WebP image".into()))?;
    Ok(Image { mime, bytes })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_picture_formats_pass() {
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        assert_eq!(checked(png).map(|i| i.mime), Ok("image/png"));
        let svg = b"<svg xmlns=\"http://www.w3.org/2000/svg\"/>".to_vec();
        assert_eq!(
            checked(svg).map(|i| i.mime),
            Err(FetchError::Refused("is not a JPEG, PNG, GIF or WebP image".into()))
        );
    }

    #[tokio::test]
    async fn a_missing_or_internal_url_is_refused_before_any_request() {
        let client = reqwest::Client::new();
        assert_eq!(fetch(&client, None).await.map(|i| i.mime), Err(FetchError::Missing));
        assert_eq!(fetch(&client, Some("  ")).await.map(|i| i.mime), Err(FetchError::Missing));
        let refused = fetch(&client, Some("http://127.0.0.1:9/x.png")).await.map(|i| i.mime);
        assert!(matches!(refused, Err(FetchError::Refused(_))), "{refused:?}");
    }
}
