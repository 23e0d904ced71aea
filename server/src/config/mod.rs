//! The server's configuration: loaded once from the environment (defaults < environment),
//! validated whole at boot. Every variable of the spec's configuration table is parsed here, even
//! where its feature lands later, so a typo fails at boot naming the variable.
//!
//! It does not read files except the persisted JWT secret (see [`secret`]) and the FCM service
//! account (see [`fcm`]).

mod env;
pub mod fcm;
pub mod secret;
pub mod values;

use std::net::SocketAddr;
use std::path::PathBuf;

pub use env::{ConfigError, Env};
use jiff::tz::TimeZone;
pub use values::{IpNet, Version, WallTime};

/// Everything the server is configured with. Secrets never appear in `Debug`.
#[derive(Clone)]
pub struct Config {
    /// `DATA_DIR`: the database, the secret and file folders live here (default `./data`).
    pub data_dir: PathBuf,
    /// `BIND_ADDR`: where the HTTP listener binds (default `127.0.0.1:7300`).
    pub bind_addr: SocketAddr,
    /// `JWT_SECRET_KEY`, or the generated key persisted in the data folder when unset.
    pub jwt_secret: Option<secret::Secret>,
    /// `LOG_LEVEL`: `debug`, `info`, `warn` or `error`.
    pub log_level: String,
    /// `LOG_PRETTY`: human-readable logs instead of JSON lines.
    pub log_pretty: bool,
    /// `REMINDER_TIME`: daily digest run time in the reminder zone.
    pub reminder_time: WallTime,
    /// `REMINDER_TIMEZONE`: the one server-wide zone for every "today" decision.
    pub reminder_timezone: TimeZone,
    pub reminder_timezone_name: String,
    /// `MYCORRHIZAL_PRE_MIGRATION_BACKUP_DIR` (default `pre-migration/` beside the database).
    pub pre_migration_dir: PathBuf,
    /// `TRUSTED_PROXIES`: peers whose `X-Forwarded-For`/`X-Real-IP` are believed.
    pub trusted_proxies: Vec<IpNet>,
    /// `MIN_CLIENT_VERSION`: the oldest supported client; `None` means no floor.
    pub min_client_version: Option<Version>,
    /// `ATTACHMENT_QUOTA_MB`: attachment bytes a user may keep (default 1024).
    pub attachment_quota_bytes: u64,
    /// Longest wait before written rows reach a committed search-index commit (they are
    /// searchable at once either way).
    pub search_commit_interval_ms: u64,
    /// `DB_CACHE_MB`: the database's page cache (default 48; redb's own default, 1 GiB, is what
    /// a server that runs for weeks ends up holding).
    pub db_cache_bytes: usize,
    /// `SEARCH_WRITER_MB`: the search index writer's memory, all its threads together (default
    /// 48; tantivy needs 15 per indexing thread).
    pub search_writer_bytes: usize,
    pub import: ImportLimits,
    pub retention: Retention,
    pub storage: Storage,
    pub integrity: Integrity,
    pub alerts: Alerts,
    pub spray: Spray,
    pub rates: Rates,
    pub features: Features,
    pub auth: Auth,
    /// `FCM_SERVICE_ACCOUNT_FILE` (and `FCM_API_URL`): mobile push, when configured.
    pub fcm: Option<fcm::Fcm>,
}

/// Upload limits of the import endpoints, and how many rows a confirm writes per transaction.
#[derive(Debug, Clone)]
pub struct ImportLimits {
    /// `IMPORT_MAX_CSV_MB` (default 20): largest CSV upload.
    pub max_csv_bytes: usize,
    /// `IMPORT_MAX_FILE_MB` (default 50): largest vCard or JSContact upload.
    pub max_file_bytes: usize,
    /// `IMPORT_MAX_CARDS` (default 100,000): most cards or rows one upload may hold.
    pub max_cards: usize,
    /// `IMPORT_BATCH_ROWS` (default 2,000, 1 to 50,000): rows a confirm writes per transaction
    /// (one durable commit each). Larger is somewhat faster for big imports, costs memory in
    /// proportion and holds the single writer longer: other users' writes wait for a batch
    /// (see `import::BATCH`; measured holds are in BENCHMARKS.md).
    pub batch_rows: usize,
}

