//! The DAV collections' own properties as their clients set them (`PROPPATCH`): the address
//! book's and the calendar's display names and the calendar's colour. Each is a user blob, its
//! default until set.

use mycorrhizal_engine::{UserScope, UserView};

use crate::crm::{Error, Result};

/// One settable property of a collection.
#[derive(Debug, Clone, Copy)]
pub struct Setting {
    blob: &'static str,
    /// What it reads until set (`None`: nothing, the property is not there).
    default: Option<&'static str>,
    /// The property's name, for a refusal.
    field: &'static str,
    /// Whether a value is one it takes.
    valid: fn(&str) -> bool,
    /// What it takes, for a refusal.
    rule: &'static str,
}

fn display_name(name: &str) -> bool {
    name.chars().count() <= 200 && !name.chars().any(char::is_control)
}

/// `#RRGGBB` or `#RRGGBBAA` (as Apple's and DAVx5's calendars write it).
fn colour(value: &str) -> bool {
    (value.len() == 7 || value.len() == 9)
        && value.starts_with('#')
        && value[1..].bytes().all(|b| b.is_ascii_hexdigit())
}

/// The address book's name (`DAV:displayname`).
pub const BOOK_NAME: Setting = Setting {
    blob: "carddav-book-name",
    default: Some("Contacts"),
    field: "displayname",
    valid: display_name,
    rule: "at most 200 characters, without control characters",
};

/// The calendar's name (`DAV:displayname`).
pub const CALENDAR_NAME: Setting = Setting {
    blob: "caldav-calendar-name",
    default: Some("Dates"),
    field: "displayname",
    valid: display_name,
    rule: "at most 200 characters, without control characters",
};

/// The calendar's colour (Apple's `calendar-color`).
pub const CALENDAR_COLOR: Setting = Setting {
    blob: "caldav-calendar-color",
    default: None,
    field: "calendar-color",
    valid: colour,
    rule: "a colour as #RRGGBB or #RRGGBBAA",
};

/// The value of `setting`: what was set, else its default.
pub fn get(v: &UserView, setting: Setting) -> Result<Option<String>> {
    let set = v.blob(setting.blob)?.and_then(|b| String::from_utf8(b).ok()).filter(|n| !n.is_empty());
    Ok(set.or_else(|| setting.default.map(str::to_string)))
}

/// Sets `setting` (`None` or blank: back to its default), or refuses a value it does not take.
pub async fn set(scope: &UserScope, setting: Setting, value: Option<&str>) -> Result<()> {
    let value = value.map(str::trim).unwrap_or_default().to_string();
    if !value.is_empty() && !(setting.valid)(&value) {
        return Err(Error::invalid(setting.field, setting.rule));
    }
    scope
        .write_async(move |tx| {
            if value.is_empty() {
                tx.delete_blob(setting.blob).map(|_| ())
            } else {
                tx.put_blob(setting.blob, value.as_bytes())
            }
        })
        .await?;
    Ok(())
}
