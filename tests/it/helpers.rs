//! Spawning the real binary: `spawn` waits for its `listening` log line and reads the bound
//! address from it; `run_to_exit` runs a start-up that is expected to fail.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tempfile::TempDir;

pub const BIN: &str = env!("CARGO_BIN_EXE_mycorrhizal");
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A running server; killed on drop.
pub struct TestServer {
    /// Keeps the data folder alive as long as the server runs.
    pub _dir: Arc<TempDir>,
    pub child: Child,
    pub addr: SocketAddr,
    pub logs: Arc<Mutex<Vec<String>>>,
    pub client: reqwest::Client,
}

impl TestServer {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client.get(self.url(path)).send().await.expect("request")
    }

    /// Sends SIGTERM and waits (bounded) for the exit.
    pub fn terminate(&mut self) -> ExitStatus {
        let status = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status().expect("kill");
        assert!(status.success());
        wait_bounded(&mut self.child, Duration::from_secs(20))
    }

    pub fn log_lines(&self) -> Vec<serde_json::Value> {
        let lines = self.logs.lock().unwrap().clone();
        lines.iter().filter_map(|l| serde_json::from_str(l).ok()).collect()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A data folder for one test, plus the environment the binary gets.
pub struct Instance {
    pub dir: Arc<TempDir>,
    pub env: HashMap<String, String>,
}

impl Instance {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut env = HashMap::new();
        env.insert("DATA_DIR".into(), dir.path().join("data").display().to_string());
        env.insert("BIND_ADDR".into(), "127.0.0.1:0".into());
        env.insert("LOG_LEVEL".into(), "info".into());
        Instance { dir: Arc::new(dir), env }
    }

    pub fn with(mut self, key: &str, value: &str) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }

    pub fn data_dir(&self) -> PathBuf {
        PathBuf::from(&self.env["DATA_DIR"])
    }

    pub fn database(&self) -> PathBuf {
        self.data_dir().join("mycorrhizal.redb")
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.env_clear().env("PATH", std::env::var("PATH").unwrap_or_default()).envs(&self.env);
        cmd
    }

    /// Starts the server and waits until it listens.
    pub fn spawn(&self) -> TestServer {
        let mut child = self.command().stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn binary");
        let logs = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        let stdout = child.stdout.take().expect("stdout");
        let sink = logs.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line)
                    && v["event"] == "listening"
                {
                    let _ = tx.send(v["addr"].as_str().unwrap_or_default().to_string());
                }
                sink.lock().unwrap().push(line);
            }
        });
        let addr = match rx.recv_timeout(START_TIMEOUT) {
            Ok(addr) => addr.parse().expect("listening addr"),
            Err(_) => {
                let _ = child.kill();
                let mut stderr = String::new();
                if let Some(mut e) = child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut e, &mut stderr);
                }
                panic!("server did not start: {stderr}\n{:?}", logs.lock().unwrap());
            }
        };
        let client = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().expect("client");
        TestServer { _dir: self.dir.clone(), child, addr, logs, client }
    }

    /// Runs the binary expecting it to stop by itself; returns status and all output.
    pub fn run_to_exit(&self) -> (ExitStatus, String) {
        self.run_args(&[])
    }

    /// Starts the binary with `args` (a subcommand), output discarded; the caller waits or kills.
    pub fn start_args(&self, args: &[&str]) -> Child {
        self.command().args(args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("spawn binary")
    }

    /// Runs the binary with `args` (a subcommand) until it stops; returns status and all output.
    pub fn run_args(&self, args: &[&str]) -> (ExitStatus, String) {
        let mut child =
            self.command().args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn binary");
        let status = wait_bounded(&mut child, Duration::from_secs(30));
        let mut output = String::new();
        for stream in [
            child.stdout.take().map(|s| Box::new(s) as Box<dyn std::io::Read>),
            child.stderr.take().map(|s| Box::new(s) as Box<dyn std::io::Read>),
        ]
        .into_iter()
        .flatten()
        {
            let mut s = stream;
            let _ = s.read_to_string(&mut output);
        }
        (status, output)
    }
}

