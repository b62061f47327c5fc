//! The control socket's transport: a real server on a temp socket with a dummy handler.
//! Handshake, framing, every transport error, limits, subscriptions, drain, file modes and
//! discovery. Waits are for conditions (a line, end of stream, a file gone), never sleeps.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use proptest::prelude::*;
use serde_json::{Value, json};
use slate::control::codec::LineReader;
use slate::control::discovery;
use slate::control::methods::{Event, Notification};
use slate::control::protocol::{MAX_REQUEST_LINE, Payload, codes};
use slate::control::{
    BoxFuture, Client, ClientError, ControlError, DiscoveryError, Endpoint, Handler, Metadata,
    RuntimeDir, Selector, Server, ServerConfig, ServerError, Session,
};
use slate::core::Refusal;
use slate::policy::{Problem, Problems};
use tempfile::TempDir;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWriteExt, BufReader, ReadBuf};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::{broadcast, oneshot};
use tokio::task::JoinHandle;
use uuid::Uuid;

/// Upper bound for any single wait; only reached when something is broken.
const PATIENCE: Duration = Duration::from_secs(10);

// --- the dummy service ------------------------------------------------------------------

struct TestHandler {
    events: broadcast::Sender<Event>,
}

impl Handler for TestHandler {
    fn handle<'a>(
        &'a self,
        method: &'a str,
        params: Value,
        session: &'a Session,
    ) -> BoxFuture<'a, Result<Payload, ControlError>> {
        Box::pin(async move {
            let answer: Result<Value, ControlError> = match method {
                "echo" => Ok(params),
                "slow" => {
                    let ms = params["ms"].as_u64().unwrap_or(100);
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    Ok(json!({ "slept": ms }))
                }
                "fail" => Err(Refusal::BlankText.into()),
                "problems" => Err(Problems(vec![
                    Problem::new("$.tasks[0].limits.requests", "must be positive").value(0),
                ])
                .into()),
                "session" => Ok(json!({ "id": session.id, "client": session.client })),
                "big" => Ok(json!("x".repeat(
                    usize::try_from(params["bytes"].as_u64().unwrap_or(0)).unwrap()
                ))),
                "panic" => panic!("the test handler panics on purpose"),
                _ => Err(ControlError::unknown_method(method)),
            };
            answer.map(Payload::from)
        })
    }

    fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }
}

struct Harness {
    /// Keeps the temp directory alive as long as the server.
    temp: Option<TempDir>,
    socket: PathBuf,
    events: broadcast::Sender<Event>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

struct Options {
    config: ServerConfig,
    event_capacity: usize,
    cwd: Option<PathBuf>,
    started_at: u64,
    pid: u32,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            config: ServerConfig::default(),
            event_capacity: 64,
            cwd: None,
            started_at: 1_000,
            pid: std::process::id(),
        }
    }
}

fn metadata(parent_id: Uuid, cwd: &Path, started_at: u64, pid: u32) -> Metadata {
    Metadata {
        pid,
        cwd: cwd.to_owned(),
        parent_id,
        started_at,
        version: "0.1.0".into(),
        socket: PathBuf::new(),
        events: None,
    }
}

/// A server on `<dir>/<parent>.sock`.
fn start_in(dir: &Path, options: Options) -> Harness {
    let parent = Uuid::new_v4();
    let socket = dir.join(format!("{parent}.sock"));
    let cwd = options.cwd.clone().unwrap_or_else(|| dir.to_owned());
    let server = Server::bind(
        &socket,
        metadata(parent, &cwd, options.started_at, options.pid),
        options.config,
    )
    .unwrap();
    run(server, socket, options.event_capacity)
}

fn run(server: Server, socket: PathBuf, event_capacity: usize) -> Harness {
    let (events, _) = broadcast::channel(event_capacity);
    let handler = Arc::new(TestHandler {
        events: events.clone(),
    });
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(server.run(handler, async {
        let _ = stopped.await;
    }));
    Harness {
        temp: None,
        socket,
        events,
        stop: Some(stop),
        task,
    }
}

fn start(options: Options) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let mut harness = start_in(&dir.path().join("run"), options);
    harness.temp = Some(dir);
    harness
}

impl Harness {
    fn endpoint(&self) -> Endpoint {
        Endpoint {
            socket: self.socket.clone(),
            metadata: None,
        }
    }

    async fn client(&self) -> Client {
        Client::connect(&self.endpoint()).await.unwrap()
    }

    async fn raw(&self) -> Raw {
        Raw::connect(&self.socket).await
    }

    /// Signals shutdown; the returned handle ends when the drain is complete.
    fn begin_stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }

    async fn stop(mut self) {
        self.begin_stop();
        tokio::time::timeout(PATIENCE, &mut self.task)
            .await
            .unwrap()
            .unwrap();
    }
}

/// A connection that speaks bytes, to send what a real client never would.
struct Raw {
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
}