/// Retention windows in days; `<= 0` disables the purge where the spec allows it.
#[derive(Debug, Clone)]
pub struct Retention {
    pub system_event_days: i64,
    pub job_run_days: i64,
    pub webhook_delivery_days: i64,
    pub deleted_days: i64,
    pub storage_sample_days: i64,
}

#[derive(Debug, Clone)]
pub struct Storage {
    pub warn_percent: u8,
    pub critical_percent: u8,
}

#[derive(Debug, Clone)]
pub struct Integrity {
    pub check_enabled: bool,
    pub check_interval_hours: u64,
    pub restore_drill_enabled: bool,
    pub restore_drill_interval_hours: u64,
    pub restore_drill_max_duration_seconds: Option<u64>,
    /// `BACKUP_ALLOW_UNSIGNED=1`: accept a snapshot without a manifest.
    pub backup_allow_unsigned: bool,
    /// `BACKUP_DIR`: where `mycorrhizal backup` writes by default, the scheduled backups go and
    /// the restore drill looks for the newest backup (unset: `DATA_DIR/backups` for the command,
    /// no scheduled backups).
    pub backup_dir: Option<PathBuf>,
    /// `BACKUP_INTERVAL_HOURS` (0, off): scheduled backups into `BACKUP_DIR`.
    pub backup_interval_hours: u64,
    /// `BACKUP_KEEP` (7): scheduled backups kept; older ones are removed after a new one verifies.
    pub backup_keep: u64,
}

impl Integrity {
    /// Where backups go and are looked for: `BACKUP_DIR`, else `DATA_DIR/backups`.
    pub fn backups_in(&self, data_dir: &std::path::Path) -> PathBuf {
        self.backup_dir.clone().unwrap_or_else(|| data_dir.join("backups"))
    }
}

#[derive(Debug, Clone)]
pub struct Alerts {
    pub enabled: bool,
    pub eval_interval_minutes: u64,
    pub disk_usage_percent: u8,
    pub sync_failure_threshold: u64,
    pub notify_failure_threshold: u64,
    /// 0 means twice the restore-drill interval.
    pub backup_max_age_hours: u64,
    pub job_stale_multiplier: u64,
    pub incident_quiet_hours: u64,
    pub backup_enabled: bool,
    pub db_integrity_enabled: bool,
    pub job_stopped_enabled: bool,
    pub auth_spray_enabled: bool,
}

#[derive(Debug, Clone)]
pub struct Spray {
    pub enabled: bool,
    pub window_seconds: u64,
    pub failure_threshold: u64,
    pub identifier_threshold: u64,
    pub throttle_seconds: u64,
}

/// Token-bucket request rates per client IP (and per user for the API).
#[derive(Debug, Clone)]
pub struct Rates {
    /// `RATE_LIMIT_API_BURST` (1000) and `RATE_LIMIT_API_INTERVAL_MS` (600: one token per 600 ms).
    pub api_burst: u64,
    pub api_interval_ms: u64,
    /// `RATE_LIMIT_AUTH_BURST` (50) and `RATE_LIMIT_AUTH_INTERVAL_MS` (500), for the public auth routes.
    pub auth_burst: u64,
    pub auth_interval_ms: u64,
    /// `RATE_LIMIT_DAV_BURST` (2500) and `RATE_LIMIT_DAV_INTERVAL_MS` (100), for CardDAV/CalDAV.
    pub dav_burst: u64,
    pub dav_interval_ms: u64,
}

