//! Settings a client keeps on the server for its user (the existing web client's choice of the
//! contact fields its forms show): small JSON values in the user's blobs, never read by the
//! server's own rules.

use mycorrhizal_engine::{UserScope, UserView};

use super::{Error, Result};

const ENABLED_CONTACT_FIELDS: &str = "client-enabled-contact-fields";

/// The contact fields the user's client shows, as it last stored them; `None` when it never did
/// (the client's own default then).
pub fn enabled_contact_fields(v: &UserView) -> Result<Option<Vec<String>>> {
    Ok(v.blob(ENABLED_CONTACT_FIELDS)?.and_then(|bytes| serde_json::from_slice(&bytes).ok()))
}

/// Stores (or with `None`, forgets) the contact fields the user's client shows: at most 100
/// names of 1 to 50 characters, kept in the order given.
pub async fn set_enabled_contact_fields(scope: &UserScope, fields: Option<Vec<String>>) -> Result<Option<Vec<String>>> {
    if let Some(list) = &fields {
        if list.len() > 100 {
            return Err(Error::invalid("fields", "at most 100 fields"));
        }
        if let Some(i) = list.iter().position(|f| f.trim().is_empty() || f.chars().count() > 50) {
            return Err(Error::invalid(format!("fields[{i}]"), "must be 1 to 50 characters"));
        }
    }
    let stored = fields.clone();
    scope
        .write_async(move |tx| match &stored {
            Some(list) => tx.put_blob(ENABLED_CONTACT_FIELDS, &serde_json::to_vec(list).unwrap_or_default()),
            None => tx.delete_blob(ENABLED_CONTACT_FIELDS).map(|_| ()),
        })
        .await?;
    Ok(fields)
}