impl Raw {
    async fn connect(path: &Path) -> Self {
        let (read, writer) = UnixStream::connect(path).await.unwrap().into_split();
        Self {
            reader: BufReader::new(read),
            writer,
        }
    }

    async fn send_bytes(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).await.unwrap();
    }

    async fn send(&mut self, value: &Value) {
        let mut line = serde_json::to_vec(value).unwrap();
        line.push(b'\n');
        self.send_bytes(&line).await;
    }

    /// The next line as JSON; `None` at end of stream.
    async fn recv(&mut self) -> Option<Value> {
        let mut line = String::new();
        let n = tokio::time::timeout(PATIENCE, self.reader.read_line(&mut line))
            .await
            .expect("a line or end of stream in time")
            .unwrap_or(0);
        (n > 0).then(|| serde_json::from_str(&line).unwrap())
    }

    async fn hello(&mut self) {
        self.send(
            &json!({"id": 0, "method": "hello", "params": {"protocols": [2], "client": "raw"}}),
        )
        .await;
        let reply = self.recv().await.unwrap();
        assert_eq!(reply["result"]["protocol"], 2, "{reply}");
    }

    async fn call(&mut self, id: Value, method: &str, params: Value) -> Value {
        self.send(&json!({"id": id, "method": method, "params": params}))
            .await;
        self.recv().await.unwrap()
    }
}

fn error_code(reply: &Value) -> &str {
    reply["error"]["code"].as_str().unwrap_or("<no error>")
}

/// Polls `condition` until it holds (bounded by [`PATIENCE`]).
async fn wait_until(mut condition: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "condition not reached"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

// --- handshake and envelopes ------------------------------------------------------------

#[tokio::test]
async fn hello_reports_the_server_and_the_session_keeps_the_client_name() {
    let harness = start(Options::default());
    let client = harness.client().await;
    let server = client.server().unwrap();
    assert_eq!(server.protocol, 2);
    assert_eq!(server.server, "slate 0.1.0");
    assert_eq!(server.pid, std::process::id());
    assert!(!server.parent_id.is_nil());
    let session = client.call("session", json!({})).await.unwrap();
    assert_eq!(
        session["client"],
        format!("slate {}", env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(session["id"], 1);
    harness.stop().await;
}

#[tokio::test]
async fn ids_are_echoed_verbatim_strings_and_integers() {
    let harness = start(Options::default());
    let mut raw = harness.raw().await;
    let reply = raw
        .call(json!("h-1"), "hello", json!({"protocols": [2]}))
        .await;
    assert_eq!(reply["id"], "h-1");
    for id in [json!(42), json!(-7), json!(u64::MAX), json!("x y")] {
        let reply = raw.call(id.clone(), "echo", json!({"v": 1})).await;
        assert_eq!(reply["id"], id);
        assert_eq!(reply["result"], json!({"v": 1}));
    }
    // Absent and null params both read as {}.
    raw.send(&json!({"id": 5, "method": "echo"})).await;
    assert_eq!(raw.recv().await.unwrap()["result"], json!({}));
    raw.send(&json!({"id": 6, "method": "echo", "params": null}))
        .await;
    assert_eq!(raw.recv().await.unwrap()["result"], json!({}));
    harness.stop().await;
}

#[tokio::test]
async fn concurrent_requests_on_one_connection_are_answered_out_of_order() {
    let harness = start(Options::default());
    let mut raw = harness.raw().await;
    raw.hello().await;
    raw.send(&json!({"id": 1, "method": "slow", "params": {"ms": 1000}}))
        .await;
    raw.send(&json!({"id": 2, "method": "echo", "params": {"fast": true}}))
        .await;
    let first = raw.recv().await.unwrap();
    let second = raw.recv().await.unwrap();
    assert_eq!(
        first["id"], 2,
        "the fast request must not wait behind the slow one"
    );
    assert_eq!(second["id"], 1);
    assert_eq!(second["result"], json!({"slept": 1000}));

    // The same through the client: calls share one connection.
    let client = Arc::new(harness.client().await);
    let slow = tokio::spawn({
        let client = Arc::clone(&client);
        async move { client.call("slow", json!({"ms": 1000})).await }
    });
    let fast = client.call("echo", json!({"n": 1})).await.unwrap();
    assert_eq!(fast, json!({"n": 1}));
    assert!(!slow.is_finished());
    assert_eq!(slow.await.unwrap().unwrap(), json!({"slept": 1000}));
    harness.stop().await;
}

#[tokio::test]
async fn requests_before_hello_are_refused_with_hello_required() {
    let harness = start(Options::default());
    let mut raw = harness.raw().await;
    let reply = raw.call(json!(1), "echo", json!({})).await;
    assert_eq!(error_code(&reply), codes::HELLO_REQUIRED);
    assert_eq!(reply["id"], 1);
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("\"echo\"")
    );
    let reply = raw.call(json!(2), "subscribe", json!({})).await;
    assert_eq!(error_code(&reply), codes::HELLO_REQUIRED);
    raw.hello().await;
    let reply = raw.call(json!(3), "echo", json!({"ok": 1})).await;
    assert_eq!(reply["result"], json!({"ok": 1}));
    harness.stop().await;
}

#[tokio::test]
async fn an_unsupported_protocol_is_refused_and_the_connection_may_retry() {
    let harness = start(Options::default());
    let mut raw = harness.raw().await;
    // None of the offered versions: refused with the supported list.
    let reply = raw
        .call(json!(1), "hello", json!({"protocols": [1, 3]}))
        .await;
    assert_eq!(error_code(&reply), codes::UNSUPPORTED_PROTOCOL);
    assert_eq!(reply["error"]["data"]["supported"], json!([2]));
    // A protocol 1 client (`protocol: 1`) is told the same.
    let reply = raw.call(json!(2), "hello", json!({"protocol": 1})).await;
    assert_eq!(error_code(&reply), codes::UNSUPPORTED_PROTOCOL, "{reply}");
    assert_eq!(reply["error"]["data"]["supported"], json!([2]));
    let reply = raw.call(json!(3), "hello", json!({"client": "x"})).await;
    assert_eq!(error_code(&reply), codes::INVALID_REQUEST, "{reply}");
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("protocols"),
        "{reply}"
    );
    // Wrong types and unknown members of hello name the field.
    let reply = raw
        .call(json!(4), "hello", json!({"protocols": [2], "client": 7}))
        .await;
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("params.client: invalid type: integer"),
        "{reply}"
    );
    // The server picks the newest version both speak.
    let reply = raw
        .call(json!(5), "hello", json!({"protocols": [1, 2, 9]}))
        .await;
    assert_eq!(reply["result"]["protocol"], 2, "{reply}");
    let reply = raw.call(json!(6), "hello", json!({"protocols": [2]})).await;
    assert_eq!(error_code(&reply), codes::INVALID_REQUEST, "hello twice");
    harness.stop().await;
}

