//! The control server: a Unix listener in a private directory, bounded connections, graceful
//! drain. Each connection runs in `control::connection`; what a method does is the
//! [`Handler`]'s business.

use std::fs;
use std::future::Future;
use std::io;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{Semaphore, broadcast, watch};
use tokio::task::JoinSet;

use super::codec::LineWriter;
use super::connection::{self, Lane, Shared};
use super::discovery::{
    self, DiscoveryError, METADATA_EXT, Metadata, current_uid, ensure_private_dir,
};
use super::methods::{Event, HelloResult};
use super::protocol::{
    ControlError, MAX_OUTPUT_BYTES, MAX_REQUEST_LINE, MAX_SERVER_LINE, Payload, Response,
};

/// A boxed future, as [`Handler::handle`] returns it.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What the server knows about one connection, handed to every request on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Session {
    /// Numbered from 1 in accept order, per server.
    pub id: u64,
    /// The peer process (from the socket's credentials).
    pub peer_pid: Option<i32>,
    /// `hello`'s `client`, e.g. `"slate 0.1.0"`.
    pub client: Option<String>,
    /// Who the connection speaks for, decided at `hello` (the operator until then) and
    /// re-checked before every request. Every core input of a request acts as
    /// `caller.party()`.
    pub caller: super::caller::Caller,
    /// Notifications to this connection from its requests' handlers.
    pub notices: super::connection::Notices,
}

/// The service behind the socket. `hello` and `subscribe` never reach it.
pub trait Handler: Send + Sync + 'static {
    /// Answers one request. The transport leaves the params as JSON: the service reads them
    /// into its typed [`crate::control::Request`] (`Request::parse`), which refuses unknown
    /// methods and wrong fields by name. Runs concurrently with the connection's other
    /// requests; `hello` and `subscribe` are the connection's own.
    fn handle<'a>(
        &'a self,
        method: &'a str,
        params: Value,
        session: &'a Session,
    ) -> BoxFuture<'a, Result<Payload, ControlError>>;

    /// A fresh receiver of the events that subscribed connections get as `event`
    /// notifications.
    fn subscribe(&self) -> broadcast::Receiver<Event>;

    /// The live workers this service runs, to tell their connections from the operator's.
    /// `None`: a service without workers, where every peer is the operator.
    fn actors(&self) -> Option<crate::runtime::ActorRegistry> {
        None
    }
}

/// Limits and timeouts (`docs/protocol.md`, "Limits").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerConfig {
    /// Connections served at once with every method.
    pub max_connections: usize,
    /// Connections over `max_connections` still served on the reserved lane, which answers
    /// only `hello`, `status`, `stop`, `stopMany` and `shutdown`, one request at a time, and
    /// closes after `reserved_idle` without a request: the operator can always look and
    /// stop. One more gets a `busy` error and is closed.
    pub reserved_connections: usize,
    pub reserved_idle: Duration,
    /// A connection that has not completed `hello` by then is closed.
    pub hello_timeout: Duration,
    /// Requests of one connection running at once; past it the server stops reading that
    /// connection until one finishes (back-pressure, not an error).
    pub max_in_flight: usize,
    /// How long shutdown waits for in-flight requests before cutting connections.
    pub drain_timeout: Duration,
    pub max_request_line: usize,
    pub max_server_line: usize,
    /// Bytes of output one connection may have waiting for its peer; past it (a peer that
    /// does not read) the connection is cut.
    pub max_output_bytes: usize,
    /// A peer that accepts no bytes for this long while output waits is cut.
    pub write_stall_timeout: Duration,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            max_connections: 64,
            reserved_connections: 8,
            reserved_idle: Duration::from_secs(2),
            hello_timeout: Duration::from_secs(10),
            max_in_flight: 64,
            drain_timeout: Duration::from_secs(5),
            max_request_line: MAX_REQUEST_LINE,
            max_server_line: MAX_SERVER_LINE,
            max_output_bytes: MAX_OUTPUT_BYTES,
            write_stall_timeout: Duration::from_secs(10),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("{}: the control socket must be a path inside a directory", path.display())]
    NoParent { path: PathBuf },
    #[error(transparent)]
    Discovery(#[from] DiscoveryError),
    #[error("{}: a coordinator is already listening on this socket", path.display())]
    InUse { path: PathBuf },
    #[error("{}: exists and is not a socket; it is left alone", path.display())]
    NotASocket { path: PathBuf },
    #[error("{}: cannot tell whether the existing socket is in use: {source}", path.display())]
    Probe { path: PathBuf, source: io::Error },
    #[error("{}: cannot bind the control socket: {source}", path.display())]
    Bind { path: PathBuf, source: io::Error },
    #[error("{}: cannot restrict the control socket to mode 0600: {source}", path.display())]
    Permissions { path: PathBuf, source: io::Error },
}

