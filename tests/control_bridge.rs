//! The worker extension's side of the control protocol (issue 12), against the real service
//! and server on a temp socket with simulated workers: `guard` and `submit` (child-only), a
//! child's `delegate` (foreground only, nested admission, the model-facing preview), a child
//! whose connection closes while its foreground `delegate` waits, and the object form of a
//! target. Every answer, result or error, is checked against `docs/protocol.schema.json`.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

#[path = "support/protocol_schema.rs"]
mod protocol_schema;
#[path = "support/recording.rs"]
mod recording;
#[path = "support/service_fixture.rs"]
mod service_fixture;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use protocol_schema::ProtocolSchema;
use recording::{Capabilities, Recording};
use serde_json::{Value, json};
use service_fixture::models;
use slate::control::service::Service;
use slate::control::{Client, ClientError, ControlError, Handler, Metadata, Server, ServerConfig};
use slate::core::ChildRef;
use slate::policy::capabilities::pi_offered_tools;
use slate::policy::scheduling::SchedulingPolicy;
use slate::runtime::{RuntimeConfig, RuntimeHandle, RuntimeReport, spawn};
use slate::sim::{Script, Step};
use slate::worker::sim::{BookEntry, ScriptBook};
use tokio::task::JoinHandle;
use uuid::Uuid;

const ANSWER: Duration = Duration::from_secs(20);
/// Assignments starting with this finish at once; every other one thinks for a minute.
const QUICK: &str = "Quick";

/// Operator policy: a general limited to `read`, implementations that may spawn
/// implementations (so writer ancestry, not a missing grant, is what refuses them).
const OPERATOR: &str = r#"{
    "general": {"tools": ["read"]},
    "implementation": {"spawn": ["implementation", "scout"]}
}"#;

