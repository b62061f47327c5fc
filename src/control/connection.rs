//! One client connection: a reader loop that dispatches requests, one task per request (a
//! 60 s `wait` must not hold up a status query behind it), and one writer task that owns the
//! socket's write half so lines never interleave.
//!
//! Nobody can wedge it (`docs/protocol.md`, "Limits"): a peer that is gone (both directions
//! closed) is noticed at once and its running requests are dropped, which cancels their
//! pending waits in the core; output waiting for a peer is bounded in bytes, and a peer that
//! does not read is cut off.

use std::collections::HashMap;
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use tokio::net::UnixStream;
use tokio::net::unix::OwnedWriteHalf;
use tokio::sync::{Notify, broadcast, mpsc, watch};
use tokio::task::{self, JoinHandle, JoinSet};
use tokio::time::Instant;

use super::caller::{self, Caller};
use super::codec::{Line, LineReader, LineWriter, encode_line};
use super::methods::{
    Event, HelloParams, HelloResult, Lagged, Method as _, NoParams, Notification,
    SUPPORTED_PROTOCOLS, SubscribeResult, decode, method,
};
use super::protocol::{ControlError, RequestId, RequestLine, Response};
use super::server::{Handler, ServerConfig, Session};
use crate::runtime::lineage::Lineage;

/// How long closing waits for queued lines to reach a peer that may not be reading.
const CLOSE_FLUSH: Duration = Duration::from_secs(2);
/// After end of stream with requests still running: how often to ask whether the peer closed
/// only its write side (answers still wanted) or is gone.
const PEER_PROBE: Duration = Duration::from_millis(100);
/// Methods served on the reserved lane (connections over `max_connections`).
pub const RESERVED_METHODS: [&str; 5] = [
    method::Hello::NAME,
    method::Status::NAME,
    method::Stop::NAME,
    method::StopMany::NAME,
    method::Shutdown::NAME,
];
/// Longest `hello.client` kept.
const MAX_CLIENT_NAME: usize = 200;

/// Notifications a request's handler sends to its own connection (a tool call's `toolUpdate`
/// and `toolOutcome`): the connection's outbox, and nothing for a session without one.
#[derive(Clone, Default)]
pub struct Notices {
    outbox: Option<(Outbox, usize)>,
}

impl std::fmt::Debug for Notices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.outbox.is_some() {
            "Notices(connection)"
        } else {
            "Notices(none)"
        })
    }
}

/// Every session's notices are alike for comparison: they say where, not who.
impl PartialEq for Notices {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Notices {}

impl Notices {
    /// Queues `notification`. `droppable` (progress) is dropped while the peer's queue is
    /// over half its budget, like an event; otherwise it is queued like a response (a peer
    /// that does not read is cut). `false` when it was not queued.
    pub fn send(&self, notification: &Notification, droppable: bool) -> bool {
        let Some((outbox, max_line)) = &self.outbox else {
            return false;
        };
        let Ok(line) = encode_line(notification) else {
            return false;
        };
        if line.len() > max_line + 1 {
            return false;
        }
        if droppable {
            outbox.push_event(line)
        } else {
            outbox.push_response(Line::Owned(line))
        }
    }

    /// Resolves once the connection can take nothing more (at once without one).
    pub async fn closed(&self) {
        if let Some((outbox, _)) = &self.outbox {
            outbox.tx.closed().await;
        }
    }
}

/// What every connection of one server shares.
pub(super) struct Shared {
    pub handler: Arc<dyn Handler>,
    /// The handler's live workers (see [`Handler::actors`]).
    pub actors: Option<crate::runtime::ActorRegistry>,
    pub hello: HelloResult,
    pub config: ServerConfig,
}

/// Which connections a connection was admitted as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Lane {
    /// One of `max_connections`: every method.
    Regular,
    /// Over the limit, one of `reserved_connections`: only [`RESERVED_METHODS`], one request
    /// at a time, closed when idle for `reserved_idle`.
    Reserved,
}

enum Step {
    Line(std::io::Result<Option<Result<String, ControlError>>>),
    Finished(Result<(task::Id, ()), task::JoinError>),
    HelloTimeout,
    Idle,
    Probe,
    Stop,
    SlowPeer,
    WriterGone,
}

