//! What a pi session's coordinator adds to the control socket, against the real service and
//! server on a temp socket with simulated workers: the main session's parent mutation
//! reservations (`parentToolStart` / `parentToolEnd`, [Writer coordination]), the
//! supported-host gate (`--host-version`, [Supported host]), the preview on `outcome`
//! notifications, and the extension hash check at `hello`.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

#[path = "support/service_fixture.rs"]
mod service_fixture;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use service_fixture::{loaded, models};
use slate::control::methods::Event;
use slate::control::protocol::codes;
use slate::control::service::Service;
use slate::control::{
    Client, ClientError, ControlError, Handler, Metadata, Notification, Server, ServerConfig,
};
use slate::core::ChildRef;
use slate::policy::capabilities::pi_offered_tools;
use slate::policy::scheduling::SchedulingPolicy;
use slate::runtime::{RuntimeConfig, RuntimeHandle, RuntimeReport, spawn};
use slate::sim::{Script, Step};
use slate::worker::sim::{BookEntry, ScriptBook, SimBackend};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::task::JoinHandle;
use uuid::Uuid;

const ANSWER: Duration = Duration::from_secs(20);
/// Assignments starting with this finish at once; every other one thinks for a minute.
const QUICK: &str = "Quick";

fn book() -> ScriptBook {
    let answer = |think| Script {
        setup_error: None,
        steps: vec![
            Step::Think(think),
            Step::Request {
                ms: 10,
                text: "done: the parser lives in src/parse.rs".into(),
                input_tokens: 10,
                output_tokens: 2,
                cost: None,
            },
        ],
    };
    ScriptBook {
        scripts: vec![BookEntry {
            assignment_prefix: QUICK.into(),
            script: answer(10),
        }],
        default: answer(60_000),
        resumed: None,
    }
}

struct Fixture {
    base: PathBuf,
    socket: PathBuf,
    rt: RuntimeHandle,
    join: JoinHandle<RuntimeReport>,
    server: JoinHandle<()>,
    stop: tokio::sync::oneshot::Sender<()>,
    operator: Client,
}