pub fn wait_bounded(child: &mut Child, limit: Duration) -> ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("process did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Opens the (stopped) instance's database with the engine library.
pub fn open_engine(path: &Path) -> mycorrhizal_engine::Engine {
    let options = mycorrhizal_engine::Options {
        migrations: mycorrhizal::crm::migrations(),
        ..mycorrhizal_engine::Options::default()
    };
    mycorrhizal_engine::Engine::open(path, options).expect("open db").0
}

/// A password the strength rule accepts.
pub const PASSWORD: &str = "lichen-moss-fern-42";

/// The value of cookie `name` set by `response`, if any.
pub fn set_cookie(response: &reqwest::Response, name: &str) -> Option<String> {
    response
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|c| c.strip_prefix(&format!("{name}="))?.split(';').next().map(str::to_string))
}

/// The raw `Set-Cookie` line for `name`.
pub fn set_cookie_line(response: &reqwest::Response, name: &str) -> Option<String> {
    response
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|c| c.starts_with(&format!("{name}=")))
        .map(str::to_string)
}

/// How a test client authenticates.
#[derive(Clone, Debug)]
pub enum Cred {
    Cookie(String),
    Bearer(String),
}

/// A signed-in client.
#[derive(Clone)]
pub struct Client {
    pub base: String,
    pub http: reqwest::Client,
    pub cred: Cred,
    pub id: u64,
}

impl Client {
    pub fn with(&self, cred: Cred) -> Client {
        Client { cred, ..self.clone() }
    }

    pub fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let builder = self.http.request(method, format!("{}{}", self.base, path));
        match &self.cred {
            Cred::Cookie(c) => builder.header("cookie", format!("auth_token={c}")),
            Cred::Bearer(t) => builder.bearer_auth(t),
        }
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.request(reqwest::Method::GET, path).send().await.expect("request")
    }

    pub async fn send(&self, method: reqwest::Method, path: &str, body: serde_json::Value) -> reqwest::Response {
        self.request(method, path).json(&body).send().await.expect("request")
    }

    pub async fn post(&self, path: &str, body: serde_json::Value) -> reqwest::Response {
        self.send(reqwest::Method::POST, path, body).await
    }
}

impl TestServer {
    pub async fn post(&self, path: &str, body: serde_json::Value) -> reqwest::Response {
        self.client.post(self.url(path)).json(&body).send().await.expect("request")
    }

    pub async fn register(&self, username: &str, password: &str) -> reqwest::Response {
        let body = serde_json::json!({ "username": username, "email": format!("{username}@example.org"), "password": password });
        self.post("/api/v1/register", body).await
    }

    pub async fn login(&self, identifier: &str, password: &str) -> reqwest::Response {
        self.post("/api/v1/login", serde_json::json!({ "identifier": identifier, "password": password })).await
    }

    /// Registers `username` (if needed) and signs in with a session cookie.
    pub async fn sign_up(&self, username: &str) -> Client {
        let registered = self.register(username, PASSWORD).await;
        assert!(
            registered.status() == 201 || registered.status() == 409,
            "register {username}: {}",
            registered.status()
        );
        self.sign_in(username, PASSWORD).await
    }

    pub async fn sign_in(&self, username: &str, password: &str) -> Client {
        let response = self.login(username, password).await;
        assert_eq!(response.status(), 200, "login {username}");
        let cookie = set_cookie(&response, "auth_token").expect("auth_token cookie");
        let mut client = Client { base: self.url(""), http: self.client.clone(), cred: Cred::Cookie(cookie), id: 0 };
        let me: serde_json::Value = client.get("/api/v1/users/me").await.json().await.expect("me");
        client.id = me["id"].as_u64().expect("id");
        client
    }

    pub fn anonymous(&self) -> Client {
        Client { base: self.url(""), http: self.client.clone(), cred: Cred::Bearer(String::new()), id: 0 }
    }
}

/// A response's JSON body, after asserting its status (the body is in the message when not).
pub async fn json_of(response: reqwest::Response, status: u16) -> serde_json::Value {
    let got = response.status().as_u16();
    let text = response.text().await.expect("response body");
    assert_eq!(got, status, "{text}");
    serde_json::from_str(&text).expect("a JSON body")
}
