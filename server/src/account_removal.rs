//! Deleting an account, which spans subsystems: the sign-in side (`auth::accounts::remove_in`),
//! the notification side (`notify::remove_user`), the subscriptions (`sync::remove_user`) and the user's records (`Tx::purge_user`) go
//! in one transaction, then the user's files. It sits above `auth/` and `notify/` so neither
//! needs the other.

use mycorrhizal_engine::{Engine, UserId};

use crate::auth::{Auth, Error, accounts};

/// Deletes an account with all its data, sessions, tokens, notification state (channels,
/// browsers, webhooks, queued messages) and files. The last admin stays.
pub async fn delete(auth: &Auth, engine: &Engine, user_id: u64) -> Result<(), Error> {
    let removed = engine
        .write_async(move |tx| {
            if let Err(refused) = accounts::remove_in(tx, user_id)? {
                return Ok(Err(refused));
            }
            // Nothing is sent for an account once it is gone.
            crate::notify::remove_user(tx, user_id)?;
            crate::sync::remove_user(tx, user_id)?;
            crate::integrations::config::remove_user(tx, user_id)?;
            tx.purge_user(UserId(user_id))?;
            Ok(Ok(()))
        })
        .await?;
    removed?;
    let files = auth.data_dir.join("users").join(user_id.to_string());
    if files.exists() {
        std::fs::remove_dir_all(&files).map_err(Error::internal)?;
    }
    Ok(())
}
