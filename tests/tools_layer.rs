//! The tool layer (`src/tools`) on the real service and server, with simulated workers: the
//! tools each caller has (`tools`), strict input (`callTool` never coerces: `"42"` is not
//! `42`), an unknown tool, a foreground delegation's live `toolUpdate`s, and a background
//! call's `toolOutcome`, sent to the connection that made the call and to no other. Every
//! answer is checked against `docs/protocol.schema.json`.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

#[path = "support/protocol_schema.rs"]
mod protocol_schema;
#[path = "support/recording.rs"]
mod recording;
#[path = "support/service_fixture.rs"]
mod service_fixture;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use protocol_schema::ProtocolSchema;
use recording::{Capabilities, Recording};
use serde_json::{Value, json};
use service_fixture::models;
use slate::control::service::Service;
use slate::control::{
    Client, ClientError, Handler, Metadata, Notification, Server, ServerConfig, Subscription,
};
use slate::core::ChildRef;
use slate::policy::capabilities::pi_offered_tools;
use slate::policy::scheduling::SchedulingPolicy;
use slate::runtime::{RuntimeConfig, RuntimeHandle, RuntimeReport, spawn};
use slate::sim::{Script, Step};
use slate::worker::sim::{BookEntry, ScriptBook};
use tokio::task::JoinHandle;
use uuid::Uuid;

const ANSWER: Duration = Duration::from_secs(20);
/// Assignments starting with this take half a second; every other one a minute.
const QUICK: &str = "Quick";

const OPERATOR: &str = r#"{"implementation": {"spawn": ["scout"]}}"#;