#[derive(Debug, Clone)]
pub struct Features {
    pub carddav_enabled: bool,
    pub caldav_enabled: bool,
    pub caldav_sync_interval_hours: u64,
    pub caldav_two_way_enabled: bool,
    /// `PHOTO_LIBRARY_SYNC_INTERVAL_HOURS` (the spec leaves the name open; the existing
    /// implementation's `IMMICH_SYNC_INTERVAL_HOURS` is read when it is not set).
    pub photo_library_sync_interval_hours: u64,
    pub webhook_block_private_urls: bool,
    /// `REDO_LOG_SET_ASIDE`: open the database with a redo log it cannot replay set aside
    /// (default: refuse to start; the operator decides).
    pub redo_log_set_aside: bool,
    /// `WEBHOOK_TIMEOUT_SECONDS` (default 10, 1 to 120): how long one webhook, topic or push
    /// delivery may take before it counts as failed (and is retried).
    pub webhook_timeout_seconds: u64,
    pub caldav_block_private_urls: bool,
    pub oidc_block_private_urls: bool,
    pub update_check_enabled: bool,
    /// `UPDATE_CHECK_URL`: the latest-release document the release check reads (GitHub's
    /// `releases/latest` shape: `tag_name`, `html_url`, `published_at`).
    pub update_check_url: String,
    pub hibp_check_enabled: bool,
    /// `METRICS_ENABLED` (default off): serve `/metrics` in the Prometheus text format.
    pub metrics_enabled: bool,
    /// `METRICS_TOKEN`: a bearer token a scraper may present instead of an admin session.
    pub metrics_token: Option<secret::Secret>,
    /// `VAPID_SUBJECT`: the contact in every Web Push request's VAPID JWT (`sub`), a `mailto:`
    /// or `https:` URL. Default: `FRONTEND_URL` when set, otherwise `mailto:webpush@localhost`
    /// (some push services refuse that; set it on a public instance).
    pub vapid_subject: String,
}

/// Where the release check reads the latest release by default.
pub const DEFAULT_UPDATE_CHECK_URL: &str = "https://api.github.com/repos/DrewBrunning/mycorrhizal-crm/releases/latest";

fn update_check_url(env: &mut Env) -> String {
    let url = env.string_or("UPDATE_CHECK_URL", DEFAULT_UPDATE_CHECK_URL);
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        env.fail("UPDATE_CHECK_URL", "must be an http(s) URL");
    }
    url
}

#[derive(Clone)]
pub struct Auth {
    pub disable_registration: bool,
    pub cookie_secure: bool,
    pub cookie_domain: Option<String>,
    pub frontend_url: Option<String>,
    pub jwt_expiry_hours: u64,
    /// `SESSION_IDLE_TIMEOUT_HOURS`: a session unused this long ends (default 24).
    pub session_idle_hours: u64,
    pub data_encryption_key: Option<secret::Secret>,
    pub data_encryption_key_file: Option<PathBuf>,
    pub oidc: Option<Oidc>,
    pub oidc_auto_provision: bool,
    pub oidc_trust_email: bool,
    pub oidc_scopes: String,
    /// `HIBP_API_URL`: base of the breached-password range API.
    pub hibp_api_url: String,
    pub email: Email,
}

/// How transactional email leaves the server.
#[derive(Clone, Debug)]
pub enum Email {
    /// No provider configured: mail is logged as not sent and the request fails with 503.
    Disabled,
    /// `SMTP_HOST`, `SMTP_PORT`, `SMTP_USERNAME`, `SMTP_PASSWORD`, `SMTP_TLS` (`starttls`, `tls`, `none`), `EMAIL_FROM`.
    Smtp {
        host: String,
        port: u16,
        username: Option<String>,
        password: Option<secret::Secret>,
        tls: SmtpTls,
        from: String,
    },
    /// `EMAIL_API_URL` and `EMAIL_API_KEY`: POSTs `{from, to, subject, text}` JSON with a bearer key.
    Api { url: String, key: secret::Secret, from: String },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmtpTls {
    StartTls,
    Tls,
    None,
}

#[derive(Clone)]
pub struct Oidc {
    pub provider_url: String,
    pub client_id: String,
    pub client_secret: secret::Secret,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("data_dir", &self.data_dir)
            .field("bind_addr", &self.bind_addr)
            .field("jwt_secret", &self.jwt_secret.as_ref().map(|_| "<redacted>"))
            .field("log_level", &self.log_level)
            .field("reminder_timezone", &self.reminder_timezone_name)
            .field("min_client_version", &self.min_client_version)
            .finish_non_exhaustive()
    }
}

impl Config {
    /// Loads from the process environment.
    pub fn from_env() -> Result<Config, Vec<ConfigError>> {
        Self::load(Env::from_process())
    }

