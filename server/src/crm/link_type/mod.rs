//! Link field types: the kinds of online handle a user records on contacts (Signal, Instagram,
//! ...), each with a link template (`https://t.me/{value}`), a category, an icon name and a place
//! in the user's order. A user starts with [`DEFAULTS`] (seeded at the first read of an empty
//! list, and again if they ever delete them all).

use mycorrhizal_engine::{Invalid, Kind, Record, kind};
use serde::{Deserialize, Serialize};

use crate::crm::records::length as text;

pub mod ops;

pub const CATEGORIES: &[&str] = &["messaging", "social", "other"];
/// Index of link types by name, unique (named after the input field a duplicate comes from).
pub const BY_NAME: &str = "name";

/// (name, protocol, category, icon), in order.
pub const DEFAULTS: [(&str, &str, &str, &str); 19] = [
    ("Signal", "https://signal.me/#p/{value}", "messaging", "mdiMessageLock"),
    ("Messenger", "https://m.me/{value}", "messaging", "mdiFacebookMessenger"),
    ("WhatsApp", "https://wa.me/{value}", "messaging", "mdiWhatsapp"),
    ("Telegram", "https://t.me/{value}", "messaging", "mdiSend"),
    ("Discord", "", "messaging", "mdiChatOutline"),
    ("Wire", "", "messaging", "mdiChatOutline"),
    ("Session", "", "messaging", "mdiChatOutline"),
    ("Line", "https://line.me/ti/p/{value}", "messaging", "mdiChatOutline"),
    ("Element", "https://matrix.to/#/{value}", "messaging", "mdiMatrix"),
    ("GroupMe", "", "messaging", "mdiChatOutline"),
    ("Slack", "", "messaging", "mdiSlack"),
    ("X/Twitter", "https://x.com/{value}", "social", "mdiTwitter"),
    ("BlueSky", "https://bsky.app/profile/{value}", "social", "mdiButterflyOutline"),
    ("Instagram", "https://instagram.com/{value}", "social", "mdiInstagram"),
    ("Threads", "https://www.threads.net/@{value}", "social", "mdiAt"),
    ("TikTok", "https://www.tiktok.com/@{value}", "social", "mdiMusicNote"),
    ("Reddit", "https://www.reddit.com/user/{value}", "social", "mdiReddit"),
    ("Spotify", "https://open.spotify.com/user/{value}", "social", "mdiSpotify"),
    ("Twitch", "https://www.twitch.tv/{value}", "social", "mdiTwitch"),
];

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LinkFieldType {
    pub name: String,
    /// A link template holding `{value}`, or empty (no link).
    pub protocol: String,
    /// One of [`CATEGORIES`].
    pub category: String,
    pub icon: String,
    /// One of the seeded [`DEFAULTS`] (stays so when edited).
    pub is_default: bool,
    pub position: u32,
}

impl Record for LinkFieldType {
    const KIND: Kind = kind!("link_field_type", soft_delete);
    const UNIQUE: &'static [&'static str] = &[BY_NAME];

    fn validate(&self) -> Result<(), Invalid> {
        text("name", &self.name, 1, 200)?;
        text("protocol", &self.protocol, 0, 2000)?;
        text("icon", &self.icon, 0, 100)?;
        let scheme: String = self.protocol.chars().filter(|c| !c.is_whitespace() && !c.is_control()).collect();
        let scheme = scheme.to_lowercase();
        if ["javascript:", "data:", "vbscript:", "file:"].iter().any(|bad| scheme.starts_with(bad)) {
            return Err(Invalid::new("protocol", "uses an unsafe URL scheme"));
        }
        if !CATEGORIES.contains(&self.category.as_str()) {
            return Err(Invalid::new("category", "must be messaging, social or other"));
        }
        Ok(())
    }

    fn index_entries(&self) -> Vec<(&'static str, String)> {
        vec![(BY_NAME, self.name.clone())]
    }
}
