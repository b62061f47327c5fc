//! The real control service over a live runtime, under abuse: 64 clients × 100 `status`
//! queries while 16 simulated workers run, alongside oversize lines, malformed JSON, unknown
//! methods, requests before `hello`, a peer that never speaks and method-level refusals. Every
//! request is answered or refused cleanly and the coordinator is unaffected: the 32 delegated
//! tasks all settle and every permit is released.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

#[path = "support/service_fixture.rs"]
mod service_fixture;
use service_fixture::{loaded, models};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "support/protocol_schema.rs"]
mod protocol_schema;

use protocol_schema::ProtocolSchema;
use serde_json::{Value, json};
use slate::control::service::Service;
use slate::control::{Client, ClientError, ControlError, Handler, Metadata, Server, ServerConfig};
use slate::policy::capabilities::pi_offered_tools;
use slate::policy::scheduling::SchedulingPolicy;
use slate::runtime::{RuntimeConfig, RuntimeHandle, RuntimeReport, spawn};
use slate::sim::{Script, Step};
use slate::worker::sim::{ScriptBook, SimBackend};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::task::JoinHandle;
use uuid::Uuid;

const CONCURRENCY: usize = 16;
const TASKS: usize = 32;
const CLIENTS: usize = 64;
const QUERIES: usize = 100;
/// How long each simulated worker thinks: long enough that the query storm runs while the
/// first 16 (then the queued 16) hold every permit.
const THINK_MS: u64 = 4_000;
const HELLO_TIMEOUT: Duration = Duration::from_millis(400);
const ANSWER: Duration = Duration::from_secs(20);
const TERMINAL: [&str; 3] = ["settled", "failed", "cancelled"];

struct Fixture {
    base: PathBuf,
    socket: PathBuf,
    root_id: Uuid,
    rt: RuntimeHandle,
    join: JoinHandle<RuntimeReport>,
    server: JoinHandle<()>,
    stop: tokio::sync::oneshot::Sender<()>,
}

fn book() -> ScriptBook {
    ScriptBook {
        scripts: Vec::new(),
        default: Script {
            setup_error: None,
            steps: vec![
                Step::Think(THINK_MS),
                Step::Request {
                    ms: 10,
                    text: "surveyed".into(),
                    input_tokens: 100,
                    output_tokens: 20,
                    cost: Some(0.001),
                },
            ],
        },
        resumed: None,
    }
}

