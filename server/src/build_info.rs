//! What build is running: reported by `GET /health` and `mycorrhizal --version`.

pub const VERSION: &str = env!("CARGO_PKG_VERSION");
pub const COMMIT: &str = env!("MYCORRHIZAL_COMMIT");
pub const BUILD_DATE: &str = env!("MYCORRHIZAL_BUILD_DATE");
/// The API contract version: constant while the route table lives under `/api/v1`.
pub const API_CONTRACT_VERSION: &str = "v1";

pub const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("MYCORRHIZAL_COMMIT"),
    ", built ",
    env!("MYCORRHIZAL_BUILD_DATE"),
    ")"
);
