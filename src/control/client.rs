//! The control client: connect, `hello`, then any number of concurrent calls matched to their
//! responses by id, and an optional stream of notifications.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::net::UnixStream;
use tokio::net::unix::OwnedReadHalf;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::codec::{LineReader, write_lines};
use super::discovery::{Endpoint, Located};
use super::methods::{
    self, HelloParams, HelloResult, Lagged, Method, NoParams, Notification, Request,
    SUPPORTED_PROTOCOLS,
};
use super::protocol::{ControlError, MAX_REQUEST_LINE, MAX_SERVER_LINE, RequestId, RequestLine};

/// How long `connect` waits for the socket and the `hello` answer together.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Requests queued for the writer task.
const OUTBOX: usize = 64;
/// Notifications buffered for a slow subscriber before the client stops reading (and the
/// server reports `lagged`).
const NOTIFICATION_BUFFER: usize = 1024;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot connect to the coordinator at {}: {source}", path.display())]
    Connect { path: PathBuf, source: io::Error },
    #[error("the coordinator did not answer within {0:?}")]
    Timeout(Duration),
    #[error("the coordinator closed the connection")]
    Closed,
    #[error("control socket: {0}")]
    Io(#[source] io::Error),
    #[error("the coordinator sent an invalid message: {0}")]
    Protocol(String),
    /// The coordinator answered with an error (a refusal or a transport error).
    #[error("{0}")]
    Remote(ControlError),
    /// Refused here, before sending, in the coordinator's words: the request is longer
    /// than the server's request line cap ([`MAX_REQUEST_LINE`]).
    #[error("{0}")]
    Refused(ControlError),
    #[error("this connection is already subscribed")]
    AlreadySubscribed,
}

impl ClientError {
    /// True when no coordinator listens there (the CLI's exit 3).
    pub fn is_unreachable(&self) -> bool {
        matches!(self, Self::Connect { source, .. } if matches!(
            source.kind(),
            io::ErrorKind::ConnectionRefused | io::ErrorKind::NotFound
        ))
    }

    /// The coordinator's error, if it sent one, or the one it would have sent for a request
    /// this client refused to send.
    pub fn remote(&self) -> Option<&ControlError> {
        match self {
            Self::Remote(e) | Self::Refused(e) => Some(e),
            _ => None,
        }
    }
}

/// A response as the client keeps it: the result's JSON text, unparsed, so a caller that
/// wants a typed value reads the text once (a full status answer is megabytes).
type Answer = Result<RawResult, ControlError>;

/// A result's JSON text as the server sent it. Every reader parses it (`call` into a value,
/// `call_typed` into `T`, the status table into borrowed rows), which also validates it: a
/// result that is not exactly one JSON value fails there as a protocol error.
///
/// It keeps the whole line it was read from and where the result stands in it, so a large
/// answer is never copied out of the line; its text holds no newline.
#[derive(Clone, Debug)]
pub struct RawResult {
    line: String,
    result: std::ops::Range<usize>,
}

impl RawResult {
    /// The result at `result` in `line` (`None`: the response had no result, read as
    /// `null`), without copying it out of the line.
    pub(super) fn from_line(line: String, result: Option<std::ops::Range<usize>>) -> Self {
        match result {
            Some(result) => Self { line, result },
            None => Self {
                line: "null".to_owned(),
                result: 0..4,
            },
        }
    }

    pub fn get(&self) -> &str {
        &self.line[self.result.clone()]
    }

    /// The result read as `T`; a mismatch names the method and the field's path. The plain
    /// reader runs first: tracking the path costs about as much as the parse itself (a
    /// 1,000-row status answer: 27 M → 12 M client instructions), so it is paid only to name
    /// the field of an answer that does not fit.
    pub fn decode<'a, T: Deserialize<'a>>(&'a self, method: &str) -> Result<T, ClientError> {
        if let Ok(value) = serde_json::from_str(self.get()) {
            return Ok(value);
        }
        let mut de = serde_json::Deserializer::from_str(self.get());
        serde_path_to_error::deserialize(&mut de).map_err(|e| {
            ClientError::Protocol(format!("{method} result: {}: {}", e.path(), e.inner()))
        })
    }
}

/// Calls waiting for their response.
#[derive(Default)]
struct Pending {
    waiting: HashMap<u64, oneshot::Sender<Answer>>,
    state: State,
}