/// [`Server::bind_logged_coordinator`] failed: why, and the socket it tried.
#[derive(Debug, thiserror::Error)]
#[error("cannot serve on {}: {error}", socket.display())]
pub struct BindError {
    pub socket: PathBuf,
    pub error: ServerError,
}

/// A bound, not yet serving, control socket. Its metadata file is written.
pub struct Server {
    listener: UnixListener,
    socket: PathBuf,
    metadata_path: PathBuf,
    hello: HelloResult,
    config: ServerConfig,
    uid: u32,
}

/// Binds and serves until `shutdown` completes, then drains. See [`Server::bind`].
pub async fn serve(
    socket: &Path,
    metadata: Metadata,
    handler: Arc<dyn Handler>,
    shutdown: impl Future<Output = ()> + Send,
    config: ServerConfig,
) -> Result<(), ServerError> {
    Server::bind(socket, metadata, config)?
        .run(handler, shutdown)
        .await;
    Ok(())
}

impl Server {
    /// [`Server::bind`] for a coordinator of this process: its socket in the runtime
    /// directory (`$XDG_RUNTIME_DIR/slate` or `/tmp/slate-<uid>`), metadata for `cwd`, the
    /// default limits. The error names the socket.
    pub fn bind_coordinator(parent_id: uuid::Uuid, cwd: PathBuf) -> Result<Self, String> {
        Self::bind_logged_coordinator(parent_id, cwd, None).map_err(|e| e.to_string())
    }