/// Lines for the writer, bounded in bytes rather than in count: a peer that stops reading
/// can hold at most `max_output_bytes` of this process's memory (or one line, if a single
/// line is larger), after which it is cut off.
#[derive(Clone)]
struct Outbox {
    tx: mpsc::UnboundedSender<Line>,
    /// Bytes queued and not yet handed to the socket.
    queued: Arc<AtomicUsize>,
    cap: usize,
    /// Raised once when a response did not fit: the connection is cut.
    overflow: Arc<Notify>,
}

impl Outbox {
    /// An outbox and the writer task that drains it into `write`.
    fn with_writer(write: OwnedWriteHalf, config: &ServerConfig) -> (Self, JoinHandle<()>) {
        let (tx, lines) = mpsc::unbounded_channel();
        let queued = Arc::new(AtomicUsize::new(0));
        let stall = config.write_stall_timeout;
        let writer = tokio::spawn(write_lines(write, lines, Arc::clone(&queued), stall));
        let outbox = Self {
            tx,
            queued,
            cap: config.max_output_bytes,
            overflow: Arc::new(Notify::new()),
        };
        (outbox, writer)
    }

    /// Queues a response line; `false` when the peer is not reading (the line is dropped and
    /// the connection is cut) or is gone.
    fn push_response(&self, line: Line) -> bool {
        if !self.reserve(line.len(), self.cap) {
            self.overflow.notify_one();
            return false;
        }
        self.send(line)
    }

    /// Queues an event line while the queue is under half its budget; `false` when the
    /// event was dropped (the subscriber is then told how many it missed).
    fn push_event(&self, line: Vec<u8>) -> bool {
        self.reserve(line.len(), self.cap / 2) && self.send(Line::Owned(line))
    }

    /// Counts `len` bytes in if they fit under `limit` (a line always fits an empty queue).
    fn reserve(&self, len: usize, limit: usize) -> bool {
        self.queued
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |queued| {
                (queued == 0 || queued + len <= limit).then_some(queued + len)
            })
            .is_ok()
    }

    fn send(&self, line: Line) -> bool {
        let len = line.len();
        if self.tx.send(line).is_err() {
            self.queued.fetch_sub(len, Ordering::AcqRel);
            return false;
        }
        true
    }
}

/// A connection's only writer: whole lines come in through `lines` (so a cancelled sender can
/// never leave half a line behind), whatever is queued is written together and flushed once.
/// Ends on a write error, when the peer accepted nothing for `stall` (it is not reading), or
/// when every sender is gone (then the write side is shut down).
async fn write_lines(
    writer: OwnedWriteHalf,
    mut lines: mpsc::UnboundedReceiver<Line>,
    queued: Arc<AtomicUsize>,
    stall: Duration,
) {
    let mut writer = LineWriter::new(writer);
    let written = |line: &Line| {
        queued.fetch_sub(line.len(), Ordering::AcqRel);
    };
    while let Some(line) = lines.recv().await {
        let mut batch = vec![line];
        while let Ok(more) = lines.try_recv() {
            batch.push(more);
        }
        for line in &batch {
            match tokio::time::timeout(stall, writer.queue_line(line)).await {
                Ok(Ok(())) => written(line),
                _ => return,
            }
        }
        if !matches!(
            tokio::time::timeout(stall, writer.flush()).await,
            Ok(Ok(()))
        ) {
            return;
        }
    }
    let _ = tokio::time::timeout(stall, writer.shutdown()).await;
}

/// Whether the peer closed its end entirely, not just its write side: poll(2) reports
/// `POLLHUP` for a Unix stream socket only then.
fn peer_gone(socket: &impl AsFd) -> bool {
    let mut fds = [PollFd::new(socket.as_fd(), PollFlags::empty())];
    matches!(poll(&mut fds, PollTimeout::ZERO), Ok(n) if n > 0)
        && fds[0]
            .revents()
            .is_some_and(|r| r.intersects(PollFlags::POLLHUP | PollFlags::POLLERR))
}

struct Connection {
    shared: Arc<Shared>,
    lane: Lane,
    /// Before `hello`: the peer's identity without a client name.
    pending: Session,
    /// Where the peer process stood when the connection was accepted (`None`: no pid).
    peer: Option<Lineage>,
    session: Option<Arc<Session>>,
    outbox: Outbox,
    requests: JoinSet<()>,
    /// The id of each running request task, to answer `internal` if its handler panics.
    request_ids: HashMap<task::Id, RequestId>,
    subscription: Option<JoinHandle<()>>,
    draining: bool,
}

