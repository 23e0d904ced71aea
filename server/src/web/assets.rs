//! The client's stylesheet, script and icon: files in the repository (`static/`), embedded at
//! build time, served under content-hashed names with a year-long, immutable cache lifetime. A
//! changed file gets a new name, so a browser never runs a stale script against a new page.

use std::sync::OnceLock;

use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

struct Asset {
    /// The file's name in `static/`.
    name: &'static str,
    content_type: &'static str,
    bytes: &'static [u8],
}

const ASSETS: &[Asset] = &[
    Asset { name: "app.css", content_type: "text/css; charset=utf-8", bytes: include_bytes!("static/app.css") },
    Asset { name: "app.js", content_type: "text/javascript; charset=utf-8", bytes: include_bytes!("static/app.js") },
    Asset { name: "icon.svg", content_type: "image/svg+xml", bytes: include_bytes!("static/icon.svg") },
];

/// `(hashed name, asset)` pairs, computed once.
fn hashed() -> &'static [(String, &'static Asset)] {
    static HASHED: OnceLock<Vec<(String, &'static Asset)>> = OnceLock::new();
    HASHED.get_or_init(|| {
        ASSETS
            .iter()
            .map(|asset| {
                let digest = hex::encode(Sha256::digest(asset.bytes));
                let (stem, ext) = asset.name.rsplit_once('.').unwrap_or((asset.name, ""));
                (format!("{stem}.{}.{ext}", &digest[..12]), asset)
            })
            .collect()
    })
}

/// The URL of asset `name` (e.g. `app.css`) under its content-hashed name.
pub fn url(name: &str) -> String {
    let hashed = hashed().iter().find(|(_, a)| a.name == name).map(|(h, _)| h.as_str()).unwrap_or(name);
    format!("/assets/{hashed}")
}

/// `GET /assets/{file}`: the asset whose hashed name is `file`.
pub async fn serve(Path(file): Path<String>) -> Response {
    match hashed().iter().find(|(h, _)| *h == file) {
        Some((_, asset)) => (
            [
                (header::CONTENT_TYPE, asset.content_type),
                (header::CACHE_CONTROL, "public, max-age=31536000, immutable"),
            ],
            asset.bytes,
        )
            .into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_the_content_hash() {
        let css = url("app.css");
        assert!(css.starts_with("/assets/app.") && css.ends_with(".css") && css.len() == "/assets/app..css".len() + 12);
        assert_ne!(url("app.js"), "/assets/app.js");
    }
}

/// `GET /sw.js`: the Web Push service worker. Served at the root (not hashed) so its scope is the
/// whole site and the browser's update check finds it under the same name; always revalidated.
pub async fn service_worker() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8"), (header::CACHE_CONTROL, "no-cache")],
        include_bytes!("static/sw.js").as_slice(),
    )
        .into_response()
}