fn book() -> ScriptBook {
    let answer = |think| Script {
        setup_error: None,
        steps: vec![
            Step::Think(think),
            Step::Request {
                ms: 10,
                text: "surveyed: two modules\nmore".into(),
                input_tokens: 10,
                output_tokens: 2,
                cost: Some(0.001),
            },
        ],
    };
    ScriptBook {
        scripts: vec![BookEntry {
            assignment_prefix: QUICK.into(),
            script: answer(500),
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
}

fn start(name: &str) -> Fixture {
    let base = std::env::temp_dir().join(format!("slate-tools-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    for dir in ["work", "agent"] {
        std::fs::create_dir_all(base.join(dir)).unwrap();
    }
    let work = std::fs::canonicalize(base.join("work")).unwrap();
    let root_id = Uuid::new_v4();
    let config = RuntimeConfig {
        root_id,
        policy: SchedulingPolicy::default(),
        id_seed: 31,
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
    Fixture {
        base,
        socket,
        rt,
        join,
        server,
        stop,
        capabilities,
    }
}

thread_local! {
    static SCHEMA: std::cell::RefCell<ProtocolSchema> =
        std::cell::RefCell::new(ProtocolSchema::load());
}

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

async fn tool(client: &Client, tool: &str, input: Value) -> Value {
    call(
        client,
        "callTool",
        json!({"tool": tool, "input": input, "callId": format!("pi-{tool}")}),
    )
    .await
    .unwrap()
}

fn names(tools: &Value) -> Vec<String> {
    tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// The next notification within `within`, if any.
async fn next(notes: &mut Subscription, within: Duration) -> Option<Notification> {
    tokio::time::timeout(within, notes.next())
        .await
        .ok()
        .flatten()
}

impl Fixture {
    async fn operator(&self) -> Client {
        Client::connect_path(&self.socket, ANSWER).await.unwrap()
    }

    async fn connect_as(&self, child: ChildRef) -> Client {
        let capability = self.capabilities.lock().unwrap().get(&child).cloned();
        Client::connect_as(&self.socket, ANSWER, capability.as_ref())
            .await
            .unwrap()
    }

    /// A background root task (through the tool layer); its identity.
    async fn background(&self, operator: &Client, task: Value) -> ChildRef {
        let mut task = task;
        task["background"] = json!(true);
        let answer = tool(operator, "delegate_task", task).await;
        let target = answer["details"]["rows"][0]["target"].as_str().unwrap();
        target.parse().unwrap()
    }

    async fn finish(self) {
        let _ = self.stop.send(());
        self.server.await.unwrap();
        self.rt.shutdown().await.unwrap();
        drop(self.rt);
        self.join.await.unwrap();
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

#[tokio::test]
async fn each_caller_lists_its_own_tools_with_untyped_parameters() {
    let f = start("list");
    let operator = f.operator().await;
    let root = call(&operator, "tools", json!({})).await.unwrap();
    assert_eq!(
        names(&root),
        ["delegate_task", "delegate_coordinate", "subagent"]
    );
    // The host has nothing to coerce by: every property is a description and nothing else,
    // with its type and bound written into it (from core/bounds.rs).
    for spec in root["tools"].as_array().unwrap() {
        for (name, prop) in spec["parameters"]["properties"].as_object().unwrap() {
            let keys: Vec<&String> = prop.as_object().unwrap().keys().collect();
            assert_eq!(keys, ["description"], "{}.{name}: {prop}", spec["name"]);
        }
    }
    let coordinate = &root["tools"][1]["parameters"]["properties"];
    let timeout = coordinate["timeoutMs"]["description"].as_str().unwrap();
    assert!(timeout.contains("integer, 1 to 60000"), "{timeout}");

    // A child with a result schema only: submit_result, and nothing of the root's.
    let child = f
        .background(
            &operator,
            json!({"assignment": "think a while", "profile": "scout", "spawn": [],
                   "coordination": [], "resultSchema": {"type": "object"}}),
        )
        .await;
    let as_child = f.connect_as(child).await;
    let granted = call(&as_child, "tools", json!({})).await.unwrap();
    assert_eq!(names(&granted), ["submit_result"]);
    // One that may spawn: delegate_task, whose background is the child's wording.
    let spawner = f
        .background(
            &operator,
            json!({"assignment": "think a while", "profile": "implementation",
                   "coordination": []}),
        )
        .await;
    let as_spawner = f.connect_as(spawner).await;
    let granted = call(&as_spawner, "tools", json!({})).await.unwrap();
    assert_eq!(names(&granted), ["delegate_task"]);
    let background = granted["tools"][0]["parameters"]["properties"]["background"]["description"]
        .as_str()
        .unwrap();
    assert!(background.starts_with("Leave out"), "{background}");
    f.finish().await;
}

#[tokio::test]
async fn input_is_read_strictly_and_an_unknown_tool_is_named() {
    let f = start("strict");
    let operator = f.operator().await;
    // `"42"` is not 42: refused naming the field, as an error answer the model reads.
    let answer = tool(
        &operator,
        "delegate_coordinate",
        json!({"action": "wait", "timeoutMs": "42"}),
    )
    .await;
    assert_eq!(answer["isError"], true, "{answer}");
    let text = answer["text"].as_str().unwrap();
    assert_eq!(
        text,
        "delegate_coordinate wait: params.timeoutMs: invalid type: string \"42\", expected u64",
    );
    assert_eq!(answer["details"]["error"]["code"], "invalid-request");
    // A delegation is read by Slate's policy parser, which names the JSON path.
    let answer = tool(
        &operator,
        "delegate_task",
        json!({"assignment": "x", "profile": "scout", "limits": {"requests": "3"}}),
    )
    .await;
    assert_eq!(answer["isError"], true, "{answer}");
    assert!(
        answer["text"]
            .as_str()
            .unwrap()
            .contains("$.limits.requests"),
        "{answer}"
    );
    // Not an object at all.
    let answer = tool(&operator, "subagent", json!(["scout"])).await;
    assert_eq!(
        answer["text"],
        "subagent: the input must be a JSON object, not an array"
    );
    // An empty compatibility launch names the compatibility fields, not delegate_task's.
    let answer = tool(&operator, "subagent", json!({})).await;
    assert_eq!(answer["isError"], true, "{answer}");
    let text = answer["text"].as_str().unwrap();
    assert!(
        text.contains("$.agent: required") && text.contains("$.task: required"),
        "{text}"
    );
    assert!(!text.contains("$.assignment"), "{text}");
    // A tool the caller does not have: `unknown-tool`, naming the caller's tools.
    let refused = call(
        &operator,
        "callTool",
        json!({"tool": "submit_result", "input": {"value": 1}}),
    )
    .await;
    let Err(ClientError::Remote(error)) = refused else {
        panic!("expected unknown-tool, got {refused:?}");
    };
    assert_eq!(error.code, "unknown-tool");
    assert_eq!(
        error.message,
        "callTool: \"submit_result\" is not a tool of this caller; its tools: delegate_task, delegate_coordinate, subagent"
    );
    f.finish().await;
}

#[tokio::test]
async fn a_foreground_call_streams_rows_and_answers_the_preview() {
    let f = start("foreground");
    let operator = f.operator().await;
    let mut notes = operator.notifications().unwrap();
    let answer = tool(
        &operator,
        "delegate_task",
        json!({"assignment": "Quick look", "profile": "scout"}),
    )
    .await;
    assert_eq!(answer["isError"], false);
    assert!(answer.get("pending").is_none(), "{answer}");
    let text = answer["text"].as_str().unwrap();
    assert!(text.starts_with("Subagent preview: 1 child."), "{text}");
    let row = &answer["details"]["rows"][0];
    assert_eq!(row["status"], "settled");
    assert_eq!(row["role"], "scout");
    assert_eq!(row["headline"], "surveyed: two modules");
    assert_eq!(row["handle"].as_str().unwrap().len(), 8);
    let line = row["line"].as_str().unwrap();
    assert!(line.starts_with("✓ scout "), "{line}");
    assert!(line.ends_with(" · surveyed: two modules"), "{line}");
    // While it ran: at least one live update, for this call id.
    let Some(Notification::ToolUpdate(update)) = next(&mut notes, Duration::ZERO).await else {
        panic!("no toolUpdate arrived during the call");
    };
    assert_eq!(update.call_id.as_deref(), Some("pi-delegate_task"));
    assert_eq!(update.rows.len(), 1);
    assert_eq!(update.text, update.rows[0].line);
    f.finish().await;
}

#[tokio::test]
async fn a_background_outcome_goes_to_the_calling_connection_only() {
    let f = start("background");
    let caller = f.operator().await;
    let other = f.operator().await;
    let mut caller_notes = caller.notifications().unwrap();
    let mut other_notes = other.notifications().unwrap();
    let answer = tool(
        &caller,
        "delegate_task",
        json!({"tasks": [{"assignment": "Quick one", "profile": "scout"},
                         {"assignment": "Quick two", "profile": "review"}],
               "background": true}),
    )
    .await;
    let call_number = answer["pending"].as_u64().unwrap();
    let text = answer["text"].as_str().unwrap();
    assert!(
        text.starts_with(&format!(
            "Accepted 2 tasks in the background (call {call_number}):\n- "
        )),
        "{text}"
    );
    assert_eq!(
        text.lines().count(),
        4,
        "a few lines, not a JSON dump: {text}"
    );
    let outcome = loop {
        match next(&mut caller_notes, ANSWER).await {
            Some(Notification::ToolOutcome(outcome)) => break outcome,
            Some(Notification::ToolUpdate(update)) => assert_eq!(update.call, call_number),
            other => panic!("expected the call's outcome, got {other:?}"),
        }
    };
    assert_eq!(outcome.call, call_number);
    assert_eq!(outcome.call_id.as_deref(), Some("pi-delegate_task"));
    assert!(
        outcome
            .text
            .starts_with(&format!("Background call {call_number} drained.\n")),
        "{}",
        outcome.text
    );
    assert_eq!(outcome.rows.len(), 2);
    assert!(outcome.rows.iter().all(|r| r.status == "settled"));
    // The other connection made no call: it hears nothing.
    assert!(
        next(&mut other_notes, Duration::from_millis(200))
            .await
            .is_none()
    );
    // Nor is the outcome sent twice.
    assert!(
        next(&mut caller_notes, Duration::from_millis(200))
            .await
            .is_none()
    );
    f.finish().await;
}