#[allow(
    clippy::too_many_lines,
    reason = "the connection's one loop and its setup"
)]
pub(super) async fn run(
    stream: UnixStream,
    session: Session,
    shared: Arc<Shared>,
    admitted_on: Lane,
    mut stop_signal: watch::Receiver<bool>,
) {
    let (read, write) = stream.into_split();
    let mut reader = LineReader::new(read, shared.config.max_request_line);
    let (outbox, mut writer) = Outbox::with_writer(write, &shared.config);
    let overflow = Arc::clone(&outbox.overflow);
    let hello_deadline = Instant::now() + shared.config.hello_timeout;
    let (max_in_flight, idle_after) = match admitted_on {
        Lane::Regular => (shared.config.max_in_flight, None),
        Lane::Reserved => (1, Some(shared.config.reserved_idle)),
    };
    let session = with_notices(session, &outbox, &shared);
    let mut conn = Connection {
        peer: place_peer(&session, &shared),
        draining: *stop_signal.borrow(),
        lane: admitted_on,
        shared,
        pending: session,
        session: None,
        outbox,
        requests: JoinSet::new(),
        request_ids: HashMap::new(),
        subscription: None,
    };
    let mut reading = true;
    let mut writer_done = false;

    loop {
        if conn.requests.is_empty() && (!reading || conn.draining) {
            break;
        }
        let may_read = reading && conn.requests.len() < max_in_flight;
        let idle = idle_after.filter(|_| conn.requests.is_empty());
        let step = tokio::select! {
            line = reader.next_line(), if may_read => Step::Line(line),
            Some(done) = conn.requests.join_next_with_id(), if !conn.requests.is_empty() => {
                Step::Finished(done)
            }
            () = tokio::time::sleep_until(hello_deadline), if conn.session.is_none() => {
                Step::HelloTimeout
            }
            () = tokio::time::sleep(idle.unwrap_or_default()), if idle.is_some() => Step::Idle,
            () = tokio::time::sleep(PEER_PROBE), if !reading => Step::Probe,
            _ = stop_signal.changed(), if !conn.draining => Step::Stop,
            () = overflow.notified() => Step::SlowPeer,
            _ = &mut writer => Step::WriterGone,
        };
        match step {
            Step::Line(Ok(Some(line))) => {
                let id = if line.is_err() {
                    reader.take_refused_id()
                } else {
                    None
                };
                conn.dispatch(line, id);
            }
            // End of stream. A peer that is gone entirely (a killed client) wants no answers:
            // its requests are dropped at once, which frees this slot and cancels its waits.
            // One that closed only its write side still gets the answers of running requests.
            Step::Line(Ok(None)) => {
                if peer_gone(reader.get_ref().as_ref()) {
                    break;
                }
                reading = false;
            }
            Step::Probe => {
                if peer_gone(reader.get_ref().as_ref()) {
                    break;
                }
            }
            Step::Line(Err(_)) | Step::Idle => break,
            // It does not read: waiting for its output to flush would only hold the slot.
            Step::SlowPeer => {
                writer.abort();
                writer_done = true;
                break;
            }
            Step::Finished(done) => conn.finished(done),
            Step::HelloTimeout => {
                let timeout = conn.shared.config.hello_timeout;
                let error = ControlError::new(
                    super::protocol::codes::HELLO_REQUIRED,
                    format!("hello: none received within {timeout:?}; closing the connection"),
                );
                conn.send(Response::error(None, error));
                break;
            }
            Step::Stop => conn.start_draining(),
            Step::WriterGone => {
                writer_done = true;
                break;
            }
        }
    }

    if let Some(subscription) = conn.subscription.take() {
        subscription.abort();
    }
    // Only left when the peer is gone or the connection is cut: nobody is waiting for these.
    conn.requests.shutdown().await;
    drop(conn);
    if !writer_done
        && tokio::time::timeout(CLOSE_FLUSH, &mut writer)
            .await
            .is_err()
    {
        writer.abort();
    }
}

/// `session`, its requests' notices going to `outbox`.
fn with_notices(session: Session, outbox: &Outbox, shared: &Shared) -> Session {
    Session {
        notices: Notices {
            outbox: Some((outbox.clone(), shared.config.max_server_line)),
        },
        ..session
    }
}

