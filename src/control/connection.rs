//! One client connection: a reader loop that dispatches requests, one task per request (a
//! 60 s `wait` must not hold up a status query behind it), and one writer task that owns the
//! socket's write half so lines never interleave.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::UnixStream;
use tokio::sync::{broadcast, mpsc, watch};
use tokio::task::{self, JoinHandle, JoinSet};
use tokio::time::Instant;

use super::caller::{self, Caller};
use super::codec::{LineReader, encode_line, write_lines};
use super::methods::{
    Event, HelloParams, HelloResult, Lagged, Method as _, NoParams, Notification,
    SUPPORTED_PROTOCOLS, SubscribeResult, decode, method,
};
use super::protocol::{ControlError, RequestId, RequestLine, Response};
use super::server::{Handler, ServerConfig, Session};

/// Lines waiting for the writer; when full, request tasks and the event forwarder wait.
const OUTBOX: usize = 256;
/// How long closing waits for queued lines to reach a peer that may not be reading.
const CLOSE_FLUSH: Duration = Duration::from_secs(2);
/// Longest `hello.client` kept.
const MAX_CLIENT_NAME: usize = 200;

/// What every connection of one server shares.
pub(super) struct Shared {
    pub handler: Arc<dyn Handler>,
    /// The handler's live workers (see [`Handler::actors`]).
    pub actors: Option<crate::runtime::ActorRegistry>,
    pub hello: HelloResult,
    pub config: ServerConfig,
}

enum Step {
    Line(std::io::Result<Option<Result<String, ControlError>>>),
    Finished(Result<(task::Id, ()), task::JoinError>),
    HelloTimeout,
    Stop,
    WriterGone,
}

struct Connection {
    shared: Arc<Shared>,
    /// Before `hello`: the peer's identity without a client name.
    pending: Session,
    session: Option<Arc<Session>>,
    outbox: mpsc::Sender<Vec<u8>>,
    requests: JoinSet<()>,
    /// The id of each running request task, to answer `internal` if its handler panics.
    request_ids: HashMap<task::Id, RequestId>,
    subscription: Option<JoinHandle<()>>,
    draining: bool,
}