#[derive(Clone, Default)]
enum State {
    #[default]
    Open,
    /// The connection ended, with the error the server gave for it (a response without an
    /// id, e.g. `busy`), if any.
    Closed(Option<ControlError>),
}

fn lock(pending: &Mutex<Pending>) -> MutexGuard<'_, Pending> {
    pending.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A connection that completed `hello`. Cheap to share behind an `Arc`; calls may run
/// concurrently.
pub struct Client {
    /// Whole request lines for the writer task.
    outbox: mpsc::Sender<Vec<u8>>,
    pending: Arc<Mutex<Pending>>,
    next_id: AtomicU64,
    notifications: Mutex<Option<mpsc::Receiver<Notification>>>,
    server: Option<HelloResult>,
    reader: JoinHandle<()>,
}

impl Drop for Client {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Client {
    /// Connects and says `hello`, within [`CONNECT_TIMEOUT`].
    pub async fn connect(endpoint: &Endpoint) -> Result<Self, ClientError> {
        Self::connect_path(&endpoint.socket, CONNECT_TIMEOUT).await
    }

    pub async fn connect_path(socket: &Path, timeout: Duration) -> Result<Self, ClientError> {
        Self::connect_as(socket, timeout, None).await
    }

    /// Says `hello` on the connection discovery already made (one connect, not two), within
    /// [`CONNECT_TIMEOUT`].
    pub async fn connect_located(located: Located) -> Result<Self, ClientError> {
        let Located { endpoint, stream } = located;
        let stream = stream
            .set_nonblocking(true)
            .and_then(|()| UnixStream::from_std(stream))
            .map_err(|source| ClientError::Connect {
                path: endpoint.socket,
                source,
            })?;
        Self::hello(stream, CONNECT_TIMEOUT, None, None).await
    }

    /// [`Client::connect_path`] saying who the client is in `hello.client` (for example
    /// `slate mcp`, naming its MCP host) instead of `"slate <version>"`.
    pub async fn connect_named(
        socket: &Path,
        timeout: Duration,
        client: methods::ClientInfo,
    ) -> Result<Self, ClientError> {
        let started = tokio::time::Instant::now();
        let stream = tokio::time::timeout(timeout, UnixStream::connect(socket))
            .await
            .map_err(|_| ClientError::Timeout(timeout))?
            .map_err(|source| ClientError::Connect {
                path: socket.to_owned(),
                source,
            })?;
        let left = timeout.saturating_sub(started.elapsed());
        Self::hello(stream, left, None, Some(client))
            .await
            .map_err(|e| match e {
                ClientError::Timeout(_) => ClientError::Timeout(timeout),
                other => other,
            })
    }

    /// [`Client::connect_path`] presenting a worker generation's capability in `hello`: the
    /// connection then speaks as that generation, or `hello` is refused. The CLI never
    /// presents one (run inside a worker it is that worker's actor by its process ancestry).
    pub async fn connect_as(
        socket: &Path,
        timeout: Duration,
        capability: Option<&crate::runtime::Capability>,
    ) -> Result<Self, ClientError> {
        let started = tokio::time::Instant::now();
        let stream = tokio::time::timeout(timeout, UnixStream::connect(socket))
            .await
            .map_err(|_| ClientError::Timeout(timeout))?
            .map_err(|source| ClientError::Connect {
                path: socket.to_owned(),
                source,
            })?;
        let left = timeout.saturating_sub(started.elapsed());
        Self::hello(stream, left, capability, None)
            .await
            .map_err(|e| match e {
                ClientError::Timeout(_) => ClientError::Timeout(timeout),
                other => other,
            })
    }

    /// Says `hello` on a connected stream within `timeout`.
    async fn hello(
        stream: UnixStream,
        timeout: Duration,
        capability: Option<&crate::runtime::Capability>,
        named: Option<methods::ClientInfo>,
    ) -> Result<Self, ClientError> {
        let mut client = Self::from_stream(stream);
        let params = HelloParams {
            protocols: SUPPORTED_PROTOCOLS.to_vec(),
            client: Some(named.unwrap_or_else(|| {
                methods::ClientInfo::named(format!("slate {}", env!("CARGO_PKG_VERSION")))
            })),
            capability: capability.cloned(),
        };
        let hello =
            tokio::time::timeout(timeout, client.request::<methods::method::Hello>(&params))
                .await
                .map_err(|_| ClientError::Timeout(timeout))??;
        client.server = Some(hello);
        Ok(client)
    }