/// Where the peer process stands. Read when the connection is accepted, not at `hello`: the
/// process that connected is still there (it just did), while by `hello` it may have exited
/// and handed the socket on, and its pid may even belong to another process
/// (`runtime::lineage`). `None` when the socket reported no pid.
fn place_peer(session: &Session, shared: &Shared) -> Option<Lineage> {
    let pid = u32::try_from(session.peer_pid?).ok()?;
    Some(
        shared
            .actors
            .as_ref()
            .map_or(Lineage::Outside, |actors| actors.place(pid)),
    )
}

impl Connection {
    /// `refused_id`: the id read from the start of a line refused before parsing.
    fn dispatch(&mut self, line: Result<String, ControlError>, refused_id: Option<RequestId>) {
        let line = match line
            .map_err(|e| (refused_id, e))
            .and_then(|l| RequestLine::parse(&l))
        {
            Ok(line) => line,
            Err((id, error)) => return self.send(Response::error(id, error)),
        };
        let id = line.id;
        if self.draining {
            return self.send(Response::error(Some(id), ControlError::shutting_down()));
        }
        if line.method == method::Hello::NAME {
            // A protocol 1 client says `{"protocol": 1}`: tell it what this server speaks.
            let response = match line
                .params
                .get("protocol")
                .and_then(serde_json::Value::as_u64)
            {
                Some(old) => Response::error(
                    Some(id),
                    ControlError::unsupported_protocol(&[u32::try_from(old).unwrap_or(u32::MAX)]),
                ),
                None => match decode(line.params).and_then(|p| self.hello(p)) {
                    Ok(result) => encoded(id, &result),
                    Err(error) => Response::error(Some(id), error),
                },
            };
            return self.send(response);
        }
        let Some(session) = self.session.clone() else {
            let error = ControlError::hello_required(&line.method);
            return self.send(Response::error(Some(id), error));
        };
        // The generation may have ended since `hello`; then nothing more runs as it.
        if let Err(error) = caller::verify(self.shared.actors.as_ref(), &session.caller) {
            return self.send(Response::error(Some(id), error));
        }
        if self.lane == Lane::Reserved && !RESERVED_METHODS.contains(&line.method.as_str()) {
            let error = ControlError::reserved_lane(
                self.shared.config.max_connections,
                &line.method,
                &RESERVED_METHODS,
            );
            return self.send(Response::error(Some(id), error));
        }
        if line.method == method::Subscribe::NAME {
            // The fleet's event stream is root observation ("no child registry enumeration").
            if let Caller::Child { target, .. } = &session.caller {
                let refusal = crate::core::Refusal::RootOnly {
                    action: method::Subscribe::NAME,
                    actor: *target,
                };
                return self.send(Response::error(Some(id), refusal.into()));
            }
            return match decode::<NoParams>(line.params) {
                Ok(NoParams {}) => self.subscribe(id),
                Err(error) => self.send(Response::error(Some(id), error)),
            };
        }
        let handler = Arc::clone(&self.shared.handler);
        let outbox = self.outbox.clone();
        let max_line = self.shared.config.max_server_line;
        let task_id = id.clone();
        let task = self.requests.spawn(async move {
            let response = match handler.handle(&line.method, line.params, &session).await {
                Ok(value) => Response::result(id, value),
                Err(error) => Response::error(Some(id), error),
            };
            send_response(&outbox, response, max_line);
        });
        self.request_ids.insert(task.id(), task_id);
    }

    /// Negotiates the version: the newest one both sides speak, or `unsupported-protocol`
    /// with this server's list.
    fn hello(&mut self, params: HelloParams) -> Result<HelloResult, ControlError> {
        if self.session.is_some() {
            return Err(ControlError::invalid_request(
                "hello: already completed on this connection",
            ));
        }
        let Some(protocol) = SUPPORTED_PROTOCOLS
            .iter()
            .rev()
            .find(|v| params.protocols.contains(v))
        else {
            return Err(ControlError::unsupported_protocol(&params.protocols));
        };
        let embedded = crate::worker::pi::extension::content_hash();
        if let Some(presented) = params
            .client
            .as_ref()
            .and_then(|c| c.extension.as_deref())
            .filter(|presented| *presented != embedded)
        {
            return Err(if params.capability.is_some() {
                ControlError::worker_extension_mismatch(presented, embedded)
            } else {
                ControlError::extension_mismatch(presented, embedded)
            });
        }
        let caller = caller::identify(
            self.shared.actors.as_ref(),
            self.peer.as_ref(),
            params.capability,
        )?;
        let hello = HelloResult {
            protocol: *protocol,
            actor: caller.view(),
            ..self.shared.hello.clone()
        };
        let mut session = self.pending.clone();
        session.client = params
            .client
            .map(|c| c.name.chars().take(MAX_CLIENT_NAME).collect());
        session.caller = caller;
        self.session = Some(Arc::new(session));
        Ok(hello)
    }