pub(super) async fn run(
    stream: UnixStream,
    session: Session,
    shared: Arc<Shared>,
    mut stop_signal: watch::Receiver<bool>,
) {
    let (read, write) = stream.into_split();
    let mut reader = LineReader::new(read, shared.config.max_request_line);
    let (outbox, lines) = mpsc::channel(OUTBOX);
    let mut writer = tokio::spawn(write_lines(write, lines));
    let hello_deadline = Instant::now() + shared.config.hello_timeout;
    let mut conn = Connection {
        draining: *stop_signal.borrow(),
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
        let may_read = reading && conn.requests.len() < conn.shared.config.max_in_flight;
        let step = tokio::select! {
            line = reader.next_line(), if may_read => Step::Line(line),
            Some(done) = conn.requests.join_next_with_id(), if !conn.requests.is_empty() => {
                Step::Finished(done)
            }
            () = tokio::time::sleep_until(hello_deadline), if conn.session.is_none() => {
                Step::HelloTimeout
            }
            _ = stop_signal.changed(), if !conn.draining => Step::Stop,
            _ = &mut writer => Step::WriterGone,
        };
        match step {
            Step::Line(Ok(Some(line))) => conn.dispatch(line).await,
            // End of stream: the peer may have closed only its write side, so requests still
            // running are answered before closing.
            Step::Line(Ok(None)) => reading = false,
            Step::Line(Err(_)) => break,
            Step::Finished(done) => conn.finished(done).await,
            Step::HelloTimeout => {
                let timeout = conn.shared.config.hello_timeout;
                let error = ControlError::new(
                    super::protocol::codes::HELLO_REQUIRED,
                    format!("hello: none received within {timeout:?}; closing the connection"),
                );
                conn.send(Response::error(None, error)).await;
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

impl Connection {
    async fn dispatch(&mut self, line: Result<String, ControlError>) {
        let line = match line
            .map_err(|e| (None, e))
            .and_then(|l| RequestLine::parse(&l))
        {
            Ok(line) => line,
            Err((id, error)) => return self.send(Response::error(id, error)).await,
        };
        let id = line.id;
        if self.draining {
            return self
                .send(Response::error(Some(id), ControlError::shutting_down()))
                .await;
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
            return self.send(response).await;
        }
        let Some(session) = self.session.clone() else {
            let error = ControlError::hello_required(&line.method);
            return self.send(Response::error(Some(id), error)).await;
        };
        // The generation may have ended since `hello`; then nothing more runs as it.
        if let Err(error) = caller::verify(self.shared.actors.as_ref(), &session.caller) {
            return self.send(Response::error(Some(id), error)).await;
        }
        if line.method == method::Subscribe::NAME {
            // The fleet's event stream is root observation ("no child registry enumeration").
            if let Caller::Child { target, .. } = &session.caller {
                let refusal = crate::core::Refusal::RootOnly {
                    action: method::Subscribe::NAME,
                    actor: *target,
                };
                return self.send(Response::error(Some(id), refusal.into())).await;
            }
            return match decode::<NoParams>(line.params) {
                Ok(NoParams {}) => self.subscribe(id).await,
                Err(error) => self.send(Response::error(Some(id), error)).await,
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
            send_response(&outbox, response, max_line).await;
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
        let caller = caller::identify(
            self.shared.actors.as_ref(),
            self.pending.peer_pid,
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
            .map(|c| c.chars().take(MAX_CLIENT_NAME).collect());
        session.caller = caller;
        self.session = Some(Arc::new(session));
        Ok(hello)
    }

    /// Starts forwarding the handler's events to this connection (once; a second
    /// `subscribe` is answered the same and changes nothing). The result is queued before
    /// the first event.
    async fn subscribe(&mut self, id: RequestId) {
        let events = self
            .subscription
            .is_none()
            .then(|| self.shared.handler.subscribe());
        self.send(encoded(id, &SubscribeResult { subscribed: true }))
            .await;
        if let Some(events) = events {
            let outbox = self.outbox.clone();
            let max_line = self.shared.config.max_server_line;
            self.subscription = Some(tokio::spawn(forward_events(events, outbox, max_line)));
        }
    }

    async fn finished(&mut self, done: Result<(task::Id, ()), task::JoinError>) {
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
                    self.send(Response::error(Some(id), error)).await;
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

    async fn send(&self, response: Response) {
        send_response(&self.outbox, response, self.shared.config.max_server_line).await;
    }
}

/// Queues a response for the writer; one too large for a line becomes an error of its own.
async fn send_response(outbox: &mpsc::Sender<Vec<u8>>, response: Response, max_line: usize) {
    let line = match encode_line(&response) {
        Ok(line) if line.len() <= max_line + 1 => line,
        Ok(line) => {
            let error = ControlError::response_too_large(line.len() - 1, max_line);
            match encode_line(&Response::error(response.id, error)) {
                Ok(line) => line,
                Err(_) => return,
            }
        }
        Err(e) => {
            let error = ControlError::internal(&format!("cannot encode the response: {e}"));
            match encode_line(&Response::error(response.id, error)) {
                Ok(line) => line,
                Err(_) => return,
            }
        }
    };
    // A closed outbox means the peer is gone; there is nobody to tell.
    let _ = outbox.send(line).await;
}

/// A typed result as a response (its JSON written once, without a tree).
fn encoded<T: serde::Serialize>(id: RequestId, result: &T) -> Response {
    match serde_json::value::to_raw_value(result) {
        Ok(raw) => Response::result(id, super::protocol::Payload::Raw(raw)),
        Err(e) => Response::error(Some(id), ControlError::internal(&e.to_string())),
    }
}

/// Sends each broadcast event as an `event` notification; a gap becomes one `lagged`
/// notification with the number of events this connection missed.
async fn forward_events(
    mut events: broadcast::Receiver<Event>,
    outbox: mpsc::Sender<Vec<u8>>,
    max_line: usize,
) {
    loop {
        let notification = match events.recv().await {
            Ok(event) => Notification::Event(event),
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                Notification::Lagged(Lagged { missed })
            }
            Err(broadcast::error::RecvError::Closed) => break,
        };
        let line = match encode_line(&notification) {
            Ok(line) if line.len() <= max_line + 1 => line,
            // An event too large for a line is dropped and reported as missed.
            _ => match encode_line(&Notification::Lagged(Lagged { missed: 1 })) {
                Ok(line) => line,
                Err(_) => continue,
            },
        };
        if outbox.send(line).await.is_err() {
            break;
        }
    }
}