/// A runtime (concurrency 16, simulated workers), the real service and a server on
/// `<base>/run/<parent>.sock`, the directory created private by the server.
fn start() -> Fixture {
    let base = std::env::temp_dir().join(format!("slate-ctl-svc-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    for dir in ["work", "agent"] {
        std::fs::create_dir_all(base.join(dir)).unwrap();
    }
    let cwd = std::fs::canonicalize(base.join("work")).unwrap();
    let root_id = Uuid::new_v4();
    let config = RuntimeConfig {
        root_id,
        policy: SchedulingPolicy {
            concurrency: u32::try_from(CONCURRENCY).unwrap(),
            ..SchedulingPolicy::default()
        },
        id_seed: 17,
        delegation_dir: base
            .join("session")
            .join("delegation")
            .join(root_id.to_string()),
        event_log: true,
        kill_grace: Duration::from_millis(300),
    };
    let (rt, join) = spawn(config, Arc::new(SimBackend::new(book()))).unwrap();
    let loaded = loaded(&cwd, &base.join("agent"));
    let service: Arc<dyn Handler> = Arc::new(Service::new(
        rt.clone(),
        loaded,
        models(),
        pi_offered_tools(),
    ));
    let socket = base.join("run").join(format!("{root_id}.sock"));
    let metadata = Metadata {
        pid: std::process::id(),
        cwd,
        parent_id: root_id,
        started_at: slate::runtime::now_ms(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        socket: PathBuf::new(),
        events: None,
    };
    let config = ServerConfig {
        // The storm, the abusers and the driver all at once.
        max_connections: CLIENTS + 16,
        hello_timeout: HELLO_TIMEOUT,
        ..ServerConfig::default()
    };
    let server = Server::bind(&socket, metadata, config).unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(server.run(service, async move {
        let _ = stopped.await;
    }));
    Fixture {
        base,
        socket,
        root_id,
        rt,
        join,
        server,
        stop,
    }
}

async fn connect(socket: &Path) -> Client {
    Client::connect_path(socket, ANSWER).await.unwrap()
}

thread_local! {
    static SCHEMA: std::cell::RefCell<ProtocolSchema> =
        std::cell::RefCell::new(ProtocolSchema::load());
}

/// One call; every answer, result or error, must match the published schema.
async fn call(client: &Client, method: &str, params: Value) -> Result<Value, ClientError> {
    let answer = tokio::time::timeout(ANSWER, client.call(method, params))
        .await
        .unwrap_or_else(|_| panic!("{method}: no answer within {ANSWER:?}"));
    let checked = match &answer {
        Ok(result) => SCHEMA.with(|s| s.borrow_mut().result(method, result)),
        Err(ClientError::Remote(error)) => {
            SCHEMA.with(|s| s.borrow_mut().error(&serde_json::to_value(error).unwrap()))
        }
        Err(_) => Ok(()),
    };
    if let Err(problem) = checked {
        panic!("{method}: the answer does not match docs/protocol.schema.json: {problem}");
    }
    answer
}

/// The coordinator's error for a request it must refuse.
async fn refused(client: &Client, method: &str, params: Value) -> ControlError {
    match call(client, method, params).await {
        Err(ClientError::Remote(error)) => error,
        other => panic!("{method}: expected a refusal, got {other:?}"),
    }
}

fn children(status: &Value) -> &Vec<Value> {
    status["children"].as_array().unwrap()
}

fn count(status: &Value, wanted: &[&str]) -> usize {
    children(status)
        .iter()
        .filter(|c| wanted.contains(&c["status"].as_str().unwrap()))
        .count()
}

fn stat(status: &Value, name: &str) -> u64 {
    status["stats"][name]
        .as_u64()
        .unwrap_or_else(|| panic!("stats.{name} missing: {}", status["stats"]))
}

/// 32 background `delegate` calls in the native shape; the admitted identities.
async fn delegate_all(client: &Client) -> HashSet<String> {
    let mut ids = HashSet::new();
    for i in 0..TASKS {
        let params = json!({
            "request": {"assignment": format!("Survey module {i} of the fleet"), "profile": "scout"},
            "background": true,
        });
        let reply = call(client, "delegate", params).await.unwrap();
        assert_eq!(reply["kind"], "admitted", "{reply}");
        for child in reply["children"].as_array().unwrap() {
            ids.insert(child["id"].as_str().unwrap().to_owned());
        }
    }
    assert_eq!(ids.len(), TASKS, "every call admits one new identity");
    ids
}

/// Polls `status` until `done` holds; the last status.
async fn poll_until(client: &Client, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let status = call(client, "status", json!({})).await.unwrap();
        if done(&status) {
            return status;
        }
        assert!(Instant::now() < deadline, "{what}: not reached: {status}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// What one storm client saw.
#[derive(Default)]
struct Seen {
    latencies: Vec<Duration>,
    max_running: usize,
}

/// One client's 100 sequential `status` queries, each checked for consistency; on one
/// connection the terminal count never goes backwards.
async fn storm(client: Client, parent: String, known: Arc<HashSet<String>>) -> Seen {
    let mut seen = Seen::default();
    let mut terminal = 0;
    for _ in 0..QUERIES {
        let started = Instant::now();
        let status = call(&client, "status", json!({})).await.unwrap();
        seen.latencies.push(started.elapsed());
        assert_eq!(status["parentId"], parent.as_str());
        let list = children(&status);
        assert_eq!(list.len(), TASKS, "every admitted identity, and no other");
        for child in list {
            let id = child["id"].as_str().unwrap();
            assert!(known.contains(id), "unknown child {id}");
            assert_eq!(child["generation"], 1);
        }
        let running = count(&status, &["running"]);
        let active = count(&status, &["setup", "running", "pausing", "draining"]);
        assert!(active <= CONCURRENCY, "{active} active children");
        assert!(stat(&status, "activePermits") <= CONCURRENCY as u64);
        assert!(stat(&status, "queued") <= (TASKS - CONCURRENCY) as u64);
        let now_terminal = count(&status, &TERMINAL);
        assert!(now_terminal >= terminal, "terminal count went backwards");
        terminal = now_terminal;
        seen.max_running = seen.max_running.max(running);
    }
    seen
}

/// A connection that speaks raw bytes.
struct Raw {
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
}

impl Raw {
    async fn connect(socket: &Path) -> Self {
        let (read, writer) = UnixStream::connect(socket).await.unwrap().into_split();
        Self {
            reader: BufReader::new(read),
            writer,
        }
    }

    async fn send(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).await.unwrap();
        self.writer.flush().await.unwrap();
    }

    /// The next line as JSON; `None` once the server closed.
    async fn recv(&mut self) -> Option<Value> {
        let mut line = String::new();
        let read = tokio::time::timeout(ANSWER, self.reader.read_line(&mut line))
            .await
            .expect("the server answers")
            .unwrap();
        (read > 0).then(|| serde_json::from_str(&line).unwrap())
    }

    async fn request(&mut self, line: &str) -> Value {
        self.send(format!("{line}\n").as_bytes()).await;
        self.recv().await.expect("an answer, not a close")
    }

    async fn hello(&mut self) {
        let reply = self
            .request(r#"{"id":0,"method":"hello","params":{"protocols":[2]}}"#)
            .await;
        assert_eq!(reply["result"]["protocol"], 2, "{reply}");
    }

    /// A `status` on this connection still works.
    async fn still_answers(&mut self, id: u64, parent: &str) {
        let reply = self
            .request(&format!(r#"{{"id":{id},"method":"status"}}"#))
            .await;
        assert_eq!(reply["id"], id, "{reply}");
        assert_eq!(reply["result"]["parentId"], parent, "{reply}");
    }
}

fn error_code(reply: &Value) -> &str {
    reply["error"]["code"]
        .as_str()
        .unwrap_or_else(|| panic!("not an error: {reply}"))
}

/// Oversize line, malformed JSON and an unknown method on one connection, each refused with
/// its code and the connection still serving afterwards.
async fn abuse_framing(socket: &Path, parent: &str) {
    let mut raw = Raw::connect(socket).await;
    raw.hello().await;

    // 2 MiB in one otherwise valid request.
    let pad = "x".repeat(2 * 1024 * 1024);
    let reply = raw
        .request(&format!(
            r#"{{"id":1,"method":"status","params":{{"pad":"{pad}"}}}}"#
        ))
        .await;
    assert_eq!(error_code(&reply), "line-too-long", "{reply}");
    assert_eq!(
        reply["id"], 1,
        "the id leading the line is answered: {reply}"
    );
    assert_eq!(reply["error"]["data"]["max"], 1024 * 1024);
    raw.still_answers(2, parent).await;

    let reply = raw.request(r#"{"id":3,"method":"status","#).await;
    assert_eq!(error_code(&reply), "parse-error", "{reply}");
    assert_eq!(reply["id"], Value::Null);
    raw.send(b"\xff\xfe not utf-8\n").await;
    let reply = raw.recv().await.unwrap();
    assert_eq!(error_code(&reply), "parse-error", "{reply}");
    raw.still_answers(4, parent).await;

    let reply = raw.request(r#"{"id":"u","method":"frobnicate"}"#).await;
    assert_eq!(error_code(&reply), "unknown-method", "{reply}");
    assert_eq!(reply["id"], "u");
    let reply = raw
        .request(r#"{"id":5,"method":"status","params":[1]}"#)
        .await;
    assert_eq!(error_code(&reply), "invalid-request", "{reply}");
    assert_eq!(reply["id"], 5);
    raw.still_answers(6, parent).await;
}

/// A request before `hello` is refused; the handshake then still works.
async fn abuse_before_hello(socket: &Path, parent: &str) {
    let mut raw = Raw::connect(socket).await;
    let reply = raw.request(r#"{"id":1,"method":"status"}"#).await;
    assert_eq!(error_code(&reply), "hello-required", "{reply}");
    assert_eq!(reply["id"], 1);
    raw.hello().await;
    raw.still_answers(2, parent).await;
}

/// A peer that connects and never speaks is told why and closed after the hello timeout.
async fn abuse_silent(socket: &Path) -> Duration {
    let started = Instant::now();
    let mut raw = Raw::connect(socket).await;
    let reply = raw.recv().await.expect("a reason before the close");
    let waited = started.elapsed();
    assert_eq!(error_code(&reply), "hello-required", "{reply}");
    assert_eq!(reply["id"], Value::Null);
    assert!(raw.recv().await.is_none(), "closed after the reason");
    assert!(waited >= HELLO_TIMEOUT, "closed early: {waited:?}");
    assert!(
        waited < HELLO_TIMEOUT + Duration::from_secs(5),
        "closed late: {waited:?}"
    );
    waited
}

/// Method-level refusals through the service, each with its rule's code.
async fn abuse_methods(socket: &Path) {
    let client = connect(socket).await;
    let error = refused(&client, "stop", json!({"target": "not-a-child@x"})).await;
    assert_eq!(error.code, "invalid-request", "{error}");
    assert!(error.message.contains("params.target"), "{error}");
    let error = refused(&client, "stop", json!({})).await;
    assert_eq!(error.code, "invalid-request", "{error}");

    let stranger = format!("{}@1", Uuid::new_v4());
    let error = refused(&client, "steer", json!({"target": stranger, "text": "hi"})).await;
    assert_eq!(error.code, "unknown-identity", "{error}");

    let custom = json!({
        "request": {"assignment": "Audit the build", "profile": "auditor"},
        "background": true,
    });
    let error = refused(&client, "delegate", custom).await;
    assert_eq!(error.code, "invalid-request", "{error}");
    let paths: Vec<&str> = error
        .data
        .as_ref()
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["path"].as_str().unwrap())
        .collect();
    assert!(paths.contains(&"$.profile"), "{error}: {paths:?}");

    let error = refused(&client, "delegate", json!({})).await;
    assert_eq!(error.code, "invalid-request", "{error}");

    // Wrong types are refused naming the field, never silently ignored (protocol 1 ran this
    // delegate in the foreground and answered this status in full).
    let wrong = json!({
        "request": {"assignment": "Audit the build", "profile": "scout"},
        "background": "yes",
    });
    let error = refused(&client, "delegate", wrong).await;
    assert_eq!(error.code, "invalid-request", "{error}");
    assert!(
        error.message.starts_with("params.background: ")
            && error.message.ends_with("expected a boolean"),
        "{error}"
    );
    let error = refused(&client, "status", json!({"summary": "yes"})).await;
    assert!(error.message.starts_with("params.summary: "), "{error}");
    let error = refused(&client, "status", json!({"verbose": true})).await;
    assert!(error.message.contains("unknown field `verbose`"), "{error}");
}

/// The storm: 64 connected clients, then 6,400 queries at once; the wall time of the queries.
async fn run_storm(
    socket: &Path,
    parent: &str,
    known: &Arc<HashSet<String>>,
) -> (Duration, Vec<Seen>) {
    let mut clients = Vec::with_capacity(CLIENTS);
    for _ in 0..CLIENTS {
        clients.push(connect(socket).await);
    }
    let started = Instant::now();
    let tasks: Vec<_> = clients
        .into_iter()
        .map(|client| tokio::spawn(storm(client, parent.to_owned(), Arc::clone(known))))
        .collect();
    let mut seen = Vec::with_capacity(CLIENTS);
    for task in tasks {
        seen.push(task.await.unwrap());
    }
    (started.elapsed(), seen)
}

fn percentile(sorted: &[Duration], pct: usize) -> Duration {
    sorted[(sorted.len() * pct / 100).min(sorted.len() - 1)]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_service_withstands_abuse_while_workers_run() {
    let f = start();
    let parent = f.root_id.to_string();
    let driver = connect(&f.socket).await;

    let known = Arc::new(delegate_all(&driver).await);
    let status = poll_until(&driver, "16 running", |s| {
        count(s, &["running"]) == CONCURRENCY
    })
    .await;
    assert_eq!(stat(&status, "activePermits"), CONCURRENCY as u64);
    assert_eq!(count(&status, &["queued"]), TASKS - CONCURRENCY);

    let ((wall, seen), (), (), silent, ()) = tokio::join!(
        run_storm(&f.socket, &parent, &known),
        abuse_framing(&f.socket, &parent),
        abuse_before_hello(&f.socket, &parent),
        abuse_silent(&f.socket),
        abuse_methods(&f.socket),
    );

    let mut latencies: Vec<Duration> = seen
        .iter()
        .flat_map(|s| s.latencies.iter().copied())
        .collect();
    latencies.sort_unstable();
    assert_eq!(latencies.len(), CLIENTS * QUERIES);
    let max_running = seen.iter().map(|s| s.max_running).max().unwrap();
    assert_eq!(
        max_running, CONCURRENCY,
        "the queries ran while every permit was held"
    );
    println!(
        "{} status queries from {CLIENTS} clients with {CONCURRENCY} workers running: {wall:?} wall \
         ({:.0} queries/s); latency p50 {:?}, p99 {:?}, max {:?}; silent peer closed after {silent:?}",
        latencies.len(),
        f64::from(u32::try_from(latencies.len()).unwrap()) / wall.as_secs_f64(),
        percentile(&latencies, 50),
        percentile(&latencies, 99),
        latencies.last().unwrap(),
    );

    // The coordinator is unaffected: every task settles and every permit comes back.
    let end = poll_until(&driver, "all settled, permits released", |s| {
        count(s, &["settled"]) == TASKS && stat(s, "activePermits") == 0
    })
    .await;
    assert_eq!(stat(&end, "queued"), 0);
    assert_eq!(children(&end).len(), TASKS);
    drop(driver);

    finish(f).await;
}

/// Stops the server (socket and metadata removed), then the runtime (no worker killed).
async fn finish(f: Fixture) {
    let Fixture {
        base,
        socket,
        rt,
        join,
        server,
        stop,
        ..
    } = f;
    stop.send(()).unwrap();
    tokio::time::timeout(ANSWER, server).await.unwrap().unwrap();
    assert!(!socket.exists(), "the socket is removed");
    assert!(
        !socket.with_extension("json").exists(),
        "the metadata is removed"
    );
    rt.shutdown().await.unwrap();
    drop(rt);
    let report = tokio::time::timeout(ANSWER, join).await.unwrap().unwrap();
    assert_eq!(report.workers_started, TASKS as u64);
    assert_eq!(report.workers_killed, 0);
    let _ = std::fs::remove_dir_all(base);
}
