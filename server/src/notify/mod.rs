//! Messages that leave the server, all through the durable outbox (`outbox`): transactional
//! email, signed webhook deliveries (`webhooks`), one attempt of each (`deliver`).

pub mod deliver;
pub mod email;
pub mod outbox;
pub mod webhooks;
