//! Saving a system's settings: checked ([`config::prepare`]), a WebDAV server asked whether
//! the credential is an app password and where its files are ([`webdav::admit`]), then stored.

use super::config::{self, ConfigInput, ConfigView};
use super::{Integrations, Result, System, webdav};

/// Saves `system`'s settings for `user`.
pub async fn save(i: &Integrations, user: u64, system: System, input: ConfigInput) -> Result<ConfigView> {
    let (mut opened, sync_enabled) = config::prepare(i, user, system, input).await?;
    if system == System::Nextcloud {
        opened.dav_root = webdav::admit(i, &opened).await?;
    }
    config::store(i, opened, sync_enabled).await
}