fn book() -> ScriptBook {
    let answer = |think| Script {
        setup_error: None,
        steps: vec![
            Step::Think(think),
            Step::Request {
                ms: 10,
                text: "surveyed: two modules".into(),
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
    capabilities: Capabilities,
    operator: Client,
}

async fn start(name: &str, concurrency: u32) -> Fixture {
    let base = std::env::temp_dir().join(format!("slate-bridge-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    for dir in ["work", "agent"] {
        std::fs::create_dir_all(base.join(dir)).unwrap();
    }
    let work = std::fs::canonicalize(base.join("work")).unwrap();
    let root_id = Uuid::new_v4();
    let config = RuntimeConfig {
        root_id,
        policy: SchedulingPolicy {
            concurrency,
            ..SchedulingPolicy::default()
        },
        id_seed: 29,
        delegation_dir: base.join("session/delegation").join(root_id.to_string()),
        event_log: true,
        kill_grace: Duration::from_millis(300),
    };
    let (backend, capabilities) = Recording::new(book());
    let (rt, join) = spawn(config, Arc::new(backend)).unwrap();
    let loaded = service_fixture::loaded_with(&work, &base.join("agent"), Some(OPERATOR));
    let service: Arc<dyn Handler> = Arc::new(Service::new(
        rt.clone(),
        loaded,
        models(),
        pi_offered_tools(),
    ));
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
        capabilities,
        operator,
    }
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

async fn refused(client: &Client, method: &str, params: Value) -> ControlError {
    match call(client, method, params).await {
        Err(ClientError::Remote(error)) => error,
        other => panic!("{method}: expected a refusal, got {other:?}"),
    }
}

fn child_ref(snapshot: &Value) -> ChildRef {
    ChildRef::new(
        snapshot["id"].as_str().unwrap().parse().unwrap(),
        u32::try_from(snapshot["generation"].as_u64().unwrap()).unwrap(),
    )
}

impl Fixture {
    /// One background root task: `request` is a native `delegate_task` item.
    async fn delegate(&self, request: Value) -> ChildRef {
        let params = json!({"request": request, "background": true});
        let reply = call(&self.operator, "delegate", params).await.unwrap();
        child_ref(&reply["children"][0])
    }

    async fn scout(&self, assignment: &str, limits: Value) -> ChildRef {
        self.delegate(json!({"assignment": assignment, "profile": "scout", "limits": limits}))
            .await
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

    /// Polls `target`'s snapshot until `done` holds; that snapshot.
    async fn until(&self, what: &str, target: ChildRef, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + ANSWER;
        loop {
            let snapshot = self.snapshot(target).await;
            if done(&snapshot) {
                return snapshot;
            }
            assert!(Instant::now() < deadline, "{what}: {snapshot}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn running(&self, target: ChildRef) {
        self.until("running", target, |s| s["status"] == "running")
            .await;
    }

    /// The generation's connection, by its capability (as its extension connects).
    async fn connect_as(&self, child: ChildRef) -> Client {
        let capability = self.capabilities.lock().unwrap().get(&child).cloned();
        Client::connect_as(&self.socket, ANSWER, capability.as_ref())
            .await
            .unwrap()
    }

    /// Current generations whose parent is `parent`.
    async fn children_of(&self, parent: ChildRef) -> Vec<Value> {
        let fleet = call(&self.operator, "status", json!({})).await.unwrap();
        fleet["children"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| {
                c["parentId"] == parent.id.to_string() && c["parentGeneration"] == parent.generation
            })
            .cloned()
            .collect()
    }

    async fn finish(self) {
        drop(self.operator);
        let _ = self.stop.send(());
        self.server.await.unwrap();
        self.rt.shutdown().await.unwrap();
        drop(self.rt);
        self.join.await.unwrap();
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

fn guard_request() -> Value {
    json!({"kind": "request"})
}

fn guard_tool(tool: &str) -> Value {
    json!({"kind": "tool", "tool": tool, "callId": format!("call-{tool}")})
}

#[tokio::test]
async fn guard_and_submit_are_child_only() {
    let f = start("child-only", 8).await;
    for (method, params) in [
        ("guard", guard_request()),
        ("guard", guard_tool("bash")),
        ("submit", json!({"value": {"summary": "x"}})),
    ] {
        let error = refused(&f.operator, method, params).await;
        assert_eq!(
            (error.code.as_str(), error.message.as_str()),
            (
                "child-only",
                format!("{method}: only a worker generation can call it").as_str()
            ),
        );
    }
    // Their params are still read strictly first.
    let error = refused(&f.operator, "guard", json!({"kind": "request", "x": 1})).await;
    assert_eq!(error.code, "invalid-request", "{error:?}");
    f.finish().await;
}

#[tokio::test]
async fn the_guard_counts_the_callers_requests_and_tools_and_denies_over_the_limit() {
    let f = start("guard", 8).await;
    let a = f
        .scout("Survey the parser", json!({"requests": 2, "tools": 1}))
        .await;
    let b = f.scout("Survey the lexer", json!({"tools": 1})).await;
    f.running(a).await;
    f.running(b).await;
    let child = f.connect_as(a).await;

    let allow = json!({"allow": true});
    assert_eq!(call(&child, "guard", guard_request()).await.unwrap(), allow);
    assert_eq!(
        call(&child, "guard", json!({"kind": "compaction"}))
            .await
            .unwrap(),
        allow
    );
    assert_eq!(
        call(&child, "guard", guard_tool("bash")).await.unwrap(),
        allow
    );
    let s = f.snapshot(a).await;
    assert_eq!(
        (s["telemetry"]["requests"].as_u64(), s["toolCalls"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(s["activity"], "bash …");

    // Over the request limit: denied, not counted, the limit committed.
    let denied = call(&child, "guard", guard_request()).await.unwrap();
    assert_eq!(
        denied,
        json!({"allow": false, "reason": "out of budget: request limit of 2 reached"})
    );
    // Later dispatches of any kind get the committed reason (the first one wins).
    let denied = call(&child, "guard", guard_tool("read")).await.unwrap();
    assert_eq!(
        denied["reason"],
        "out of budget: request limit of 2 reached"
    );
    let ended = f
        .until("cancelled", a, |s| s["status"] == "cancelled")
        .await;
    assert_eq!(ended["limitReason"], "requests", "{ended}");
    assert_eq!(ended["telemetry"]["requests"], 2);
    assert_eq!(ended["toolCalls"], 1);
    assert!(
        ended["error"]
            .as_str()
            .unwrap()
            .contains("limits.requests is a hard limit"),
        "{ended}"
    );
    // Its worker is gone: the connection admits nothing more.
    let error = refused(&child, "guard", guard_request()).await;
    assert_eq!(error.code, "actor-ended", "{error:?}");

    // Another generation's counters are its own.
    let other = f.connect_as(b).await;
    assert_eq!(
        call(&other, "guard", guard_tool("grep")).await.unwrap(),
        allow
    );
    let denied = call(&other, "guard", guard_tool("grep")).await.unwrap();
    assert_eq!(
        denied,
        json!({"allow": false, "reason": "out of budget: tool limit of 1 reached"})
    );
    let ended = f
        .until("cancelled", b, |s| s["status"] == "cancelled")
        .await;
    assert_eq!(ended["limitReason"], "tools");
    assert_eq!(ended["telemetry"]["requests"], 0);
    f.finish().await;
}

fn summary_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"summary": {"type": "string", "minLength": 1}, "count": {"type": "integer"}},
        "required": ["summary"],
        "additionalProperties": false
    })
}

#[tokio::test]
async fn submit_validates_strictly_against_the_callers_admitted_schema() {
    let f = start("submit", 8).await;
    let a = f
        .delegate(json!({
            "assignment": "Summarize the repo",
            "profile": "scout",
            "resultSchema": summary_schema(),
        }))
        .await;
    let free = f.scout("Survey the lexer", json!({})).await;
    f.running(a).await;
    f.running(free).await;
    let child = f.connect_as(a).await;

    // Not coerced: "3" is not an integer.
    let invalid = call(&child, "submit", json!({"value": {"count": "3"}}))
        .await
        .unwrap();
    assert_eq!(invalid["status"], "invalid", "{invalid}");
    assert_eq!(invalid["attempts"], 1);
    assert_eq!(
        invalid["errors"],
        json!([
            "/summary: required property is missing",
            "/count: expected integer, found string \"3\"",
        ])
    );
    let message = invalid["message"].as_str().unwrap();
    assert!(
        message.contains("/count: expected integer, found string \"3\"")
            && message.contains("call submit_result again"),
        "{message}"
    );
    let value = json!({"summary": "two modules", "count": 2});
    let submitted = call(&child, "submit", json!({"value": value}))
        .await
        .unwrap();
    assert_eq!(
        (
            &submitted["status"],
            &submitted["attempts"],
            &submitted["errors"]
        ),
        (&json!("submitted"), &json!(2), &json!([]))
    );
    let duplicate = call(&child, "submit", json!({"value": {"summary": "other"}}))
        .await
        .unwrap();
    assert_eq!(duplicate["status"], "duplicate");
    assert_eq!(duplicate["attempts"], 2, "a duplicate is not an attempt");
    assert!(
        duplicate["message"]
            .as_str()
            .unwrap()
            .contains("a valid result was already submitted and cannot be replaced")
    );
    let s = f.snapshot(a).await;
    assert_eq!(s["outcome"]["validation"], "submitted");
    assert_eq!(s["outcome"]["attempts"], 2);
    assert_eq!(s["outcome"]["value"], value);
    assert_eq!(
        s["toolCalls"], 0,
        "submit counts nothing; its tool guard does"
    );

    // A generation without a resultSchema has nothing to submit.
    let other = f.connect_as(free).await;
    let error = refused(&other, "submit", json!({"value": {"summary": "x"}})).await;
    assert_eq!(error.code, "no-result-schema", "{error:?}");
    assert!(error.message.contains(&free.to_string()), "{error:?}");

    // Once the generation has ended nothing more is taken.
    call(&f.operator, "stop", json!({"target": a.to_string()}))
        .await
        .unwrap();
    f.until("cancelled", a, |s| s["status"] == "cancelled")
        .await;
    let error = refused(&child, "submit", json!({"value": value})).await;
    assert_eq!(error.code, "actor-ended", "{error:?}");
    f.finish().await;
}

#[tokio::test]
async fn a_childs_foreground_delegate_answers_with_the_preview_and_background_is_refused() {
    let f = start("nested-preview", 8).await;
    let a = f.scout("Survey the parser", json!({})).await;
    f.running(a).await;
    let child = f.connect_as(a).await;

    for params in [
        json!({"request": {"assignment": "Quick look", "profile": "scout", "background": true}}),
        json!({"request": {"assignment": "Quick look", "profile": "scout"}, "background": true}),
    ] {
        let error = refused(&child, "delegate", params).await;
        assert_eq!(
            (error.code.as_str(), error.message.as_str()),
            (
                "nested-background",
                "background: nested background calls are unsupported; use nested foreground"
            ),
        );
    }
    assert!(f.children_of(a).await.is_empty(), "nothing was admitted");

    let done = call(
        &child,
        "delegate",
        json!({"request": {"tasks": [
            {"assignment": "Quick look at the lexer", "profile": "scout"},
            {"assignment": "Quick look at the parser", "profile": "review"},
        ]}}),
    )
    .await
    .unwrap();
    let outcomes = done["outcome"]["outcomes"].as_array().unwrap();
    assert_eq!(outcomes.len(), 2, "{done}");
    assert_eq!(done["outcome"]["initiator"], a.to_string());
    let refs: Vec<ChildRef> = outcomes.iter().map(child_ref).collect();
    let preview = done["preview"].as_str().unwrap();
    let (first, second) = (
        preview.find(&refs[0].to_string()).unwrap(),
        preview.find(&refs[1].to_string()).unwrap(),
    );
    assert!(first < second, "in input order: {preview}");
    assert!(preview.contains("surveyed: two modules"), "{preview}");
    for outcome in outcomes {
        assert_eq!(outcome["status"], "settled", "{outcome}");
        assert_eq!(outcome["parentId"], a.id.to_string());
    }
    // The preview is exactly the policy's preview of the ordered outcomes.
    let snapshots: Vec<slate::core::ChildSnapshot> =
        serde_json::from_value(done["outcome"]["outcomes"].clone()).unwrap();
    assert_eq!(preview, slate::policy::preview::preview(&snapshots));
    f.finish().await;
}

#[tokio::test]
async fn nested_admission_on_the_child_path_is_the_cores() {
    let f = start("nested-rules", 3).await;
    let a = f.scout("Survey the parser", json!({})).await;
    f.running(a).await;
    let child = f.connect_as(a).await;
    let nested = |task: Value| json!({"request": task});

    // Spawn roles: a scout is granted scout and review only.
    let error = refused(
        &child,
        "delegate",
        nested(json!({"assignment": "Look", "profile": "general"})),
    )
    .await;
    assert_eq!(error.code, "role-not-granted", "{error:?}");

    // Depth: root 0, child 1, grandchild 2 is the bundled maximum. A grandchild that
    // delegates is refused (its own foreground call keeps the child waiting meanwhile).
    let pending = {
        let child = f.connect_as(a).await;
        tokio::spawn(async move {
            call(
                &child,
                "delegate",
                json!({"request": {"assignment": "Survey deeper", "profile": "scout"}}),
            )
            .await
        })
    };
    let deadline = Instant::now() + ANSWER;
    let grandchild = loop {
        if let Some(g) = f.children_of(a).await.first() {
            break child_ref(g);
        }
        assert!(
            Instant::now() < deadline,
            "the grandchild was never admitted"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    f.running(grandchild).await;
    let deep = f.connect_as(grandchild).await;
    let error = refused(
        &deep,
        "delegate",
        nested(json!({"assignment": "Even deeper", "profile": "scout"})),
    )
    .await;
    assert_eq!(error.code, "depth-exceeded", "{error:?}");
    assert!(
        error
            .message
            .contains("depth 3 exceeds the maximum depth 2"),
        "{error:?}"
    );

    // Capacity: concurrency 3, three running (a, its grandchild, and one more root task):
    // nested work is admitted only if it can dispatch now.
    let x = f.scout("Survey the build", json!({})).await;
    f.running(x).await;
    let error = refused(
        &child,
        "delegate",
        nested(json!({"assignment": "Look again", "profile": "scout"})),
    )
    .await;
    assert_eq!(
        (error.code.as_str(), error.message.as_str()),
        (
            "nested-capacity-unavailable",
            "Nested capacity unavailable; no permit lending (1 permits needed, 0 free of concurrency 3)"
        )
    );
    // An older queued root assignment refuses it too, before any permit is counted.
    let _queued = f.scout("Survey the docs", json!({})).await;
    let error = refused(
        &child,
        "delegate",
        nested(json!({"assignment": "Look again", "profile": "scout"})),
    )
    .await;
    assert_eq!(
        error.message,
        "Nested capacity unavailable; no permit lending (1 older assignments are queued)"
    );
    assert_eq!(f.children_of(a).await.len(), 1, "only the grandchild");
    pending.abort();
    f.finish().await;
}

#[tokio::test]
async fn writer_ancestry_and_ancestor_subsets_hold_on_the_child_path() {
    let f = start("nested-writers", 8).await;
    let writer = f
        .delegate(json!({"assignment": "Implement the parser", "profile": "implementation"}))
        .await;
    let general = f
        .delegate(json!({"assignment": "Coordinate the survey", "profile": "general"}))
        .await;
    f.running(writer).await;
    f.running(general).await;
    assert_eq!(f.snapshot(writer).await["writerLease"], true);

    let as_writer = f.connect_as(writer).await;
    let error = refused(
        &as_writer,
        "delegate",
        json!({"request": {"assignment": "Implement the lexer", "profile": "implementation"}}),
    )
    .await;
    assert_eq!(error.code, "writer-under-writer", "{error:?}");
    assert!(error.message.contains(&writer.to_string()), "{error:?}");

    // The general holds `read` only (operator narrowing): a scout (read, grep, find, ls)
    // would regain what its ancestor lacks.
    let as_general = f.connect_as(general).await;
    let error = refused(
        &as_general,
        "delegate",
        json!({"request": {"assignment": "Look around", "profile": "scout"}}),
    )
    .await;
    assert_eq!(
        (error.code.as_str(), error.message.as_str()),
        (
            "not-subset",
            format!("tasks[0].tools: \"grep\" is not among the delegating ancestor {general}'s effective grants (children only narrow)").as_str()
        )
    );
    assert!(f.children_of(writer).await.is_empty());
    assert!(f.children_of(general).await.is_empty());
    f.finish().await;
}

#[tokio::test]
async fn a_child_whose_connection_closes_while_its_delegate_waits_cancels_that_window() {
    let f = start("abandoned", 8).await;
    let a = f.scout("Survey the parser", json!({})).await;
    let sibling = f.scout("Survey the lexer", json!({})).await;
    f.running(a).await;
    f.running(sibling).await;
    let child = f.connect_as(a).await;
    let waiting = tokio::spawn(async move {
        call(
            &child,
            "delegate",
            json!({"request": {"tasks": [
                {"assignment": "Survey module one", "profile": "scout"},
                {"assignment": "Survey module two", "profile": "scout"},
            ]}}),
        )
        .await
    });
    let deadline = Instant::now() + ANSWER;
    let nested = loop {
        let nested = f.children_of(a).await;
        if nested.len() == 2 && nested.iter().all(|c| c["status"] == "running") {
            break nested.iter().map(child_ref).collect::<Vec<_>>();
        }
        assert!(Instant::now() < deadline, "never running: {nested:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };

    // The tool was aborted: the extension's connection goes away with the call pending.
    waiting.abort();
    assert!(waiting.await.unwrap_err().is_cancelled());
    for r in &nested {
        let ended = f
            .until("cancelled", *r, |s| s["status"] == "cancelled")
            .await;
        assert!(
            ended["error"]
                .as_str()
                .unwrap()
                .contains("cancelled the foreground call"),
            "{ended}"
        );
        assert!(ended["limitReason"].is_null());
        assert_eq!(ended["disposed"], true);
    }
    // The delegating child and everything else go on.
    assert_eq!(f.snapshot(a).await["status"], "running");
    assert_eq!(f.snapshot(sibling).await["status"], "running");
    let fleet = call(&f.operator, "status", json!({})).await.unwrap();
    assert_eq!(fleet["stats"]["activePermits"], 2, "{}", fleet["stats"]);
    assert_eq!(
        fleet["stats"]["openWindows"], 2,
        "a's and sibling's own windows"
    );
    f.finish().await;
}

#[tokio::test]
async fn a_target_may_be_the_contracts_object_over_the_socket() {
    let f = start("target-object", 8).await;
    let a = f.scout("Survey the parser", json!({})).await;
    f.running(a).await;
    let object = json!({"id": a.id.to_string(), "generation": a.generation});
    let status = call(&f.operator, "status", json!({"target": object}))
        .await
        .unwrap();
    assert_eq!(status["snapshot"]["id"], a.id.to_string());
    let stale = json!({"id": a.id.to_string(), "generation": 2});
    let error = refused(&f.operator, "stop", json!({"target": stale})).await;
    assert_eq!(error.code, "unknown-identity", "{error:?}");
    let error = refused(
        &f.operator,
        "stop",
        json!({"target": {"id": a.id.to_string(), "generation": 0}}),
    )
    .await;
    assert_eq!(error.code, "invalid-request", "{error:?}");
    assert!(error.message.starts_with("params.target"), "{error:?}");
    let stopped = call(&f.operator, "stop", json!({"target": object}))
        .await
        .unwrap();
    assert_eq!(
        stopped["child"]["id"],
        a.id.to_string(),
        "written back as a snapshot: {stopped}"
    );
    f.finish().await;
}