#[tokio::test]
async fn unknown_methods_and_invalid_envelopes_are_refused_by_rule() {
    let harness = start(Options::default());
    let mut raw = harness.raw().await;
    raw.hello().await;
    let reply = raw.call(json!(1), "nope", json!({})).await;
    assert_eq!(error_code(&reply), codes::UNKNOWN_METHOD);
    assert_eq!(reply["id"], 1);

    let cases = [
        (json!([1, 2]), Value::Null, "a JSON object"),
        (json!({"method": "echo"}), Value::Null, "id: required"),
        (
            json!({"id": 1.5, "method": "echo"}),
            Value::Null,
            "id: must be",
        ),
        (
            json!({"id": null, "method": "echo"}),
            Value::Null,
            "id: must be",
        ),
        (json!({"id": 7}), json!(7), "method: required"),
        (
            json!({"id": 8, "method": 3}),
            json!(8),
            "method: must be a string",
        ),
        (
            json!({"id": 9, "method": "echo", "params": [1]}),
            json!(9),
            "params: must be an object",
        ),
    ];
    for (request, id, message) in cases {
        raw.send(&request).await;
        let reply = raw.recv().await.unwrap();
        assert_eq!(error_code(&reply), codes::INVALID_REQUEST, "{request}");
        assert_eq!(reply["id"], id, "{request}");
        let text = reply["error"]["message"].as_str().unwrap();
        assert!(text.contains(message), "{request}: {text}");
    }
    harness.stop().await;
}

#[tokio::test]
async fn malformed_json_and_invalid_utf8_are_parse_errors_and_the_connection_survives() {
    let harness = start(Options::default());
    let mut raw = harness.raw().await;
    raw.hello().await;
    raw.send_bytes(b"{\"id\": 1, \"method\": \n").await;
    let reply = raw.recv().await.unwrap();
    assert_eq!(error_code(&reply), codes::PARSE_ERROR);
    assert_eq!(reply["id"], Value::Null);

    raw.send_bytes(b"{\"id\": 2, \"method\": \"echo\", \"params\": {\"s\": \"\xff\xfe\"}}\n")
        .await;
    let reply = raw.recv().await.unwrap();
    assert_eq!(error_code(&reply), codes::PARSE_ERROR);
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("UTF-8")
    );

    // Blank lines are skipped; CRLF is accepted.
    raw.send_bytes(b"\n   \r\n{\"id\": 3, \"method\": \"echo\", \"params\": {\"ok\": true}}\r\n")
        .await;
    let reply = raw.recv().await.unwrap();
    assert_eq!(reply["id"], 3);
    assert_eq!(reply["result"], json!({"ok": true}));
    harness.stop().await;
}