    /// Loads from `env`; returns every problem found, each naming its variable.
    pub fn load(mut env: Env) -> Result<Config, Vec<ConfigError>> {
        let data_dir = PathBuf::from(env.string_or("DATA_DIR", "./data"));
        let bind_addr = match env.string_or("BIND_ADDR", "127.0.0.1:7300").parse() {
            Ok(addr) => addr,
            Err(_) => {
                env.fail("BIND_ADDR", "expected host:port, e.g. 127.0.0.1:7300");
                SocketAddr::from(([127, 0, 0, 1], 7300))
            }
        };
        let jwt_secret = env.string("JWT_SECRET_KEY").and_then(|raw| match secret::check_strength(&raw) {
            Ok(()) => Some(secret::Secret::new(raw)),
            Err(reason) => {
                env.fail("JWT_SECRET_KEY", reason);
                None
            }
        });
        let log_level = env.string_or("LOG_LEVEL", "info").to_ascii_lowercase();
        if !["debug", "info", "warn", "error"].contains(&log_level.as_str()) {
            env.fail("LOG_LEVEL", "expected debug, info, warn or error");
        }
        let log_pretty = env.bool("LOG_PRETTY", false);
        let reminder_time = parse_or(&mut env, "REMINDER_TIME", "06:00", WallTime { hour: 6, minute: 0 });
        let reminder_timezone_name = env.string_or("REMINDER_TIMEZONE", "UTC");
        let reminder_timezone = match TimeZone::get(&reminder_timezone_name) {
            Ok(tz) => tz,
            Err(_) => {
                env.fail("REMINDER_TIMEZONE", format!("{reminder_timezone_name:?} is not an IANA time zone"));
                TimeZone::UTC
            }
        };
        let pre_migration_dir = env
            .string("MYCORRHIZAL_PRE_MIGRATION_BACKUP_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| data_dir.join("pre-migration"));
        let trusted_proxies = trusted_proxies(&mut env);
        let min_client_version = env.string("MIN_CLIENT_VERSION").and_then(|raw| match raw.parse() {
            Ok(v) => Some(v),
            Err(reason) => {
                env.fail("MIN_CLIENT_VERSION", reason);
                None
            }
        });
        let attachment_quota_bytes = env.count("ATTACHMENT_QUOTA_MB", 1024, 1_048_576) * 1024 * 1024;
        let search_commit_interval_ms = env.count("SEARCH_COMMIT_INTERVAL_MS", 500, 3_600_000).max(10);
        let default_cache_mb = (mycorrhizal_engine::DEFAULT_CACHE_BYTES >> 20) as i64;
        let db_cache_bytes = (env.int("DB_CACHE_MB", default_cache_mb, 4, 1_048_576) as usize) << 20;
        let search_writer_bytes = (env.int("SEARCH_WRITER_MB", 48, 15, 4096) as usize) << 20;
        let import = ImportLimits {
            max_csv_bytes: (env.count("IMPORT_MAX_CSV_MB", 20, 1024).max(1) * 1024 * 1024) as usize,
            max_file_bytes: (env.count("IMPORT_MAX_FILE_MB", 50, 1024).max(1) * 1024 * 1024) as usize,
            max_cards: env.count("IMPORT_MAX_CARDS", 100_000, 10_000_000).max(1) as usize,
            batch_rows: env.count("IMPORT_BATCH_ROWS", crate::crm::import::BATCH as u64, 50_000).max(1) as usize,
        };
        let retention = Retention {
            system_event_days: env.int("SYSTEM_EVENT_RETENTION_DAYS", 30, i64::MIN, 36_500),
            job_run_days: env.int("JOB_RUN_RETENTION_DAYS", 30, i64::MIN, 36_500),
            webhook_delivery_days: env.int("WEBHOOK_DELIVERY_RETENTION_DAYS", 30, i64::MIN, 36_500),
            deleted_days: env.int("DELETED_RETENTION_DAYS", 30, 0, 36_500),
            storage_sample_days: env.int("STORAGE_SAMPLE_RETENTION_DAYS", 180, i64::MIN, 36_500),
        };
        let storage = Storage {
            warn_percent: env.percent("STORAGE_WARN_PERCENT", 75),
            critical_percent: env.percent("STORAGE_CRITICAL_PERCENT", 90),
        };
        if storage.warn_percent >= storage.critical_percent {
            env.fail("STORAGE_WARN_PERCENT", "must be below STORAGE_CRITICAL_PERCENT");
        }
        let integrity = Integrity {
            check_enabled: env.bool("DB_INTEGRITY_CHECK_ENABLED", true),
            check_interval_hours: env.count("DB_INTEGRITY_CHECK_INTERVAL_HOURS", 24, 8_760).max(1),
            restore_drill_enabled: env.bool("DB_RESTORE_DRILL_ENABLED", true),
            restore_drill_interval_hours: env.count("DB_RESTORE_DRILL_INTERVAL_HOURS", 168, 8_760).max(1),
            restore_drill_max_duration_seconds: env
                .raw("DB_RESTORE_DRILL_MAX_DURATION_SECONDS")
                .is_some()
                .then(|| env.count("DB_RESTORE_DRILL_MAX_DURATION_SECONDS", 0, 86_400)),
            backup_allow_unsigned: env.bool("BACKUP_ALLOW_UNSIGNED", false),
            backup_dir: env.string("BACKUP_DIR").map(PathBuf::from),
            backup_interval_hours: env.count("BACKUP_INTERVAL_HOURS", 0, 8_760),
            backup_keep: env.count("BACKUP_KEEP", 7, 10_000).max(1),
        };
        if integrity.backup_interval_hours > 0 && integrity.backup_dir.is_none() {
            env.fail("BACKUP_INTERVAL_HOURS", "scheduled backups need BACKUP_DIR (a folder, ideally on another disk)");
        }
        let alerts = Alerts {
            enabled: env.bool("ALERTING_ENABLED", true),
            eval_interval_minutes: env.count("ALERT_EVAL_INTERVAL_MINUTES", 15, 10_080).max(1),
            disk_usage_percent: env.percent("ALERT_DISK_USAGE_PERCENT", 90),
            sync_failure_threshold: env.count("ALERT_SYNC_FAILURE_THRESHOLD", 3, 10_000),
            notify_failure_threshold: env.count("ALERT_NOTIFY_FAILURE_THRESHOLD", 3, 10_000),
            backup_max_age_hours: env.count("ALERT_BACKUP_MAX_AGE_HOURS", 0, 87_600),
            job_stale_multiplier: env.count("ALERT_JOB_STALE_MULTIPLIER", 3, 1_000),
            incident_quiet_hours: env.count("ALERT_INCIDENT_QUIET_HOURS", 6, 8_760),
            backup_enabled: env.bool("ALERT_BACKUP_ENABLED", true),
            db_integrity_enabled: env.bool("ALERT_DB_INTEGRITY_ENABLED", true),
            job_stopped_enabled: env.bool("ALERT_JOB_STOPPED_ENABLED", true),
            auth_spray_enabled: env.bool("ALERT_AUTH_SPRAY_ENABLED", true),
        };
        let spray = Spray {
            enabled: env.bool("AUTH_SPRAY_ENABLED", true),
            window_seconds: env.count("AUTH_SPRAY_WINDOW_SECONDS", 60, 86_400).max(1),
            failure_threshold: env.count("AUTH_SPRAY_FAILURE_THRESHOLD", 60, 1_000_000).max(1),
            identifier_threshold: env.count("AUTH_SPRAY_IDENTIFIER_THRESHOLD", 15, 1_000_000).max(1),
            throttle_seconds: env.count("AUTH_SPRAY_THROTTLE_SECONDS", 300, 86_400),
        };
        let rates = Rates {
            api_burst: env.count("RATE_LIMIT_API_BURST", 1000, 1_000_000).max(1),
            api_interval_ms: env.count("RATE_LIMIT_API_INTERVAL_MS", 600, 3_600_000).max(1),
            auth_burst: env.count("RATE_LIMIT_AUTH_BURST", 50, 1_000_000).max(1),
            auth_interval_ms: env.count("RATE_LIMIT_AUTH_INTERVAL_MS", 500, 3_600_000).max(1),
            dav_burst: env.count("RATE_LIMIT_DAV_BURST", 2500, 1_000_000).max(1),
            dav_interval_ms: env.count("RATE_LIMIT_DAV_INTERVAL_MS", 100, 3_600_000).max(1),
        };
        let features = Features {
            carddav_enabled: env.bool("CARDDAV_ENABLED", false),
            caldav_enabled: env.bool("CALDAV_ENABLED", false),
            caldav_sync_interval_hours: env.count("CALDAV_SYNC_INTERVAL_HOURS", 6, 8_760).max(1),
            caldav_two_way_enabled: env.bool("CALDAV_TWO_WAY_ENABLED", false),
            // The existing implementation's name is read too, for an operator moving over.
            photo_library_sync_interval_hours: match env.string("PHOTO_LIBRARY_SYNC_INTERVAL_HOURS") {
                Some(_) => env.count("PHOTO_LIBRARY_SYNC_INTERVAL_HOURS", 6, 8_760),
                None => env.count("IMMICH_SYNC_INTERVAL_HOURS", 6, 8_760),
            }
            .max(1),
            webhook_block_private_urls: env.bool("WEBHOOK_BLOCK_PRIVATE_URLS", false),
            redo_log_set_aside: env.bool("REDO_LOG_SET_ASIDE", false),
            webhook_timeout_seconds: env.count("WEBHOOK_TIMEOUT_SECONDS", 10, 120).max(1),
            caldav_block_private_urls: env.bool("CALDAV_BLOCK_PRIVATE_URLS", false),
            oidc_block_private_urls: env.bool("OIDC_BLOCK_PRIVATE_URLS", false),
            update_check_enabled: env.bool("UPDATE_CHECK_ENABLED", false),
            update_check_url: update_check_url(&mut env),
            hibp_check_enabled: env.bool("HIBP_CHECK_ENABLED", false),
            metrics_enabled: env.bool("METRICS_ENABLED", false),
            metrics_token: env.string("METRICS_TOKEN").filter(|t| !t.is_empty()).map(secret::Secret::new),
            vapid_subject: vapid_subject(&mut env),
        };
        let auth = auth(&mut env);
        let fcm = fcm::load(&mut env);
        if !env.errors.is_empty() {
            return Err(env.errors);
        }
        Ok(Config {
            data_dir,
            bind_addr,
            jwt_secret,
            log_level,
            log_pretty,
            reminder_time,
            reminder_timezone,
            reminder_timezone_name,
            pre_migration_dir,
            trusted_proxies,
            min_client_version,
            attachment_quota_bytes,
            search_commit_interval_ms,
            db_cache_bytes,
            search_writer_bytes,
            import,
            retention,
            storage,
            integrity,
            alerts,
            spray,
            rates,
            features,
            auth,
            fcm,
        })
    }

    /// How old the newest operator backup may be: `ALERT_BACKUP_MAX_AGE_HOURS`, or with 0 twice
    /// the restore-drill interval.
    pub fn backup_max_age_hours(&self) -> u64 {
        match self.alerts.backup_max_age_hours {
            0 => self.integrity.restore_drill_interval_hours * 2,
            h => h,
        }
    }

    /// The database file.
    pub fn database_path(&self) -> PathBuf {
        self.data_dir.join("mycorrhizal.redb")
    }
}

fn parse_or<T: std::str::FromStr<Err = String>>(env: &mut Env, name: &str, default: &str, fallback: T) -> T {
    match env.string_or(name, default).parse() {
        Ok(v) => v,
        Err(reason) => {
            env.fail(name, reason);
            fallback
        }
    }
}

fn trusted_proxies(env: &mut Env) -> Vec<IpNet> {
    let raw = env.string_or("TRUSTED_PROXIES", "127.0.0.1/8,::1/128");
    let mut nets = Vec::new();
    for part in raw.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.parse::<IpNet>() {
            Ok(net) if net.is_catch_all() => {
                env.fail("TRUSTED_PROXIES", format!("{part} trusts every address; list your proxies instead"));
            }
            Ok(net) => nets.push(net),
            Err(reason) => env.fail("TRUSTED_PROXIES", reason),
        }
    }
    nets
}

