//! Messages that leave the server: transactional email now; notification channels later.

pub mod email;