/// `{"id":1,"method":"echo","params":{"s":"xxx…"}}` of exactly `len` bytes.
fn echo_line_of(len: usize) -> Vec<u8> {
    let frame = br#"{"id":1,"method":"echo","params":{"s":""}}"#;
    let mut line = Vec::with_capacity(len + 1);
    line.extend_from_slice(&frame[..frame.len() - 3]);
    line.resize(len - 3, b'x');
    line.extend_from_slice(b"\"}}");
    assert_eq!(line.len(), len);
    line.push(b'\n');
    line
}

#[tokio::test]
async fn an_oversize_line_is_refused_and_skipped_while_the_connection_keeps_working() {
    let harness = start(Options::default());
    let mut raw = harness.raw().await;
    raw.hello().await;

    // 2 MiB without a newline until the end: refused as soon as it passes the cap.
    let mut huge = vec![b'x'; 2 * 1024 * 1024];
    huge.push(b'\n');
    raw.send_bytes(&huge).await;
    let reply = raw.recv().await.unwrap();
    assert_eq!(error_code(&reply), codes::LINE_TOO_LONG);
    assert_eq!(reply["error"]["data"]["max"], MAX_REQUEST_LINE);
    let reply = raw.call(json!(2), "echo", json!({"after": true})).await;
    assert_eq!(
        reply["result"],
        json!({"after": true}),
        "the tail was skipped"
    );

    // The cap is exact: MAX bytes pass, MAX + 1 do not.
    raw.send_bytes(&echo_line_of(MAX_REQUEST_LINE)).await;
    let reply = raw.recv().await.unwrap();
    assert_eq!(
        reply["result"]["s"].as_str().unwrap().len(),
        MAX_REQUEST_LINE - 42
    );
    raw.send_bytes(&echo_line_of(MAX_REQUEST_LINE + 1)).await;
    let reply = raw.recv().await.unwrap();
    assert_eq!(error_code(&reply), codes::LINE_TOO_LONG);
    let reply = raw.call(json!(3), "echo", json!({})).await;
    assert_eq!(reply["id"], 3);
    harness.stop().await;
}

#[tokio::test]
async fn refusals_and_policy_problems_keep_their_codes_and_wording() {
    let harness = start(Options::default());
    let client = harness.client().await;
    let error = client.call("fail", json!({})).await.unwrap_err();
    let remote = error.remote().unwrap();
    assert_eq!(remote.code, "blank-text");
    assert_eq!(remote.message, Refusal::BlankText.to_string());
    assert_eq!(remote.data, None);

    let error = client.call("problems", json!({})).await.unwrap_err();
    let remote = error.remote().unwrap();
    assert_eq!(remote.code, codes::INVALID_REQUEST);
    assert!(remote.message.contains("$.tasks[0].limits.requests"));
    assert_eq!(
        remote.data,
        Some(
            json!([{"path": "$.tasks[0].limits.requests", "value": "0", "rule": "must be positive"}])
        )
    );
    harness.stop().await;
}

#[tokio::test]
async fn a_panicking_handler_is_an_internal_error_and_the_connection_survives() {
    let harness = start(Options::default());
    let client = harness.client().await;
    let error = client.call("panic", json!({})).await.unwrap_err();
    assert_eq!(error.remote().unwrap().code, codes::INTERNAL);
    assert_eq!(
        client.call("echo", json!({"a": 1})).await.unwrap(),
        json!({"a": 1})
    );
    harness.stop().await;
}

#[tokio::test]
async fn a_response_longer_than_the_server_line_cap_becomes_an_error() {
    let harness = start(Options {
        config: ServerConfig {
            max_server_line: 1024,
            ..ServerConfig::default()
        },
        ..Options::default()
    });
    let client = harness.client().await;
    let ok = client.call("big", json!({"bytes": 100})).await.unwrap();
    assert_eq!(ok.as_str().unwrap().len(), 100);
    let error = client
        .call("big", json!({"bytes": 5000}))
        .await
        .unwrap_err();
    assert_eq!(error.remote().unwrap().code, codes::RESPONSE_TOO_LARGE);
    harness.stop().await;
}

// --- limits -----------------------------------------------------------------------------

#[tokio::test]
async fn a_peer_that_never_says_hello_is_closed_after_the_timeout() {
    let harness = start(Options {
        config: ServerConfig {
            hello_timeout: Duration::from_millis(200),
            ..ServerConfig::default()
        },
        ..Options::default()
    });
    let started = tokio::time::Instant::now();
    let mut silent = harness.raw().await;
    let reply = silent.recv().await.unwrap();
    assert_eq!(error_code(&reply), codes::HELLO_REQUIRED);
    assert_eq!(silent.recv().await, None, "closed after the notice");
    assert!(started.elapsed() >= Duration::from_millis(200));

    // Talking without ever saying hello does not extend the deadline.
    let mut chatty = harness.raw().await;
    chatty.send(&json!({"id": 1, "method": "echo"})).await;
    assert_eq!(
        error_code(&chatty.recv().await.unwrap()),
        codes::HELLO_REQUIRED
    );
    assert_eq!(
        error_code(&chatty.recv().await.unwrap()),
        codes::HELLO_REQUIRED
    );
    assert_eq!(chatty.recv().await, None);

    // After hello, idling is fine.
    let client = harness.client().await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(client.call("echo", json!({})).await.unwrap(), json!({}));
    harness.stop().await;
}