/// A runtime with simulated workers behind the real service (gated on `host_version` when
/// given) and server.
async fn start(name: &str, host_version: Option<&str>) -> Fixture {
    let base = std::env::temp_dir().join(format!("slate-session-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    for dir in ["work", "agent"] {
        std::fs::create_dir_all(base.join(dir)).unwrap();
    }
    let work = std::fs::canonicalize(base.join("work")).unwrap();
    let root_id = Uuid::new_v4();
    let config = RuntimeConfig {
        root_id,
        policy: SchedulingPolicy {
            concurrency: 8,
            ..SchedulingPolicy::default()
        },
        id_seed: 29,
        delegation_dir: base.join("session/delegation").join(root_id.to_string()),
        event_log: true,
        kill_grace: Duration::from_millis(300),
    };
    let (rt, join) = spawn(config, Arc::new(SimBackend::new(book()))).unwrap();
    let mut service = Service::new(
        rt.clone(),
        loaded(&work, &base.join("agent")),
        models(),
        pi_offered_tools(),
    );
    if let Some(version) = host_version {
        service = service.with_host_version(version);
    }
    let service: Arc<dyn Handler> = Arc::new(service);
    let socket = base.join("run").join(format!("{root_id}.sock"));
    let metadata = Metadata {
        pid: std::process::id(),
        cwd: work,
        parent_id: root_id,
        started_at: slate::runtime::now_ms(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        socket: PathBuf::new(),
        events: None,
    };
    let server = Server::bind(&socket, metadata, ServerConfig::default()).unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(server.run(service, async move {
        let _ = stopped.await;
    }));
    let operator = Client::connect_path(&socket, ANSWER).await.unwrap();
    Fixture {
        base,
        socket,
        rt,
        join,
        server,
        stop,
        operator,
    }
}

impl Fixture {
    /// One background task of `profile` from the operator.
    async fn delegate(&self, assignment: &str, profile: &str) -> Result<ChildRef, ControlError> {
        let params = json!({
            "request": {"assignment": assignment, "profile": profile},
            "background": true,
        });
        let reply = match call(&self.operator, "delegate", params).await {
            Ok(reply) => reply,
            Err(ClientError::Remote(error)) => return Err(error),
            Err(other) => panic!("delegate: {other}"),
        };
        Ok(child_ref(&reply["children"][0]))
    }

    async fn snapshot(&self, target: ChildRef) -> Value {
        let status = call(
            &self.operator,
            "status",
            json!({"target": target.to_string()}),
        )
        .await
        .unwrap();
        status["snapshot"].clone()
    }

    async fn until(&self, what: &str, target: ChildRef, done: impl Fn(&Value) -> bool) {
        let deadline = Instant::now() + ANSWER;
        loop {
            let snapshot = self.snapshot(target).await;
            if done(&snapshot) {
                return;
            }
            assert!(Instant::now() < deadline, "{what}: {snapshot}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn writer_stats(&self) -> Value {
        call(&self.operator, "status", json!({})).await.unwrap()["stats"]["writer"].clone()
    }

    async fn finish(self) {
        drop(self.operator);
        let _ = self.stop.send(());
        self.server.await.unwrap();
        // Gone already after a `shutdown` request.
        let _ = self.rt.shutdown().await;
        drop(self.rt);
        self.join.await.unwrap();
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

fn child_ref(snapshot: &Value) -> ChildRef {
    ChildRef::new(
        snapshot["id"].as_str().unwrap().parse().unwrap(),
        u32::try_from(snapshot["generation"].as_u64().unwrap()).unwrap(),
    )
}

async fn call(client: &Client, method: &str, params: Value) -> Result<Value, ClientError> {
    tokio::time::timeout(ANSWER, client.call(method, params))
        .await
        .unwrap_or_else(|_| panic!("{method}: no answer within {ANSWER:?}"))
}

async fn refused(client: &Client, method: &str, params: Value) -> ControlError {
    match call(client, method, params).await {
        Err(ClientError::Remote(error)) => error,
        other => panic!("{method}: expected a refusal, got {other:?}"),
    }
}

async fn start_tool(f: &Fixture, call_id: &str, tool: &str) -> Result<Value, ControlError> {
    match call(
        &f.operator,
        "parentToolStart",
        json!({"callId": call_id, "tool": tool}),
    )
    .await
    {
        Ok(v) => Ok(v),
        Err(ClientError::Remote(e)) => Err(e),
        Err(other) => panic!("parentToolStart: {other}"),
    }
}

async fn end_tool(f: &Fixture, call_id: &str) -> Value {
    call(&f.operator, "parentToolEnd", json!({"callId": call_id}))
        .await
        .unwrap()
}

// ---- parent mutation reservations ------------------------------------------------------------

#[tokio::test]
async fn a_reserved_parent_mutation_refuses_writer_batches_until_its_call_ends() {
    let f = start("reserve", None).await;
    // The genuine read-only builtins and Slate's own delegation tools never reserve.
    for (n, tool) in [
        "read",
        "grep",
        "find",
        "ls",
        "delegate_task",
        "delegate_coordinate",
        "subagent",
    ]
    .into_iter()
    .enumerate()
    {
        let answer = start_tool(&f, &format!("ro-{n}"), tool).await.unwrap();
        assert_eq!(answer, json!({"reserved": false}), "{tool}");
        assert_eq!(
            end_tool(&f, &format!("ro-{n}")).await,
            json!({"released": false}),
            "{tool}: nothing was reserved"
        );
    }
    assert_eq!(
        start_tool(&f, "call-bash", "bash").await.unwrap(),
        json!({"reserved": true})
    );
    // Any tool Slate does not know to be read-only reserves too.
    assert_eq!(
        start_tool(&f, "call-mcp", "some_extension_tool")
            .await
            .unwrap(),
        json!({"reserved": true})
    );
    let refusal = f
        .delegate("Implement the parser", "implementation")
        .await
        .unwrap_err();
    assert_eq!(refusal.code, "parent-mutation-reserved", "{refusal}");
    assert!(
        refusal.message.contains("call-bash") && refusal.message.contains("writer-containing"),
        "{refusal}"
    );
    // Readers are still admitted.
    let reader = f.delegate("Quick survey", "scout").await.unwrap();
    f.until("settled", reader, |s| s["status"] == "settled")
        .await;
    // The same call id cannot reserve twice.
    let twice = start_tool(&f, "call-bash", "bash").await.unwrap_err();
    assert_eq!(twice.code, "duplicate-parent-call", "{twice}");
    assert_eq!(end_tool(&f, "call-bash").await, json!({"released": true}));
    // One reservation left: still refused.
    let refusal = f
        .delegate("Implement the parser", "implementation")
        .await
        .unwrap_err();
    assert_eq!(refusal.code, "parent-mutation-reserved", "{refusal}");
    assert!(refusal.message.contains("call-mcp"), "{refusal}");
    assert_eq!(end_tool(&f, "call-mcp").await, json!({"released": true}));
    assert_eq!(
        end_tool(&f, "call-mcp").await,
        json!({"released": false}),
        "releasing again is harmless"
    );
    assert_eq!(
        end_tool(&f, "never-started").await,
        json!({"released": false})
    );
    let writer = f
        .delegate("Implement the parser", "implementation")
        .await
        .unwrap();
    f.until("writing", writer, |s| s["writerLease"] == true)
        .await;
    f.finish().await;
}

#[tokio::test]
async fn parent_mutations_are_refused_while_a_child_holds_the_writer_lease() {
    let f = start("lease", None).await;
    let writer = f
        .delegate("Implement the parser", "implementation")
        .await
        .unwrap();
    f.until("writing", writer, |s| s["writerLease"] == true)
        .await;
    assert_eq!(f.writer_stats().await, json!(writer.to_string()));
    let refusal = start_tool(&f, "call-edit", "edit").await.unwrap_err();
    assert_eq!(refusal.code, "writer-lease-held", "{refusal}");
    assert_eq!(
        refusal.message,
        format!(
            "parentToolStart: child {writer} holds the writer lease; parent mutations are rejected"
        )
    );
    // A refused call reserved nothing: its end (pi finalizes blocked calls too) releases
    // nothing.
    assert_eq!(end_tool(&f, "call-edit").await, json!({"released": false}));
    // Read-only tools go on.
    assert_eq!(
        start_tool(&f, "call-read", "read").await.unwrap(),
        json!({"reserved": false})
    );
    call(&f.operator, "stop", json!({"target": writer.to_string()}))
        .await
        .unwrap();
    f.until("disposed", writer, |s| s["writerLease"] == false)
        .await;
    assert_eq!(
        start_tool(&f, "call-edit-2", "edit").await.unwrap(),
        json!({"reserved": true}),
        "allowed once the lease is given back"
    );
    f.finish().await;
}

#[tokio::test]
async fn parent_tool_params_are_checked_and_bad_ones_change_nothing() {
    let f = start("params", None).await;
    let blank = start_tool(&f, "  ", "bash").await.unwrap_err();
    assert_eq!(blank.code, codes::INVALID_REQUEST, "{blank}");
    assert!(blank.message.starts_with("params.callId:"), "{blank}");
    let long = start_tool(&f, &"c".repeat(1025), "bash").await.unwrap_err();
    assert!(
        long.message.starts_with("params.callId: 1025 UTF-8 bytes"),
        "{long}"
    );
    let controls = start_tool(&f, "c1\u{1b}[2J", "bash").await.unwrap_err();
    assert_eq!(
        controls.message,
        "params.callId: must not contain control characters"
    );
    let nameless = start_tool(&f, "c1", "").await.unwrap_err();
    assert!(nameless.message.starts_with("params.tool:"), "{nameless}");
    let unknown = refused(
        &f.operator,
        "parentToolStart",
        json!({"callId": "c1", "tool": "bash", "readOnly": true}),
    )
    .await;
    assert!(
        unknown.message.contains("unknown field `readOnly`"),
        "{unknown}"
    );
    let blank_end = refused(&f.operator, "parentToolEnd", json!({"callId": ""})).await;
    assert!(
        blank_end.message.starts_with("params.callId:"),
        "{blank_end}"
    );
    // Nothing was reserved by any of them: a writer is admitted.
    f.delegate("Implement the parser", "implementation")
        .await
        .unwrap();
    f.finish().await;
}

// ---- the supported-host gate -----------------------------------------------------------------

#[tokio::test]
async fn an_unsupported_host_refuses_execution_but_keeps_status_stop_and_reads() {
    let f = start("old-host", Some("1.4.9")).await;
    let target = json!(format!("{}@1", Uuid::from_u128(5)));
    let gated = [
        (
            "delegate",
            json!({"request": {"assignment": "Survey", "profile": "scout"}}),
        ),
        (
            "delegate",
            json!({"request": {"agent": "scout", "task": "Survey"}}),
        ),
        ("resume", json!({"target": target, "assignment": "Go on"})),
        ("followup", json!({"target": target, "assignment": "More"})),
        ("revive", json!({"target": target, "assignment": "Again"})),
        ("steer", json!({"target": target, "text": "Faster"})),
        (
            "message",
            json!({"target": target, "text": "Stop here", "mode": "steer"}),
        ),
        (
            "message",
            json!({"target": target, "text": "Then this", "mode": "followUp"}),
        ),
    ];
    for (method, params) in gated {
        let refusal = refused(&f.operator, method, params.clone()).await;
        assert_eq!(refusal.code, codes::UNSUPPORTED_HOST, "{method} {params}");
        assert!(
            refusal
                .message
                .starts_with(&format!("{method}: unsupported host: "))
                && refusal.message.contains("1.4.9")
                && refusal.message.contains("1.5.2"),
            "{refusal}"
        );
        assert_eq!(
            refusal.data,
            Some(json!({"detected": "1.4.9", "minimum": "1.5.2"}))
        );
    }
    // Nothing was admitted, no identity allocated.
    let status = call(&f.operator, "status", json!({})).await.unwrap();
    assert_eq!(status["children"], json!([]), "{status}");
    // The reads and controls stay: their own answers (or the core's own refusals).
    for method in ["agents", "inbox", "profiles", "policy"] {
        call(&f.operator, method, json!({}))
            .await
            .unwrap_or_else(|e| panic!("{method}: {e}"));
    }
    let stop = refused(&f.operator, "stop", json!({"target": target})).await;
    assert_eq!(stop.code, "unknown-identity", "{stop}");
    let many = call(&f.operator, "stopMany", json!({"targets": []})).await;
    assert!(
        !matches!(&many, Err(ClientError::Remote(e)) if e.code == codes::UNSUPPORTED_HOST),
        "{many:?}"
    );
    // An inbox message only lands in a mailbox: not gated (the root cannot message itself).
    let inbox = refused(&f.operator, "message", json!({"text": "note"})).await;
    assert_eq!(inbox.code, "root-self-message", "{inbox}");
    assert_eq!(
        start_tool(&f, "c1", "bash").await.unwrap(),
        json!({"reserved": true})
    );
    assert_eq!(
        call(&f.operator, "shutdown", json!({})).await.unwrap(),
        json!({"shuttingDown": true})
    );
    f.finish().await;
}

#[tokio::test]
async fn every_kind_of_unsupported_host_is_refused_and_a_supported_one_runs() {
    for (version, why) in [
        ("", "unknown"),
        ("1.6", "malformed"),
        ("v1.6.0", "malformed"),
        ("1.6.0-rc.1", "prerelease"),
        ("1.5.1", "below the minimum"),
    ] {
        let f = start("kinds", Some(version)).await;
        let refusal = f.delegate("Survey", "scout").await.unwrap_err();
        assert_eq!(refusal.code, codes::UNSUPPORTED_HOST, "{version:?}");
        assert!(refusal.message.contains(why), "{version:?}: {refusal}");
        f.finish().await;
    }
    for version in ["1.5.2", "1.6.0", "2.0.0+build.7"] {
        let f = start("supported", Some(version)).await;
        let child = f.delegate("Quick survey", "scout").await.unwrap();
        f.until("settled", child, |s| s["status"] == "settled")
            .await;
        f.finish().await;
    }
}

// ---- the outcome notification's preview --------------------------------------------------------

#[tokio::test]
async fn an_outcome_notification_carries_the_model_facing_preview() {
    let f = start("preview", None).await;
    let watcher = Client::connect_path(&f.socket, ANSWER).await.unwrap();
    let mut events = watcher.subscribe().await.unwrap();
    let child = f.delegate("Quick survey", "scout").await.unwrap();
    let deadline = tokio::time::Instant::now() + ANSWER;
    let (outcome, preview) = loop {
        let next = tokio::time::timeout_at(deadline, events.next())
            .await
            .expect("an outcome notification")
            .expect("the subscription stays open");
        if let Notification::Event(Event::Outcome { outcome, preview }) = next {
            break (outcome, preview);
        }
    };
    assert_eq!(outcome.outcomes[0].child_ref(), child);
    assert_eq!(
        preview,
        slate::policy::preview::preview(&outcome.outcomes),
        "the same preview a foreground delegate answers"
    );
    assert!(preview.contains(&child.to_string()), "{preview}");
    assert!(
        preview.contains("done: the parser lives in src/parse.rs"),
        "{preview}"
    );
    drop(events);
    drop(watcher);
    f.finish().await;
}

// ---- the extension hash at hello --------------------------------------------------------------

/// One raw connection: lines out, lines in.
struct Raw {
    lines: tokio::io::Lines<BufReader<tokio::net::unix::OwnedReadHalf>>,
    writer: tokio::net::unix::OwnedWriteHalf,
}

impl Raw {
    async fn connect(socket: &Path) -> Self {
        let (read, writer) = UnixStream::connect(socket).await.unwrap().into_split();
        Self {
            lines: BufReader::new(read).lines(),
            writer,
        }
    }

    async fn ask(&mut self, request: Value) -> Value {
        let mut line = request.to_string();
        line.push('\n');
        self.writer.write_all(line.as_bytes()).await.unwrap();
        let answer = tokio::time::timeout(ANSWER, self.lines.next_line())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        serde_json::from_str(&answer).unwrap()
    }
}

#[tokio::test]
async fn a_hello_from_another_extension_build_is_refused_with_the_fix() {
    let f = start("extension", None).await;
    let embedded = slate::worker::pi::extension::content_hash();
    let mut raw = Raw::connect(&f.socket).await;
    let stale = "0123456789abcdef0123456789abcdef";
    assert_ne!(stale, embedded);
    let answer = raw
        .ask(json!({"id": 1, "method": "hello", "params": {
            "protocols": [2],
            "client": {"name": "slate-pi-extension 0.1.0", "extension": stale},
        }}))
        .await;
    let error = &answer["error"];
    assert_eq!(error["code"], codes::EXTENSION_MISMATCH, "{answer}");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains(stale)
            && message.contains(embedded)
            && message.contains("run `slate pi install` and restart pi"),
        "{message}"
    );
    assert_eq!(
        error["data"],
        json!({"client": stale, "embedded": embedded})
    );
    // Nothing was decided: the connection is still before its handshake.
    let early = raw
        .ask(json!({"id": 2, "method": "status", "params": {}}))
        .await;
    assert_eq!(early["error"]["code"], codes::HELLO_REQUIRED, "{early}");
    // The matching hash (and a plain string client) is accepted.
    let answer = raw
        .ask(json!({"id": 3, "method": "hello", "params": {
            "protocols": [2],
            "client": {"name": "slate-pi-extension 0.1.0", "extension": embedded},
        }}))
        .await;
    assert_eq!(
        answer["result"]["actor"],
        json!({"kind": "operator"}),
        "{answer}"
    );
    let mut plain = Raw::connect(&f.socket).await;
    let answer = plain
        .ask(
            json!({"id": 1, "method": "hello", "params": {"protocols": [2], "client": "a script"}}),
        )
        .await;
    assert_eq!(answer["result"]["protocol"], 2, "{answer}");
    drop(raw);
    drop(plain);
    f.finish().await;
}