    /// Wraps a connected stream without saying `hello` (for tests of the handshake itself).
    pub fn from_stream(stream: UnixStream) -> Self {
        let (read, write) = stream.into_split();
        let pending = Arc::new(Mutex::new(Pending::default()));
        let (notify_tx, notify_rx) = mpsc::channel(NOTIFICATION_BUFFER);
        let reader = tokio::spawn(read_messages(read, Arc::clone(&pending), notify_tx));
        let (outbox, lines) = mpsc::channel(OUTBOX);
        tokio::spawn(write_lines(write, lines));
        Self {
            outbox,
            pending,
            next_id: AtomicU64::new(1),
            notifications: Mutex::new(Some(notify_rx)),
            server: None,
            reader,
        }
    }

    /// What the server said in `hello` (`None` only for [`Client::from_stream`]).
    pub fn server(&self) -> Option<&HelloResult> {
        self.server.as_ref()
    }

    /// Sends one typed request of method `M` and reads its typed result. A result that does
    /// not match `M::Result` (a renamed or missing field) is a protocol error naming it.
    pub async fn request<M: Method>(&self, params: &M::Params) -> Result<M::Result, ClientError> {
        let raw = self.request_raw::<M>(params).await?;
        raw.decode::<M::Result>(M::NAME)
    }

    /// [`Client::request`], returning the result's JSON text (for a caller that reads it into
    /// a narrower type or copies it out).
    pub async fn request_raw<M: Method>(
        &self,
        params: &M::Params,
    ) -> Result<RawResult, ClientError> {
        self.roundtrip(|id| methods::encode_request::<M>(id, params))
            .await
    }

    /// Sends one request of any method (the Hub's actions); the result stays JSON text.
    pub async fn send(&self, request: &Request) -> Result<RawResult, ClientError> {
        self.roundtrip(|id| request.encode_line(id)).await
    }

    /// Sends a request whose params are any JSON object, bypassing the types: for tests of
    /// the wire itself (wrong types, unknown fields). Our own components use
    /// [`Client::request`].
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, ClientError> {
        let method = method.to_owned();
        let raw = self
            .roundtrip(|id| {
                super::codec::encode_line(&RequestLine {
                    id: RequestId::from(id),
                    method,
                    params,
                })
            })
            .await?;
        serde_json::from_str(raw.get()).map_err(|e| ClientError::Protocol(format!("result: {e}")))
    }

    async fn roundtrip(
        &self,
        encode: impl FnOnce(u64) -> serde_json::Result<Vec<u8>>,
    ) -> Result<RawResult, ClientError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let line = encode(id).map_err(|e| ClientError::Protocol(e.to_string()))?;
        let bytes = line.len() - 1;
        if bytes > MAX_REQUEST_LINE {
            return Err(ClientError::Refused(ControlError::request_too_large(
                bytes,
                MAX_REQUEST_LINE,
            )));
        }
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = lock(&self.pending);
            if let State::Closed(reason) = &pending.state {
                return Err(closed_error(reason.clone()));
            }
            pending.waiting.insert(id, tx);
        }
        let _forget = Forget {
            pending: &self.pending,
            id,
        };
        if self.outbox.send(line).await.is_err() {
            // The writer failed: the server closed, maybe with a reason (`busy`) that the
            // reader is about to deliver; that reason beats a bare "closed".
            return match tokio::time::timeout(Duration::from_secs(1), rx).await {
                Ok(Ok(answer)) => answer.map_err(ClientError::Remote),
                _ => Err(self.closed()),
            };
        }
        match rx.await {
            Ok(answer) => answer.map_err(ClientError::Remote),
            Err(_) => Err(self.closed()),
        }
    }

    fn closed(&self) -> ClientError {
        match lock(&self.pending).state.clone() {
            State::Closed(reason) => closed_error(reason),
            State::Open => ClientError::Closed,
        }
    }

    /// The notifications this connection's own requests cause (a `callTool`'s `toolUpdate`
    /// and `toolOutcome`), without subscribing to the fleet's events. Once per client, and
    /// not together with [`Client::subscribe`]. A client that calls tools should take them:
    /// untaken notifications fill a bounded buffer, after which the client stops reading.
    pub fn notifications(&self) -> Result<Subscription, ClientError> {
        let receiver = self
            .notifications
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .ok_or(ClientError::AlreadySubscribed)?;
        Ok(Subscription { receiver })
    }

    /// Subscribes this connection to the coordinator's events. Once per client.
    pub async fn subscribe(&self) -> Result<Subscription, ClientError> {
        let receiver = self
            .notifications
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .ok_or(ClientError::AlreadySubscribed)?;
        self.request::<methods::method::Subscribe>(&NoParams {})
            .await?;
        Ok(Subscription { receiver })
    }
}

