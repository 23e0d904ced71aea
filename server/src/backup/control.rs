//! The local control socket: how `mycorrhizal backup` reaches a running server, since only one
//! process may open the database file. A Unix socket at `DATA_DIR/run/control.sock`, in a folder
//! only the server's user may enter (0700; the socket itself 0600), and a peer of another uid is
//! turned away even so. One request per connection, one JSON line: `{"op":"backup","dir":...}`;
//! the answer is JSON lines, `{"progress":{rows_copied, rows_total}}` as the copy goes, then
//! `{"done":{path, manifest}}` or `{"error":message}`.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use mycorrhizal_engine::snapshot::{Manifest, Progress};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};

use super::{Backup, Error, Signer};
use crate::state::AppState;

/// The socket's path under the data folder.
pub fn path(data_dir: &Path) -> PathBuf {
    data_dir.join("run").join("control.sock")
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
enum Request {
    Backup { dir: PathBuf },
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Reply {
    Progress { rows_copied: u64, rows_total: u64 },
    Done { path: PathBuf, manifest: Box<Manifest> },
    Error(String),
}

/// Binds the socket under `data_dir` (replacing one a previous run left).
pub fn listen(data_dir: &Path) -> std::io::Result<UnixListener> {
    let socket = path(data_dir);
    let listener = bind(&socket)?;
    tracing::info!(event = "control_socket_listening", component = "backup", path = %socket.display());
    Ok(listener)
}

/// Serves the control socket until the process ends.
pub async fn serve(listener: UnixListener, state: AppState) -> std::io::Result<()> {
    let uid = rustix::process::getuid().as_raw();
    loop {
        let (stream, _) = listener.accept().await?;
        let same_user = stream.peer_cred().map(|cred| cred.uid() == uid).unwrap_or(false);
        if !same_user {
            tracing::warn!(
                event = "control_socket_refused",
                component = "backup",
                "a peer of another user was refused"
            );
            continue;
        }
        let state = state.clone();
        tokio::spawn(async move {
            if let Err(e) = handle(stream, state).await {
                tracing::warn!(event = "control_socket_error", component = "backup", error = %e);
            }
        });
    }
}

fn bind(socket: &Path) -> std::io::Result<UnixListener> {
    let dir = socket.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    match std::fs::remove_file(socket) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let listener = UnixListener::bind(socket)?;
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600))?;
    Ok(listener)
}

async fn handle(stream: UnixStream, state: AppState) -> std::io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut line = String::new();
    // One short line: a request longer than this is not ours.
    let mut limited = tokio::io::BufReader::new(tokio::io::AsyncReadExt::take(read, 16 * 1024));
    if limited.read_line(&mut line).await? == 0 {
        // A probe (`server_running`) that connected and hung up.
        return Ok(());
    }
    let request: Request = match serde_json::from_str(&line) {
        Ok(request) => request,
        Err(e) => return send(&mut write, &Reply::Error(format!("unreadable request: {e}"))).await,
    };
    match request {
        Request::Backup { dir } => {
            let (progress_tx, mut progress_rx) = tokio::sync::mpsc::unbounded_channel();
            let started = Instant::now();
            let task = {
                let state = state.clone();
                tokio::task::spawn_blocking(move || {
                    let signer = Signer::from_config(&state.config)?;
                    super::create(&state.engine, &dir, &signer, &mut |p: Progress| {
                        let _ = progress_tx.send(p);
                    })
                })
            };
            while let Some(p) = progress_rx.recv().await {
                // The client may hang up; the backup finishes and is recorded all the same.
                let _ =
                    send(&mut write, &Reply::Progress { rows_copied: p.rows_copied, rows_total: p.rows_total }).await;
            }
            let outcome: Result<Backup, Error> = task.await.unwrap_or_else(|e| Err(Error::Task(e.to_string())));
            super::record(&state.engine, &outcome, "command", started.elapsed().as_millis() as u64).await;
            let reply = match outcome {
                Ok(backup) => Reply::Done { path: backup.path, manifest: Box::new(backup.manifest) },
                Err(e) => Reply::Error(e.to_string()),
            };
            send(&mut write, &reply).await
        }
    }
}

async fn send(write: &mut tokio::net::unix::OwnedWriteHalf, reply: &Reply) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(reply).map_err(std::io::Error::other)?;
    line.push(b'\n');
    write.write_all(&line).await
}

/// Asks the server running on `data_dir` for a backup into `dir`. `Ok(None)` when no server
/// answers there (none runs). Blocking.
pub fn request_backup(
    data_dir: &Path,
    dir: &Path,
    progress: &mut dyn FnMut(Progress),
) -> Result<Option<Backup>, Error> {
    let socket = path(data_dir);
    let mut stream = match std::os::unix::net::UnixStream::connect(&socket) {
        Ok(stream) => stream,
        Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused) => {
            return Ok(None);
        }
        Err(e) => return Err(Error::Server(format!("cannot reach the running server at {}: {e}", socket.display()))),
    };
    let mut request =
        serde_json::to_vec(&Request::Backup { dir: dir.to_path_buf() }).map_err(|e| Error::Server(e.to_string()))?;
    request.push(b'\n');
    stream.write_all(&request).map_err(|e| Error::Server(format!("cannot talk to the running server: {e}")))?;
    for line in BufReader::new(stream).lines() {
        let line = line.map_err(|e| Error::Server(format!("the running server hung up: {e}")))?;
        let reply = serde_json::from_str::<Reply>(&line)
            .map_err(|e| Error::Server(format!("unreadable answer from the server: {e}")))?;
        match reply {
            Reply::Progress { rows_copied, rows_total } => progress(Progress { rows_copied, rows_total }),
            Reply::Done { path, manifest } => return Ok(Some(Backup { path, manifest: *manifest })),
            Reply::Error(e) => return Err(Error::Server(e)),
        }
    }
    Err(Error::Server("the running server hung up before the backup finished".into()))
}

/// Whether a server answers on `data_dir`'s control socket.
pub fn server_running(data_dir: &Path) -> bool {
    std::os::unix::net::UnixStream::connect(path(data_dir)).is_ok()
}
