//! The opt-in breached-password check (`HIBP_CHECK_ENABLED`): a k-anonymity range query where
//! only the first five hex characters of the password's SHA-1 leave the process. It fails open:
//! any error or a slow answer counts as "not breached", so an outage never blocks sign-up.

use std::time::Duration;

use sha1_smol::Sha1;

#[derive(Clone)]
pub struct BreachCheck {
    client: reqwest::Client,
    base_url: String,
}

impl BreachCheck {
    pub fn new(client: reqwest::Client, base_url: String) -> Self {
        BreachCheck { client, base_url }
    }

    /// True only when the range API positively lists this password.
    pub async fn is_breached(&self, password: &str) -> bool {
        let digest = Sha1::from(password).digest().to_string().to_uppercase();
        let (prefix, suffix) = digest.split_at(5);
        let url = format!("{}/range/{prefix}", self.base_url);
        let response = self.client.get(&url).header("Add-Padding", "true").timeout(Duration::from_secs(3)).send().await;
        let body = match response {
            Ok(r) if r.status().is_success() => r.text().await.unwrap_or_default(),
            Ok(r) => {
                tracing::warn!(
                    event = "breach_check_failed",
                    component = "auth",
                    status = r.status().as_u16(),
                    "failing open"
                );
                return false;
            }
            Err(e) => {
                tracing::warn!(event = "breach_check_failed", component = "auth", error = %e, "failing open");
                return false;
            }
        };
        body.lines().any(|line| {
            let mut parts = line.trim().split(':');
            let hit = parts.next().is_some_and(|s| s.eq_ignore_ascii_case(suffix));
            let count: u64 = parts.next().and_then(|c| c.trim().parse().ok()).unwrap_or(0);
            hit && count > 0
        })
    }
}