fn auth(env: &mut Env) -> Auth {
    let oidc_parts = (env.string("OIDC_PROVIDER_URL"), env.string("OIDC_CLIENT_ID"), env.string("OIDC_CLIENT_SECRET"));
    let oidc = match oidc_parts {
        (Some(provider_url), Some(client_id), Some(secret)) => {
            if !(provider_url.starts_with("https://") || provider_url.starts_with("http://")) {
                env.fail("OIDC_PROVIDER_URL", "expected an http(s) URL");
            }
            Some(Oidc { provider_url, client_id, client_secret: secret::Secret::new(secret) })
        }
        (None, None, None) => None,
        _ => {
            // The spec disables SSO unless all three are set; say so rather than guess.
            tracing::warn!(
                event = "oidc_disabled",
                reason = "OIDC_PROVIDER_URL, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET must all be set"
            );
            None
        }
    };
    let data_encryption_key_file = env.string("DATA_ENCRYPTION_KEY_FILE").map(PathBuf::from);
    if let Some(path) = &data_encryption_key_file
        && !path.is_file()
    {
        env.fail("DATA_ENCRYPTION_KEY_FILE", format!("{} is not a readable file", path.display()));
    }
    let frontend_url = env.string("FRONTEND_URL");
    if oidc.is_some() && frontend_url.is_none() {
        env.fail("FRONTEND_URL", "is required with OIDC: the redirect URI is derived from it");
    }
    if let Some(url) = &frontend_url
        && !(url.starts_with("https://") || url.starts_with("http://"))
    {
        env.fail("FRONTEND_URL", "expected an http(s) URL");
    }
    Auth {
        disable_registration: env.bool("DISABLE_REGISTRATION", false),
        cookie_secure: env.bool("COOKIE_SECURE", false),
        cookie_domain: env.string("COOKIE_DOMAIN"),
        frontend_url,
        jwt_expiry_hours: env.count("JWT_EXPIRY_HOURS", 96, 8_760).max(1),
        session_idle_hours: env.count("SESSION_IDLE_TIMEOUT_HOURS", 24, 8_760).max(1),
        data_encryption_key: env.string("DATA_ENCRYPTION_KEY").map(secret::Secret::new),
        data_encryption_key_file,
        oidc,
        oidc_auto_provision: env.bool("OIDC_AUTO_PROVISION", false),
        oidc_trust_email: env.bool("OIDC_TRUST_EMAIL", false),
        oidc_scopes: env.string_or("OIDC_SCOPES", "openid email profile"),
        hibp_api_url: env.string_or("HIBP_API_URL", "https://api.pwnedpasswords.com").trim_end_matches('/').to_string(),
        email: email(env),
    }
}

