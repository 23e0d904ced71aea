//! What every DAV request carries: its caller, and the largest body a DAV route reads.

use mycorrhizal_engine::UserId;

use crate::state::AppState;

/// The largest request body a DAV route reads (a card with a 10 MB photo, base64).
pub const MAX_BODY: usize = 16 * 1024 * 1024;

/// The caller of a DAV request.
#[derive(Debug, Clone)]
pub struct DavUser {
    pub id: UserId,
    pub username: String,
    /// Which collections this instance serves (`CARDDAV_ENABLED`, `CALDAV_ENABLED`).
    pub carddav: bool,
    pub caldav: bool,
    /// `CALDAV_TWO_WAY_ENABLED`: an activity's event may be edited and deleted.
    pub calendar_writable: bool,
}

impl DavUser {
    pub(super) fn new(state: &AppState, id: UserId, username: String) -> DavUser {
        let features = &state.config.features;
        DavUser {
            id,
            username,
            carddav: features.carddav_enabled,
            caldav: features.caldav_enabled,
            calendar_writable: features.caldav_two_way_enabled,
        }
    }
}