    /// Starts forwarding the handler's events to this connection (once; a second
    /// `subscribe` is answered the same and changes nothing). The result is queued before
    /// the first event.
    fn subscribe(&mut self, id: RequestId) {
        let events = self
            .subscription
            .is_none()
            .then(|| self.shared.handler.subscribe());
        self.send(encoded(id, &SubscribeResult { subscribed: true }));
        if let Some(events) = events {
            let outbox = self.outbox.clone();
            let max_line = self.shared.config.max_server_line;
            self.subscription = Some(tokio::spawn(forward_events(events, outbox, max_line)));
        }
    }

    fn finished(&mut self, done: Result<(task::Id, ()), task::JoinError>) {
        match done {
            Ok((task, ())) => {
                self.request_ids.remove(&task);
            }
            Err(error) => {
                let Some(id) = self.request_ids.remove(&error.id()) else {
                    return;
                };
                if error.is_panic() {
                    let error = ControlError::internal("the handler of this request panicked");
                    self.send(Response::error(Some(id), error));
                }
            }
        }
    }

    /// Stop serving new requests and events; requests already running finish.
    fn start_draining(&mut self) {
        self.draining = true;
        if let Some(subscription) = self.subscription.take() {
            subscription.abort();
        }
    }

    fn send(&self, response: Response) {
        send_response(&self.outbox, response, self.shared.config.max_server_line);
    }
}

/// Queues a response for the writer; one too large for a line becomes an error of its own.
fn send_response(outbox: &Outbox, response: Response, max_line: usize) {
    let line = match response.encode_line() {
        Ok(line) if line.len() <= max_line + 1 => line,
        Ok(line) => {
            let error = ControlError::response_too_large(line.len() - 1, max_line);
            match encode_line(&Response::error(response.id, error)) {
                Ok(line) => Line::Owned(line),
                Err(_) => return,
            }
        }
        Err(e) => {
            let error = ControlError::internal(&format!("cannot encode the response: {e}"));
            match encode_line(&Response::error(response.id, error)) {
                Ok(line) => Line::Owned(line),
                Err(_) => return,
            }
        }
    };
    // Not queued: the peer is gone or does not read (and is being cut off).
    let _ = outbox.push_response(line);
}

/// A typed result as a response (its JSON written once, without a tree).
fn encoded<T: serde::Serialize>(id: RequestId, result: &T) -> Response {
    match crate::json::to_raw_value(result) {
        Ok(raw) => Response::result(id, super::protocol::Payload::Raw(raw)),
        Err(e) => Response::error(Some(id), ControlError::internal(&e.to_string())),
    }
}

/// Sends each broadcast event as an `event` notification; a gap (the broadcast lagged, an
/// event was too large for a line, or the peer reads too slowly to take it) becomes one
/// `lagged` notification with the number of events this connection missed, sent before the
/// next event that fits.
async fn forward_events(mut events: broadcast::Receiver<Event>, outbox: Outbox, max_line: usize) {
    let mut missed = 0_u64;
    loop {
        let event = match events.recv().await {
            Ok(event) => event,
            Err(broadcast::error::RecvError::Lagged(n)) => {
                missed += n;
                continue;
            }
            Err(broadcast::error::RecvError::Closed) => break,
        };
        if outbox.tx.is_closed() {
            break;
        }
        if missed > 0 {
            let told = encode_line(&Notification::Lagged(Lagged { missed }))
                .is_ok_and(|line| outbox.push_event(line));
            if !told {
                missed += 1;
                continue;
            }
            missed = 0;
        }
        let sent = encode_line(&Notification::Event(event))
            .is_ok_and(|line| line.len() <= max_line + 1 && outbox.push_event(line));
        if !sent {
            missed += 1;
        }
    }
}