/// Removes a call's entry when the call ends, answered or cancelled.
struct Forget<'a> {
    pending: &'a Mutex<Pending>,
    id: u64,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        lock(self.pending).waiting.remove(&self.id);
    }
}

fn closed_error(reason: Option<ControlError>) -> ClientError {
    reason.map_or(ClientError::Closed, ClientError::Remote)
}

/// Notifications (`event`, `lagged`) in the order the server sent them.
pub struct Subscription {
    receiver: mpsc::Receiver<Notification>,
}

impl Subscription {
    /// The next notification; `None` once the connection has closed.
    pub async fn next(&mut self) -> Option<Notification> {
        self.receiver.recv().await
    }
}

/// One server line as the client reads it: members it routes by, the result left as text.
#[derive(Deserialize)]
struct Incoming<'a> {
    #[serde(default, borrow)]
    id: Option<&'a RawValue>,
    #[serde(default)]
    result: Option<&'a RawValue>,
    #[serde(default)]
    error: Option<ControlError>,
    #[serde(default)]
    method: Option<&'a RawValue>,
}

/// Routes responses to their callers and notifications to the subscription. When the
/// connection ends every waiting call fails.
async fn read_messages(
    read: OwnedReadHalf,
    pending: Arc<Mutex<Pending>>,
    notifications: mpsc::Sender<Notification>,
) {
    let mut reader = LineReader::new(read, MAX_SERVER_LINE);
    let mut connection_error = None;
    while let Ok(Some(line)) = reader.next_line().await {
        let Ok(line) = line else { continue };
        let (id, answer) = match ServerLine::read(&line) {
            Some(ServerLine::Response { id, answer }) => (id, answer),
            Some(ServerLine::Notification) => {
                // A notification this build cannot read counts as missed: the subscriber
                // re-reads state, as after any gap.
                let notification = serde_json::from_str::<Notification>(&line)
                    .unwrap_or(Notification::Lagged(Lagged { missed: 1 }));
                // Nobody listening is fine: the subscription was dropped.
                let _ = notifications.send(notification).await;
                continue;
            }
            None => continue,
        };
        let answer: Answer = answer.map(|result| RawResult::from_line(line, result));
        match id {
            Some(id) => {
                let waiter = lock(&pending).waiting.remove(&id);
                if let Some(waiter) = waiter {
                    let _ = waiter.send(answer);
                }
            }
            // An error without a (numeric) id cannot be matched: it answers every call waiting
            // now (a line the server could not read is one of theirs; `busy` is about all of
            // them), and it is the reason given if the connection then ends.
            None => {
                if let Err(error) = answer {
                    let waiting = std::mem::take(&mut lock(&pending).waiting);
                    for (_, waiter) in waiting {
                        let _ = waiter.send(Err(error.clone()));
                    }
                    connection_error = Some(error);
                }
            }
        }
    }
    let waiting = {
        let mut pending = lock(&pending);
        pending.state = State::Closed(connection_error.clone());
        std::mem::take(&mut pending.waiting)
    };
    for (_, waiter) in waiting {
        if let Some(error) = &connection_error {
            let _ = waiter.send(Err(error.clone()));
        }
    }
}

/// One server line as every client reads it (this async client and [`super::oneshot`]).
pub(super) enum ServerLine {
    /// The answer to request `id`: where its result's JSON text stands in the line (`None`:
    /// no result, read as `null`), or the server's error. `id` is `None` when the server
    /// could not read the request's id (or it was not an integer).
    Response {
        id: Option<u64>,
        answer: Result<Option<std::ops::Range<usize>>, ControlError>,
    },
    /// A notification (`{"method", "params"}`, no id).
    Notification,
}