fn email(env: &mut Env) -> Email {
    let from = env.string_or("EMAIL_FROM", "Mycorrhizal <no-reply@localhost>");
    if let Some(host) = env.string("SMTP_HOST") {
        let tls = match env.string_or("SMTP_TLS", "starttls").to_ascii_lowercase().as_str() {
            "starttls" => SmtpTls::StartTls,
            "tls" => SmtpTls::Tls,
            "none" => SmtpTls::None,
            other => {
                env.fail("SMTP_TLS", format!("expected starttls, tls or none, got {other:?}"));
                SmtpTls::StartTls
            }
        };
        let default_port = if tls == SmtpTls::Tls { 465 } else { 587 };
        let port = env.int("SMTP_PORT", default_port, 1, 65_535) as u16;
        return Email::Smtp {
            host,
            port,
            username: env.string("SMTP_USERNAME"),
            password: env.string("SMTP_PASSWORD").map(secret::Secret::new),
            tls,
            from,
        };
    }
    match (env.string("EMAIL_API_URL"), env.string("EMAIL_API_KEY")) {
        (Some(url), Some(key)) => Email::Api { url, key: secret::Secret::new(key), from },
        (Some(_), None) => {
            env.fail("EMAIL_API_KEY", "must be set together with EMAIL_API_URL");
            Email::Disabled
        }
        _ => Email::Disabled,
    }
}

