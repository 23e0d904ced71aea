//! `mycorrhizal export-bundle` and `mycorrhizal import-bundle`: one user's account bundle
//! (`crm::bundle`) written to or recreated from a file, with the server stopped (the database is
//! opened here).

use std::path::Path;

use mycorrhizal_engine::{Engine, UserId};

use crate::auth::records::Account;
use crate::config::Config;
use crate::crm::bundle::{self, Imported, Manifest};

/// The user `user` (username or email) of the opened `engine`.
fn find_user(engine: &Engine, user: &str) -> Result<UserId, String> {
    let identifier = user.trim().to_lowercase();
    let key = if identifier.contains('@') { "email" } else { "username" };
    let found = engine.global().and_then(|g| g.find::<Account>(key, &identifier)).map_err(|e| e.to_string())?;
    found.map(|(id, _)| UserId(id)).ok_or_else(|| format!("no user {user:?}"))
}

/// Runs `work` on `user`'s scope with the database opened, and closes it.
async fn with_user<T: Send + 'static>(
    config: &Config,
    user: &str,
    work: impl FnOnce(mycorrhizal_engine::UserScope) -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    let engine = crate::open_engine(config).await.map_err(|e| format!("{e:#}"))?;
    let outcome = match find_user(&engine, user) {
        Ok(id) => {
            let scope = engine.user(id);
            tokio::task::spawn_blocking(move || work(scope)).await.map_err(|e| e.to_string()).and_then(|r| r)
        }
        Err(e) => Err(e),
    };
    engine.shutdown();
    outcome
}

/// Writes `user`'s bundle to `out` (created; an existing file is refused).
pub async fn export(config: Config, user: &str, out: &Path) -> Result<Manifest, String> {
    let out = out.to_path_buf();
    with_user(&config, user, move |scope| {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&out)
            .map_err(|e| format!("{}: {e}", out.display()))?;
        let view = scope.view().map_err(|e| e.to_string())?;
        let mut writer = std::io::BufWriter::new(file);
        let manifest = bundle::write(&view, &mut writer, jiff::Timestamp::now()).map_err(|e| e.message)?;
        let file = writer.into_inner().map_err(|e| e.to_string())?;
        file.sync_all().map_err(|e| e.to_string())?;
        Ok(manifest)
    })
    .await
}

/// Recreates the bundle in `file` in `user`'s account.
pub async fn import(config: Config, user: &str, file: &Path) -> Result<Imported, String> {
    let quota = config.attachment_quota_bytes;
    let reader = std::fs::File::open(file).map_err(|e| format!("{}: {e}", file.display()))?;
    with_user(&config, user, move |scope| bundle::import(&scope, reader, quota).map_err(|e| e.to_string())).await
}