#[tokio::test]
async fn the_connection_over_the_limit_gets_busy_and_is_closed() {
    // Without a reserved lane (its own tests are in control_abuse.rs).
    let harness = start(Options {
        config: ServerConfig {
            max_connections: 4,
            reserved_connections: 0,
            ..ServerConfig::default()
        },
        ..Options::default()
    });
    let mut clients = Vec::new();
    for _ in 0..4 {
        clients.push(harness.client().await);
    }
    let mut fifth = harness.raw().await;
    let reply = fifth.recv().await.unwrap();
    assert_eq!(error_code(&reply), codes::BUSY);
    assert_eq!(reply["id"], Value::Null);
    assert_eq!(reply["error"]["data"]["limit"], 4);
    assert_eq!(fifth.recv().await, None);

    let error = Client::connect(&harness.endpoint()).await.err().unwrap();
    assert_eq!(
        error.remote().map(|e| e.code.as_str()),
        Some(codes::BUSY),
        "{error}"
    );

    // The four still work; closing one frees its slot.
    for client in &clients {
        assert_eq!(client.call("echo", json!({})).await.unwrap(), json!({}));
    }
    drop(clients.pop());
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let replacement = loop {
        match Client::connect(&harness.endpoint()).await {
            Ok(client) => break client,
            Err(e) if e.remote().is_some_and(|r| r.code == codes::BUSY) => {
                assert!(tokio::time::Instant::now() < deadline, "slot never freed");
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            Err(e) => panic!("{e}"),
        }
    };
    assert_eq!(
        replacement.call("echo", json!({})).await.unwrap(),
        json!({})
    );
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_clients_times_one_hundred_requests_are_all_answered() {
    let harness = start(Options::default());
    let mut tasks = Vec::new();
    for c in 0..64_u64 {
        let client = harness.client().await;
        tasks.push(tokio::spawn(async move {
            for r in 0..100_u64 {
                let reply = client.call("echo", json!({"c": c, "r": r})).await.unwrap();
                assert_eq!(reply, json!({"c": c, "r": r}));
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    harness.stop().await;
}

// --- subscriptions ----------------------------------------------------------------------

#[tokio::test]
async fn subscribers_receive_events_in_order_and_others_do_not() {
    let harness = start(Options::default());
    let watcher = harness.client().await;
    let mut events = watcher.subscribe().await.unwrap();
    assert!(matches!(
        watcher.subscribe().await,
        Err(ClientError::AlreadySubscribed)
    ));
    let mut bystander = harness.raw().await;
    bystander.hello().await;

    for n in 0..3 {
        harness.events.send(Event::Lagged { missed: n }).unwrap();
    }
    for n in 0..3 {
        let note = tokio::time::timeout(PATIENCE, events.next())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(note, Notification::Event(Event::Lagged { missed: n }));
    }
    // Calls still work on a subscribed connection.
    assert_eq!(
        watcher.call("echo", json!({"x": 1})).await.unwrap(),
        json!({"x": 1})
    );
    // The unsubscribed connection's next line is its own answer, not an event.
    let reply = bystander.call(json!(1), "echo", json!({})).await;
    assert_eq!(reply["id"], 1);
    harness.stop().await;
}

#[tokio::test]
async fn a_subscriber_that_falls_behind_is_told_how_many_events_it_missed() {
    // Current-thread runtime: the events below are all sent before the server's forwarder
    // runs once, so a capacity of 8 must lag by exactly 92.
    let harness = start(Options {
        event_capacity: 8,
        ..Options::default()
    });
    let mut raw = harness.raw().await;
    raw.hello().await;
    let reply = raw.call(json!(1), "subscribe", json!({})).await;
    assert_eq!(reply["result"], json!({"subscribed": true}));
    for n in 0..100 {
        harness.events.send(Event::Lagged { missed: n }).unwrap();
    }
    let lagged = raw.recv().await.unwrap();
    assert_eq!(
        lagged,
        json!({"method": "lagged", "params": {"missed": 92}})
    );
    for n in 92..100 {
        assert_eq!(
            raw.recv().await.unwrap(),
            json!({"method": "event", "params": {"kind": "lagged", "missed": n}})
        );
    }
    harness.stop().await;
}

// --- files, modes and drain -------------------------------------------------------------

#[tokio::test]
async fn the_directory_is_created_0700_and_the_socket_and_metadata_are_0600() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("nested").join("run");
    let harness = start_in(&dir, Options::default());
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&harness.socket), 0o600);
    let meta_path = harness.socket.with_extension("json");
    assert_eq!(mode(&meta_path), 0o600);
    let meta = discovery::read_metadata(&meta_path).unwrap();
    assert_eq!(meta.socket, harness.socket);
    assert_eq!(meta.cwd, std::fs::canonicalize(&dir).unwrap());
    let raw: Value = serde_json::from_slice(&std::fs::read(&meta_path).unwrap()).unwrap();
    for key in ["pid", "cwd", "parentId", "startedAt", "version", "socket"] {
        assert!(raw.get(key).is_some(), "metadata lacks {key}: {raw}");
    }
    harness.stop().await;
}

#[tokio::test]
async fn an_existing_directory_open_to_others_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("shared");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let socket = dir.join("x.sock");
    let meta = metadata(Uuid::new_v4(), root.path(), 1, 1);
    let error = Server::bind(&socket, meta, ServerConfig::default())
        .err()
        .unwrap();
    assert!(
        matches!(
            error,
            ServerError::Discovery(DiscoveryError::InsecureDir { .. })
        ),
        "{error}"
    );
    assert!(error.to_string().contains("0755"), "{error}");
    assert!(!socket.exists());
}

#[tokio::test]
async fn graceful_shutdown_finishes_in_flight_requests_then_removes_socket_and_metadata() {
    let mut harness = start(Options::default());
    let socket = harness.socket.clone();
    let meta_path = socket.with_extension("json");
    let mut raw = harness.raw().await;
    raw.hello().await;
    raw.send(&json!({"id": "slow", "method": "slow", "params": {"ms": 1500}}))
        .await;
    let mut idle = harness.raw().await;
    idle.hello().await;

    harness.begin_stop();
    wait_until(|| !socket.exists() && !meta_path.exists()).await;
    assert!(
        UnixStream::connect(&socket).await.is_err(),
        "no longer accepting"
    );

    // New requests on a live connection are refused until the slow one is answered.
    let mut n = 0;
    loop {
        n += 1;
        let reply = raw.call(json!(n), "echo", json!({})).await;
        assert_eq!(reply["id"], n, "the slow request is still running");
        if error_code(&reply) == codes::SHUTTING_DOWN {
            break;
        }
    }
    let slow = raw.recv().await.unwrap();
    assert_eq!(slow["id"], "slow");
    assert_eq!(slow["result"], json!({"slept": 1500}));
    assert_eq!(raw.recv().await, None, "closed once drained");
    assert_eq!(idle.recv().await, None, "idle connections are closed");
    tokio::time::timeout(PATIENCE, harness.task)
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn a_half_closed_client_still_gets_its_answers() {
    let harness = start(Options::default());
    let mut raw = harness.raw().await;
    raw.hello().await;
    raw.send(&json!({"id": 1, "method": "slow", "params": {"ms": 100}}))
        .await;
    raw.writer.shutdown().await.unwrap();
    assert_eq!(raw.recv().await.unwrap()["id"], 1);
    assert_eq!(raw.recv().await, None);
    harness.stop().await;
}

#[tokio::test]
async fn binding_refuses_a_live_socket_and_replaces_only_a_stale_one() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("run");
    let live = start_in(&dir, Options::default());
    let meta = metadata(Uuid::new_v4(), &dir, 1, 1);
    let error = Server::bind(&live.socket, meta.clone(), ServerConfig::default())
        .err()
        .unwrap();
    assert!(matches!(error, ServerError::InUse { .. }), "{error}");

    // A socket nobody listens on any more.
    let stale = dir.join("stale.sock");
    drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
    assert!(stale.exists());
    let server = Server::bind(&stale, meta.clone(), ServerConfig::default()).unwrap();
    let harness = run(server, stale.clone(), 4);
    harness.client().await;

    // A regular file is never taken for a stale socket.
    let file = dir.join("file.sock");
    std::fs::write(&file, b"keep me").unwrap();
    let error = Server::bind(&file, meta, ServerConfig::default())
        .err()
        .unwrap();
    assert!(matches!(error, ServerError::NotASocket { .. }), "{error}");
    assert_eq!(std::fs::read(&file).unwrap(), b"keep me");
    harness.stop().await;
    live.stop().await;
}

/// Set for the child process of [`a_peer_of_another_user_is_closed_without_an_answer`].
const FOREIGN_PEER_ENV: &str = "SLATE_TEST_FOREIGN_PEER_SOCKET";

/// Does nothing unless started by the test below as another user: then it is that user's
/// client, and prints whatever the server sent before closing.
#[test]
fn foreign_peer_child() {
    use std::io::{Read as _, Write as _};
    let Some(socket) = std::env::var_os(FOREIGN_PEER_ENV) else {
        return;
    };
    let mut stream = std::os::unix::net::UnixStream::connect(socket).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    let _ = stream.write_all(b"{\"id\":1,\"method\":\"hello\",\"params\":{\"protocol\":1}}\n");
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    println!("ANSWER[{}]", String::from_utf8_lossy(&answer));
}

#[tokio::test]
async fn a_peer_of_another_user_is_closed_without_an_answer() {
    if discovery::current_uid() != 0 {
        eprintln!("SKIPPED: running a peer as another user needs root");
        return;
    }
    let harness = start(Options::default());
    // Open the directory and the socket to everyone, so that the peer check alone stops
    // the other user.
    let dir = harness.socket.parent().unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o711)).unwrap();
    std::fs::set_permissions(&harness.socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let output = tokio::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "foreign_peer_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(FOREIGN_PEER_ENV, &harness.socket)
        .uid(65_534)
        .gid(65_534)
        .output();
    let output = tokio::time::timeout(PATIENCE, output)
        .await
        .unwrap()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("ANSWER[]"),
        "the other user got an answer: {stdout}"
    );
    // Our own user is still served.
    let client = harness.client().await;
    assert_eq!(client.call("echo", json!({})).await.unwrap(), json!({}));
    harness.stop().await;
}

// --- discovery --------------------------------------------------------------------------

#[tokio::test]
async fn discovery_picks_the_newest_live_coordinator_for_the_canonical_cwd() {
    let runtime = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let other = tempfile::tempdir().unwrap();
    let dir = RuntimeDir::new(runtime.path().join("slate"));
    let at = |cwd: &Path, started_at| Options {
        cwd: Some(cwd.to_owned()),
        started_at,
        ..Options::default()
    };
    let older = start_in(dir.path(), at(project.path(), 1_000));
    let newer = start_in(dir.path(), at(project.path(), 2_000));
    let elsewhere = start_in(dir.path(), at(other.path(), 3_000));

    // A non-canonical spelling of the same directory finds the same coordinator.
    let spelled = project
        .path()
        .join(".")
        .join("..")
        .join(project.path().file_name().unwrap());
    let found = dir.find(&spelled).unwrap().unwrap();
    assert_eq!(found.socket, newer.socket);
    assert_eq!(found.metadata.as_ref().unwrap().started_at, 2_000);
    let client = Client::connect(&found).await.unwrap();
    assert_eq!(
        client.server().unwrap().parent_id,
        found.metadata.unwrap().parent_id
    );

    // --parent selects exactly one; SLATE_SOCKET names a socket directly.
    let older_id = discovery::read_metadata(&older.socket.with_extension("json"))
        .unwrap()
        .parent_id;
    let selector = Selector {
        parent: Some(older_id.to_string()),
        socket: Some(elsewhere.socket.clone()),
    };
    let endpoint = discovery::locate(&dir, &selector, project.path()).unwrap();
    assert_eq!(
        endpoint.socket, older.socket,
        "--parent wins over SLATE_SOCKET"
    );
    let selector = Selector {
        parent: None,
        socket: Some(elsewhere.socket.clone()),
    };
    let endpoint = discovery::locate(&dir, &selector, project.path()).unwrap();
    assert_eq!(endpoint.socket, elsewhere.socket);
    assert_eq!(endpoint.metadata.unwrap().started_at, 3_000);

    let prefix = &older_id.to_string()[..8];
    let selector = Selector {
        parent: Some(prefix.to_owned()),
        socket: None,
    };
    let error = discovery::locate(&dir, &selector, project.path()).unwrap_err();
    assert!(
        matches!(error, DiscoveryError::InvalidParent(_)),
        "ids are never prefix-matched"
    );

    newer.stop().await;
    let found = dir.find(project.path()).unwrap().unwrap();
    assert_eq!(
        found.socket, older.socket,
        "the next newest once the newest stopped"
    );
    older.stop().await;
    elsewhere.stop().await;
}

#[tokio::test]
async fn a_stale_pair_is_removed_only_after_a_failed_connect() {
    let runtime = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let dir = RuntimeDir::new(runtime.path().join("slate"));
    dir.ensure().unwrap();

    // A live coordinator whose recorded pid looks dead is still live.
    let live = start_in(
        dir.path(),
        Options {
            cwd: Some(project.path().to_owned()),
            started_at: 1_000,
            pid: 999_999_999,
            ..Options::default()
        },
    );

    // A newer, crashed coordinator: its socket refuses connections.
    let dead_id = Uuid::new_v4();
    let dead_socket = dir.socket_path(dead_id);
    drop(std::os::unix::net::UnixListener::bind(&dead_socket).unwrap());
    let dead_meta = dead_socket.with_extension("json");
    let mut meta = metadata(
        dead_id,
        &std::fs::canonicalize(project.path()).unwrap(),
        5_000,
        1,
    );
    meta.socket = dead_socket.clone();
    discovery::write_metadata(&dead_meta, &meta).unwrap();

    // Metadata whose socket is gone altogether.
    let orphan_id = Uuid::new_v4();
    let orphan_meta = dir.socket_path(orphan_id).with_extension("json");
    meta.parent_id = orphan_id;
    meta.started_at = 6_000;
    discovery::write_metadata(&orphan_meta, &meta).unwrap();

    assert_eq!(dir.list().unwrap().len(), 3);
    let found = dir.find(project.path()).unwrap().unwrap();
    assert_eq!(found.socket, live.socket);
    assert!(
        !dead_socket.exists() && !dead_meta.exists(),
        "refused connect: removed"
    );
    assert!(!orphan_meta.exists(), "missing socket: removed");
    assert!(live.socket.exists() && live.socket.with_extension("json").exists());

    // --parent on a stale id: removed, then reported unreachable.
    let stale_id = Uuid::new_v4();
    drop(std::os::unix::net::UnixListener::bind(dir.socket_path(stale_id)).unwrap());
    let selector = Selector {
        parent: Some(stale_id.to_string()),
        socket: None,
    };
    let error = discovery::locate(&dir, &selector, project.path()).unwrap_err();
    assert!(error.is_unreachable(), "{error}");
    assert!(!dir.socket_path(stale_id).exists());
    live.stop().await;
}

#[tokio::test]
async fn without_a_coordinator_discovery_says_how_to_start_one() {
    let runtime = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let missing = RuntimeDir::new(runtime.path().join("never-created"));
    let error = discovery::locate(&missing, &Selector::default(), project.path()).unwrap_err();
    assert!(error.is_unreachable());
    assert!(matches!(error, DiscoveryError::NoCoordinator { .. }));
    assert!(error.to_string().contains("slate serve"), "{error}");
    assert!(
        !missing.path().exists(),
        "looking never creates the directory"
    );

    let selector = Selector {
        parent: None,
        socket: Some(runtime.path().join("nothing.sock")),
    };
    let error = discovery::locate(&missing, &selector, project.path()).unwrap_err();
    assert!(error.is_unreachable());
    assert!(error.to_string().contains("slate serve"), "{error}");

    let error = Client::connect_path(&runtime.path().join("nothing.sock"), PATIENCE)
        .await
        .err()
        .unwrap();
    assert!(error.is_unreachable(), "{error}");
}

// --- the decoder never panics -----------------------------------------------------------

/// Hands out `data` in the given chunk sizes, one chunk per read.
struct Chunked {
    data: Vec<u8>,
    cuts: Vec<usize>,
    pos: usize,
    next_cut: usize,
}

impl AsyncRead for Chunked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let wanted = this
            .cuts
            .get(this.next_cut)
            .copied()
            .unwrap_or(usize::MAX)
            .max(1);
        this.next_cut += 1;
        let n = wanted.min(this.data.len() - this.pos).min(buf.remaining());
        buf.put_slice(&this.data[this.pos..this.pos + n]);
        this.pos += n;
        Poll::Ready(Ok(()))
    }
}

