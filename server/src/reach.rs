//! Whether the outside systems this instance is configured to use answer: the single sign-on
//! provider, the mail API or SMTP server, FCM, the breached-password API and the release feed.
//! Each probe is one request (a TCP connect for SMTP) bounded by [`PROBE_TIMEOUT`], all at once;
//! the answers are cached for [`CACHE_FOR`], so `/health` and the status page cost nothing
//! between. A probe says only `ok` or why not, never the address.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::sync::Mutex;
use utoipa::ToSchema;

use crate::config::{Config, Email};

/// How long one probe may take.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// How long answers are reused.
pub const CACHE_FOR: Duration = Duration::from_secs(30);

/// One system's reachability.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Reachability {
    /// `ok` or `unhealthy`.
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A system to probe: its name and how.
#[derive(Debug, Clone)]
enum Target {
    /// Any HTTP answer below 500 counts.
    Http(String),
    /// A TCP connection counts.
    Tcp(String, u16),
}

/// The configured systems and the last answers.
pub struct Reach {
    targets: Vec<(String, Target)>,
    http: reqwest::Client,
    cached: Mutex<Option<(Instant, BTreeMap<String, Reachability>)>>,
}

impl Reach {
    /// The systems `config` uses (none configured: nothing is probed).
    pub fn of(config: &Config, http: reqwest::Client) -> Reach {
        let mut targets = Vec::new();
        if let Some(oidc) = &config.auth.oidc {
            let base = oidc.provider_url.trim_end_matches('/');
            targets.push(("oidc".to_string(), Target::Http(format!("{base}/.well-known/openid-configuration"))));
        }
        match &config.auth.email {
            Email::Disabled => {}
            Email::Smtp { host, port, .. } => targets.push(("email".to_string(), Target::Tcp(host.clone(), *port))),
            Email::Api { url, .. } => targets.push(("email".to_string(), Target::Http(url.clone()))),
        }
        if let Some(fcm) = &config.fcm {
            targets.push(("fcm".to_string(), Target::Http(fcm.token_uri.clone())));
        }
        if config.features.hibp_check_enabled {
            targets.push(("hibp".to_string(), Target::Http(config.auth.hibp_api_url.clone())));
        }
        if config.features.update_check_enabled {
            targets.push(("update_check".to_string(), Target::Http(config.features.update_check_url.clone())));
        }
        Reach { targets, http, cached: Mutex::new(None) }
    }

    /// The names of the systems probed.
    pub fn names(&self) -> Vec<String> {
        self.targets.iter().map(|(name, _)| name.clone()).collect()
    }

    /// The last answers without waiting for any probe (none yet: every system is taken as
    /// answering), and a refresh started in the background when they are older than
    /// [`CACHE_FOR`]: for `/health`, which must answer at once.
    pub fn last_known(self: &std::sync::Arc<Self>) -> BTreeMap<String, Reachability> {
        let stale = match self.cached.try_lock() {
            Ok(cached) => match cached.as_ref() {
                Some((at, answers)) if at.elapsed() < CACHE_FOR => return answers.clone(),
                Some((_, answers)) => Some(answers.clone()),
                None => None,
            },
            // A refresh is under way: its answers are not here yet.
            Err(_) => return BTreeMap::new(),
        };
        if !self.targets.is_empty() {
            let me = self.clone();
            tokio::spawn(async move {
                me.now().await;
            });
        }
        stale.unwrap_or_default()
    }

    /// Every configured system's reachability, probed at most every [`CACHE_FOR`].
    pub async fn now(&self) -> BTreeMap<String, Reachability> {
        let mut cached = self.cached.lock().await;
        if let Some((at, answers)) = cached.as_ref()
            && at.elapsed() < CACHE_FOR
        {
            return answers.clone();
        }
        let answers = self.probe_all().await;
        *cached = Some((Instant::now(), answers.clone()));
        answers
    }

    /// Probes every system now, all at once (the diagnostics sweep; not cached).
    pub async fn probe_all(&self) -> BTreeMap<String, Reachability> {
        let mut probes = tokio::task::JoinSet::new();
        for (name, target) in self.targets.clone() {
            let http = self.http.clone();
            probes.spawn(async move { (name, probe(&http, &target).await) });
        }
        let mut answers = BTreeMap::new();
        while let Some(answer) = probes.join_next().await {
            if let Ok((name, reach)) = answer {
                answers.insert(name, reach);
            }
        }
        answers
    }
}

async fn probe(http: &reqwest::Client, target: &Target) -> Reachability {
    let outcome: Result<(), String> = match target {
        Target::Http(url) => match tokio::time::timeout(PROBE_TIMEOUT, http.get(url).send()).await {
            Err(_) => Err(format!("no answer within {} s", PROBE_TIMEOUT.as_secs())),
            Ok(Err(e)) if e.is_connect() => Err("cannot connect".into()),
            Ok(Err(_)) => Err("the request failed".into()),
            Ok(Ok(answer)) if answer.status().is_server_error() => {
                Err(format!("answered {}", answer.status().as_u16()))
            }
            Ok(Ok(_)) => Ok(()),
        },
        Target::Tcp(host, port) => {
            match tokio::time::timeout(PROBE_TIMEOUT, tokio::net::TcpStream::connect((host.as_str(), *port))).await {
                Err(_) => Err(format!("no answer within {} s", PROBE_TIMEOUT.as_secs())),
                Ok(Err(_)) => Err("cannot connect".into()),
                Ok(Ok(_)) => Ok(()),
            }
        }
    };
    match outcome {
        Ok(()) => Reachability { status: "ok".into(), reason: None },
        Err(reason) => Reachability { status: "unhealthy".into(), reason: Some(reason) },
    }
}