impl ServerLine {
    /// `None` for a line that is neither (it is skipped).
    pub(super) fn read(line: &str) -> Option<Self> {
        // The server writes a success as `{"id":N,"result":…}`; its result text is sliced
        // out without a first scan (the reader's own parse validates it).
        if let Some((id, result)) = success_line(line) {
            return Some(Self::Response {
                id: Some(id),
                answer: Ok(Some(result)),
            });
        }
        let message = serde_json::from_str::<Incoming<'_>>(line).ok()?;
        if message.id.is_none() && message.method.is_some() {
            return Some(Self::Notification);
        }
        // A borrowed raw value is a slice of `line`: its place there.
        let place = |text: &str| {
            let at = text.as_ptr().addr() - line.as_ptr().addr();
            at..at + text.len()
        };
        let answer = match (message.error, message.result) {
            (Some(error), _) => Err(error),
            (None, result) => Ok(result.map(|r| place(r.get()))),
        };
        Some(Self::Response {
            id: message.id.and_then(|id| id.get().parse::<u64>().ok()),
            answer,
        })
    }
}

/// `{"id":N,"result":R}` exactly as the server writes a success: `N` and where `R` stands.
/// Anything else (errors, notifications, other spellings) takes the general path.
fn success_line(line: &str) -> Option<(u64, std::ops::Range<usize>)> {
    const ID: &str = "{\"id\":";
    const RESULT: &str = ",\"result\":";
    let rest = line.strip_prefix(ID)?;
    let digits = rest.find(|c: char| !c.is_ascii_digit())?;
    let id = rest[..digits].parse().ok()?;
    rest[digits..].strip_prefix(RESULT)?.strip_suffix('}')?;
    Some((id, ID.len() + digits + RESULT.len()..line.len() - 1))
}

#[cfg(test)]
mod tests {
    use super::{RawResult, success_line};
    use crate::control::protocol::{Payload, RequestId, Response};

    #[test]
    fn the_servers_success_lines_take_the_fast_path() {
        let value = serde_json::json!({"children": [{"id": "x", "text": "a}b"}], "n": 1});
        let line = serde_json::to_string(&Response::result(RequestId::from(42), value.clone()))
            .unwrap_or_default();
        let (id, raw) = success_line(&line).unwrap_or((0, 0..0));
        assert_eq!(id, 42);
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&line[raw]).ok(),
            Some(value.clone())
        );
        let raw_payload = Payload::Raw(
            serde_json::value::to_raw_value(&serde_json::json!([1, 2])).unwrap_or_default(),
        );
        let line = serde_json::to_string(&Response::result(RequestId::from(7), raw_payload))
            .unwrap_or_default();
        let (id, raw) = success_line(&line).unwrap_or((0, 0..0));
        assert_eq!((id, &line[raw]), (7, "[1,2]"));
        // A kept answer is written in pieces, without copying it into a line: the same
        // bytes as serializing the response, read the same way.
        let kept: std::sync::Arc<serde_json::value::RawValue> =
            serde_json::value::to_raw_value(&value)
                .unwrap_or_default()
                .into();
        for id in [RequestId::from(3), RequestId::Text("a\"b".to_owned())] {
            let response = Response::result(id, Payload::Shared(kept.clone()));
            let line = response.encode_line().map(|l| l.pieces().concat());
            let mut serialized = serde_json::to_vec(&response).unwrap_or_default();
            serialized.push(b'\n');
            assert_eq!(line.ok(), Some(serialized));
        }
        // Other spellings take the general path and still find the result in the line.
        for (line, want) in [
            (
                r#"{"result": [1, {"a": 2}], "id": 5}"#,
                Some("[1, {\"a\": 2}]"),
            ),
            (r#"{"id": 6}"#, None),
        ] {
            let Some(super::ServerLine::Response { id, answer }) = super::ServerLine::read(line)
            else {
                panic!("{line}: not a response");
            };
            let answer = answer
                .ok()
                .map(|r| RawResult::from_line(line.to_owned(), r));
            assert_eq!(
                answer.as_ref().map(super::RawResult::get),
                Some(want.unwrap_or("null"))
            );
            assert!(id.is_some());
        }
        // Errors, text ids and notifications are not successes.
        assert_eq!(
            success_line(r#"{"id":1,"error":{"code":"x","message":"y"}}"#),
            None
        );
        assert_eq!(success_line(r#"{"id":"a","result":1}"#), None);
        assert_eq!(success_line(r#"{"method":"event","params":{}}"#), None);
    }
}