/// `VAPID_SUBJECT`, or `FRONTEND_URL`, or a placeholder contact.
fn vapid_subject(env: &mut Env) -> String {
    match env.string("VAPID_SUBJECT") {
        Some(s) if s.starts_with("mailto:") || s.starts_with("https://") => s,
        Some(_) => {
            env.fail("VAPID_SUBJECT", "expected a mailto: or https: URL");
            String::new()
        }
        None => env
            .string("FRONTEND_URL")
            .filter(|u| u.starts_with("https://"))
            .unwrap_or_else(|| "mailto:webpush@localhost".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(pairs: &[(&str, &str)]) -> Result<Config, Vec<ConfigError>> {
        Config::load(Env::from_map(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()))
    }

    fn failing(pairs: &[(&str, &str)]) -> Vec<String> {
        load(pairs).err().unwrap_or_default().into_iter().map(|e| e.variable).collect()
    }

    #[test]
    fn defaults_match_the_spec() {
        let c = load(&[]).unwrap();
        assert_eq!(c.bind_addr.port(), 7300);
        assert_eq!(c.reminder_time, WallTime { hour: 6, minute: 0 });
        assert_eq!(c.reminder_timezone_name, "UTC");
        assert_eq!(c.retention.deleted_days, 30);
        assert_eq!((c.storage.warn_percent, c.storage.critical_percent), (75, 90));
        assert_eq!(c.alerts.eval_interval_minutes, 15);
        assert_eq!(c.spray.identifier_threshold, 15);
        assert!(c.min_client_version.is_none());
        assert!(c.trusted_proxies[0].contains("127.0.0.1".parse().unwrap()));
        assert_eq!(c.pre_migration_dir, PathBuf::from("./data/pre-migration"));
        assert_eq!((c.db_cache_bytes, c.search_writer_bytes), (48 << 20, 48 << 20));
        let small = load(&[("DB_CACHE_MB", "16"), ("SEARCH_WRITER_MB", "15")]).unwrap();
        assert_eq!((small.db_cache_bytes, small.search_writer_bytes), (16 << 20, 15 << 20));
    }

    #[test]
    fn each_boot_refusal_names_its_variable() {
        assert_eq!(failing(&[("TRUSTED_PROXIES", "10.0.0.0/8, 0.0.0.0/0")]), ["TRUSTED_PROXIES"]);
        assert_eq!(failing(&[("TRUSTED_PROXIES", "::/0")]), ["TRUSTED_PROXIES"]);
        assert_eq!(failing(&[("MIN_CLIENT_VERSION", "1.2")]), ["MIN_CLIENT_VERSION"]);
        assert_eq!(failing(&[("REMINDER_TIMEZONE", "Mars/Olympus")]), ["REMINDER_TIMEZONE"]);
        assert_eq!(failing(&[("REMINDER_TIME", "25:00")]), ["REMINDER_TIME"]);
        assert_eq!(failing(&[("JWT_SECRET_KEY", "short")]), ["JWT_SECRET_KEY"]);
        assert_eq!(failing(&[("ALERT_DISK_USAGE_PERCENT", "150")]), ["ALERT_DISK_USAGE_PERCENT"]);
        assert_eq!(failing(&[("DB_INTEGRITY_CHECK_ENABLED", "sometimes")]), ["DB_INTEGRITY_CHECK_ENABLED"]);
        assert_eq!(failing(&[("DB_CACHE_MB", "lots")]), ["DB_CACHE_MB"]);
        assert_eq!(failing(&[("DB_CACHE_MB", "2")]), ["DB_CACHE_MB"]);
        assert_eq!(failing(&[("SEARCH_WRITER_MB", "8")]), ["SEARCH_WRITER_MB"]);
        assert_eq!(
            failing(&[("LOG_LEVEL", "chatty"), ("BIND_ADDR", "nowhere")]),
            ["BIND_ADDR", "LOG_LEVEL"],
            "all problems are reported at once"
        );
    }

    #[test]
    fn retention_zero_or_negative_is_allowed_where_it_disables_purge() {
        let c = load(&[("SYSTEM_EVENT_RETENTION_DAYS", "0"), ("JOB_RUN_RETENTION_DAYS", "-1")]).unwrap();
        assert_eq!((c.retention.system_event_days, c.retention.job_run_days), (0, -1));
    }

    #[test]
    fn far_zones_and_floors_parse() {
        let c = load(&[("REMINDER_TIMEZONE", "Pacific/Kiritimati"), ("MIN_CLIENT_VERSION", "0.6.0")]).unwrap();
        assert_eq!(c.min_client_version, Some(Version(0, 6, 0)));
        assert_eq!(c.reminder_timezone.iana_name(), Some("Pacific/Kiritimati"));
    }
}