/// What the reader must produce: per newline-terminated segment (and a final unterminated
/// one), too long, skipped when blank, else the text or a UTF-8 error.
fn model(data: &[u8], max: usize) -> Vec<Result<String, String>> {
    let mut out = Vec::new();
    let mut segments: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
    if segments.last().is_some_and(|s| s.is_empty()) {
        segments.pop();
    }
    for segment in segments {
        if segment.len() > max {
            out.push(Err(codes::LINE_TOO_LONG.to_owned()));
        } else if segment.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
        } else {
            let body = segment.strip_suffix(b"\r").unwrap_or(segment);
            out.push(String::from_utf8(body.to_vec()).map_err(|_| codes::PARSE_ERROR.to_owned()));
        }
    }
    out
}

fn decode(data: Vec<u8>, cuts: Vec<usize>, max: usize) -> Vec<Result<String, String>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        let source = Chunked {
            data,
            cuts,
            pos: 0,
            next_cut: 0,
        };
        let mut reader = LineReader::new(source, max);
        let mut out = Vec::new();
        while let Some(line) = reader.next_line().await.unwrap() {
            out.push(line.map_err(|e| e.code));
        }
        out
    })
}

fn bytes_with_newlines() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop_oneof![
            4 => any::<u8>(),
            2 => Just(b'\n'),
            1 => Just(b'\r'),
            1 => Just(b' '),
            2 => Just(b'{'),
        ],
        0..400,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn the_decoder_matches_the_line_model_for_any_bytes_and_splits(
        data in bytes_with_newlines(),
        cuts in prop::collection::vec(1_usize..64, 0..40),
        max in 1_usize..48,
    ) {
        let expected = model(&data, max);
        prop_assert_eq!(decode(data, cuts, max), expected);
    }

    #[test]
    fn request_parsing_never_panics(line in ".{0,200}") {
        let _ = slate::control::protocol::RequestLine::parse(&line);
    }
}