    /// [`Server::bind_coordinator`] recording the coordinator's event log in its metadata (so
    /// a second `slate serve` for the same parent id can tell where it is), with the typed
    /// error ([`ServerError::InUse`] when a live coordinator already listens there).
    pub fn bind_logged_coordinator(
        parent_id: uuid::Uuid,
        cwd: PathBuf,
        events: Option<PathBuf>,
    ) -> Result<Self, BindError> {
        let socket = super::RuntimeDir::from_env().socket_path(parent_id);
        let metadata = Metadata {
            pid: std::process::id(),
            cwd,
            parent_id,
            started_at: crate::runtime::now_ms(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            socket: socket.clone(),
            events,
        };
        Self::bind(&socket, metadata, ServerConfig::default())
            .map_err(|error| BindError { socket, error })
    }

    /// Gives up a bound server that will not serve: its socket and metadata are removed (a
    /// coordinator whose start failed after binding).
    pub fn discard(self) {
        drop(self.listener);
        let _ = fs::remove_file(&self.socket);
        let _ = fs::remove_file(&self.metadata_path);
    }

    /// The socket this server listens on.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Prepares the directory (created 0700 if missing; an existing one must be ours and
    /// private), removes a stale socket at `socket` only after a connect to it was refused,
    /// binds, restricts the socket to 0600 and writes `<socket stem>.json` (metadata with
    /// `socket` set to this path). Must run inside a tokio runtime.
    pub fn bind(
        socket: &Path,
        mut metadata: Metadata,
        config: ServerConfig,
    ) -> Result<Self, ServerError> {
        let dir = socket
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .ok_or_else(|| ServerError::NoParent {
                path: socket.to_owned(),
            })?;
        ensure_private_dir(dir)?;
        clear_stale(socket)?;

        let listener = UnixListener::bind(socket).map_err(|source| ServerError::Bind {
            path: socket.to_owned(),
            source,
        })?;
        // bind(2) creates the socket as 0777 minus the umask. Binding under a restrictive
        // umask would need umask(2), which is process-wide: other threads creating files at
        // that moment would get the wrong modes. Instead the mode is fixed right here, before
        // the first accept; in between, the socket sits in a 0700 directory that only we can
        // search, so no other user can reach it anyway. The peer uid check backs both up.
        if let Err(source) = fs::set_permissions(socket, fs::Permissions::from_mode(0o600)) {
            let _ = fs::remove_file(socket);
            return Err(ServerError::Permissions {
                path: socket.to_owned(),
                source,
            });
        }

        socket.clone_into(&mut metadata.socket);
        // Discovery compares canonical paths.
        if let Ok(cwd) = fs::canonicalize(&metadata.cwd) {
            metadata.cwd = cwd;
        }
        let metadata_path = socket.with_extension(METADATA_EXT);
        if let Err(e) = discovery::write_metadata(&metadata_path, &metadata) {
            let _ = fs::remove_file(socket);
            return Err(e.into());
        }
        let hello = HelloResult {
            protocol: super::protocol::PROTOCOL_VERSION,
            server: format!("slate {}", metadata.version),
            parent_id: metadata.parent_id,
            cwd: metadata.cwd.to_string_lossy().into_owned(),
            pid: metadata.pid,
            actor: super::caller::CallerView::Operator,
        };
        Ok(Self {
            listener,
            socket: socket.to_owned(),
            metadata_path,
            hello,
            config,
            uid: current_uid(),
        })
    }

    pub fn socket_path(&self) -> &Path {
        &self.socket
    }

    pub fn metadata_path(&self) -> &Path {
        &self.metadata_path
    }

    /// Serves until `shutdown` completes. Then: stop accepting and remove the socket and the
    /// metadata file (nobody can connect any more); refuse new requests with `shutting-down`;
    /// let in-flight requests finish for up to `drain_timeout`; close every connection.
    pub async fn run(self, handler: Arc<dyn Handler>, shutdown: impl Future<Output = ()> + Send) {
        let Self {
            listener,
            socket,
            metadata_path,
            hello,
            config,
            uid,
        } = self;
        let (stop_tx, stop_rx) = watch::channel(false);
        let permits = Arc::new(Semaphore::new(config.max_connections));
        let reserved = Arc::new(Semaphore::new(config.reserved_connections));
        let shared = Arc::new(Shared {
            actors: handler.actors(),
            handler,
            hello,
            config,
        });
        // Workers started from now on are told where to reach their coordinator.
        if let Some(actors) = &shared.actors {
            actors.set_socket(&socket);
        }
        let mut connections = JoinSet::new();
        let mut next_session = 0_u64;
        let mut shutdown = std::pin::pin!(shutdown);

        loop {
            let step = tokio::select! {
                () = &mut shutdown => Step::Stop,
                accepted = listener.accept() => Step::Accepted(accepted.map(|(s, _)| s)),
                Some(_) = connections.join_next(), if !connections.is_empty() => Step::Reaped,
            };
            match step {
                Step::Stop => break,
                Step::Reaped => {}
                Step::Accepted(Err(_)) => {
                    // Out of descriptors or a peer gone before accept: back off briefly
                    // instead of spinning.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Step::Accepted(Ok(stream)) => {
                    let Ok(cred) = stream.peer_cred() else {
                        continue;
                    };
                    // Another user should not even reach the socket (0700 directory); if one
                    // does, it gets no answer at all.
                    if cred.uid() != uid {
                        continue;
                    }
                    let regular = Arc::clone(&permits).try_acquire_owned();
                    let admitted = regular.map(|p| (p, Lane::Regular)).or_else(|_| {
                        Arc::clone(&reserved)
                            .try_acquire_owned()
                            .map(|p| (p, Lane::Reserved))
                    });
                    let Ok((permit, lane)) = admitted else {
                        let limit = shared.config.max_connections;
                        connections.spawn(refuse_busy(stream, limit));
                        continue;
                    };
                    next_session += 1;
                    let session = Session {
                        id: next_session,
                        peer_pid: cred.pid(),
                        client: None,
                        caller: super::caller::Caller::Operator,
                        notices: super::connection::Notices::default(),
                    };
                    let shared = Arc::clone(&shared);
                    let signal = stop_rx.clone();
                    connections.spawn(async move {
                        connection::run(stream, session, shared, lane, signal).await;
                        drop(permit);
                    });
                }
            }
        }

        drop(listener);
        let _ = fs::remove_file(&socket);
        let _ = fs::remove_file(&metadata_path);
        let _ = stop_tx.send(true);
        let drained = tokio::time::timeout(shared.config.drain_timeout, async {
            while connections.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            connections.shutdown().await;
        }
    }
}

enum Step {
    Stop,
    Accepted(io::Result<UnixStream>),
    Reaped,
}

/// Over the connection limit: one `busy` error line, then close. What the peer had already
/// sent is read and dropped until it closes too: a socket closed with unread input resets
/// the peer's connection, and a client could then see the reset instead of the line.
/// Bounded in time so a peer that does not read, or never stops writing, cannot hold this
/// task.
async fn refuse_busy(stream: UnixStream, limit: usize) {
    let (mut read, write) = stream.into_split();
    let mut writer = LineWriter::new(write);
    let response = Response::error(None, ControlError::busy(limit));
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        let _ = writer.send(&response).await;
        let _ = writer.shutdown().await;
        let mut sink = [0_u8; 4096];
        while matches!(
            tokio::io::AsyncReadExt::read(&mut read, &mut sink).await,
            Ok(n) if n > 0
        ) {}
    })
    .await;
}

/// An entry already at the socket path is replaced only if it is a socket nobody answers on.
fn clear_stale(socket: &Path) -> Result<(), ServerError> {
    let meta = match fs::symlink_metadata(socket) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(source) => {
            return Err(ServerError::Probe {
                path: socket.to_owned(),
                source,
            });
        }
    };
    if !meta.file_type().is_socket() {
        return Err(ServerError::NotASocket {
            path: socket.to_owned(),
        });
    }
    match std::os::unix::net::UnixStream::connect(socket) {
        Ok(_) => Err(ServerError::InUse {
            path: socket.to_owned(),
        }),
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::ConnectionRefused | io::ErrorKind::NotFound
            ) =>
        {
            discovery::remove_stale(socket);
            Ok(())
        }
        Err(source) => Err(ServerError::Probe {
            path: socket.to_owned(),
            source,
        }),
    }
}
