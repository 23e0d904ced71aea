//! The address book's own name, as a CardDAV client sets it (`PROPPATCH` of `DAV:displayname`):
//! a user blob, "Contacts" until set.

use mycorrhizal_engine::{UserScope, UserView};

use crate::crm::{Error, Result};

const BLOB: &str = "carddav-book-name";
/// The name an address book has until its owner names it.
pub const DEFAULT_NAME: &str = "Contacts";

/// The book's name.
pub fn name(v: &UserView) -> Result<String> {
    Ok(v.blob(BLOB)?
        .and_then(|b| String::from_utf8(b).ok())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| DEFAULT_NAME.to_string()))
}

/// Names the book (`None` or blank: back to [`DEFAULT_NAME`]): 1 to 200 characters, no
/// control characters.
pub async fn set_name(scope: &UserScope, name: Option<&str>) -> Result<()> {
    let name = name.map(str::trim).unwrap_or_default().to_string();
    if name.chars().count() > 200 || name.chars().any(char::is_control) {
        return Err(Error::invalid("displayname", "must be at most 200 characters, without control characters"));
    }
    scope
        .write_async(move |tx| {
            if name.is_empty() { tx.delete_blob(BLOB).map(|_| ()) } else { tx.put_blob(BLOB, name.as_bytes()) }
        })
        .await?;
    Ok(())
}
