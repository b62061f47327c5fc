//! The summary and table answers the server keeps between changes, read by the one-shot
//! client as `subagent-status` reads them: every change shows in the next answer (a new
//! identity, a settle, a presence-only change, a new generation), an unchanged fleet gets
//! the same text again, and the table answer is always the summary answer's rows.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

#[path = "support/protocol_schema.rs"]
mod protocol_schema;
#[path = "support/service_fixture.rs"]
mod service_fixture;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use protocol_schema::ProtocolSchema;
use serde_json::{Value, json};
use service_fixture::{loaded, models};
use slate::control::client::RawResult;
use slate::control::methods::{StatusParams, method};
use slate::control::oneshot;
use slate::control::service::Service;
use slate::control::summary::FleetSummary;
use slate::control::table::{FleetTable, FleetText, TableRow, write_fleet_table};
use slate::control::{Client, Handler, Metadata, Method as _, Server, ServerConfig};
use slate::core::{Presence, Status};
use slate::policy::capabilities::pi_offered_tools;
use slate::policy::scheduling::SchedulingPolicy;
use slate::runtime::{RuntimeConfig, spawn};
use slate::sim::{Script, Step};
use slate::worker::sim::{ScriptBook, SimBackend};
use uuid::Uuid;

const ANSWER: Duration = Duration::from_secs(20);

struct Fixture {
    base: PathBuf,
    socket: PathBuf,
    root_id: Uuid,
}

/// A runtime with simulated workers (each thinks 200 ms, then answers), the real service
/// and a server on a private socket.
fn start(name: &str) -> Fixture {
    let base = std::env::temp_dir().join(format!("slate-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    for dir in ["work", "agent"] {
        std::fs::create_dir_all(base.join(dir)).unwrap();
    }
    let cwd = std::fs::canonicalize(base.join("work")).unwrap();
    let root_id = Uuid::new_v4();
    let book = ScriptBook {
        scripts: Vec::new(),
        default: Script {
            setup_error: None,
            steps: vec![
                Step::Think(200),
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
    };
    let config = RuntimeConfig {
        root_id,
        policy: SchedulingPolicy::default(),
        id_seed: 23,
        delegation_dir: base.join("delegation").join(root_id.to_string()),
        event_log: false,
        kill_grace: Duration::from_millis(300),
    };
    let (rt, _join) = spawn(config, Arc::new(SimBackend::new(book))).unwrap();
    let service: Arc<dyn Handler> = Arc::new(Service::new(
        rt,
        loaded(&cwd, &base.join("agent")),
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
    let server = Server::bind(&socket, metadata, ServerConfig::default()).unwrap();
    tokio::spawn(server.run(service, std::future::pending()));
    Fixture {
        base,
        socket,
        root_id,
    }
}

impl Fixture {
    /// One `status` as `subagent-status` asks it: a fresh blocking connection, `hello` and
    /// the request in one write.
    async fn status(&self, params: StatusParams) -> RawResult {
        let socket = self.socket.clone();
        tokio::task::spawn_blocking(move || {
            let stream = std::os::unix::net::UnixStream::connect(&socket).unwrap();
            oneshot::call_raw::<method::Status>(stream, &params, ANSWER).unwrap()
        })
        .await
        .unwrap()
    }

    /// The text answer, read now and checked against the published schema: its lines.
    async fn text(&self) -> Vec<u8> {
        let raw = self
            .status(StatusParams {
                text: true,
                ..StatusParams::default()
            })
            .await;
        let value: Value = serde_json::from_str(raw.get()).unwrap();
        ProtocolSchema::load()
            .result(method::Status::NAME, &value)
            .unwrap();
        let text: FleetText<'_> = serde_json::from_str(raw.get()).unwrap();
        assert_eq!(text.parent_id, self.root_id);
        text.text.as_bytes().to_vec()
    }

    /// The summary and table answers, read now, checked against the published schema and
    /// against each other.
    async fn answers(&self) -> (String, String) {
        let summary = self
            .status(StatusParams {
                summary: true,
                ..StatusParams::default()
            })
            .await;
        let table = self
            .status(StatusParams {
                table: true,
                ..StatusParams::default()
            })
            .await;
        let mut schema = ProtocolSchema::load();
        for raw in [&summary, &table] {
            let value: Value = serde_json::from_str(raw.get()).unwrap();
            schema.result(method::Status::NAME, &value).unwrap();
        }
        (summary.get().to_owned(), table.get().to_owned())
    }
}

/// Rows as the table answer carries them, from the summary answer (both read with the
/// types `subagent-status` reads them with).
fn table_of(summary: &str, root: Uuid) -> Vec<TableRow<'static>> {
    let fleet: FleetSummary<'_> = serde_json::from_str(summary).unwrap();
    assert_eq!(fleet.parent_id, root);
    fleet
        .children
        .iter()
        .map(|row| TableRow::of(row, root).into_owned())
        .collect()
}

/// Polls until the summary rows satisfy `done`; both answers then.
async fn until(
    f: &Fixture,
    what: &str,
    done: impl Fn(&FleetSummary<'_>) -> bool,
) -> (String, String) {
    let deadline = Instant::now() + ANSWER;
    loop {
        let (summary, table) = f.answers().await;
        let fleet: FleetSummary<'_> = serde_json::from_str(&summary).unwrap();
        let rows: FleetTable<'_> = serde_json::from_str(&table).unwrap();
        // Read one after the other, the two may straddle a change; when they agree they
        // must agree exactly.
        if done(&fleet) && rows.rows == table_of(&summary, f.root_id) {
            if fleet.children.iter().all(|c| c.ended_at.is_some()) {
                // No clock in the table: the text answer is exactly what `subagent-status`
                // would print from these rows.
                let mut printed = Vec::new();
                write_fleet_table(&mut printed, f.root_id, &rows.rows).unwrap();
                let (text, again) = (f.text().await, f.text().await);
                if text == printed {
                    assert_eq!(again, text, "{what}: an unchanged fleet's text changed");
                    return (summary, table);
                }
            } else {
                return (summary, table);
            }
        }
        assert!(Instant::now() < deadline, "{what}: not reached: {summary}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kept_answers_follow_every_change_and_repeat_while_nothing_changes() {
    let f = start("status-answers");
    let client = Client::connect_path(&f.socket, ANSWER).await.unwrap();
    let (empty, empty_table) = until(&f, "an empty fleet", |s| s.children.is_empty()).await;
    assert_eq!(
        serde_json::from_str::<Value>(&empty_table).unwrap(),
        json!({"parentId": f.root_id, "rows": []})
    );

    // A new identity shows at once; then its settle.
    let params = json!({
        "request": {"assignment": "Survey the tree", "profile": "scout"},
        "background": true,
    });
    let admitted = client.call("delegate", params).await.unwrap();
    let id = admitted["children"][0]["id"].as_str().unwrap().to_owned();
    let (queued, _) = until(&f, "the admitted row", |s| s.children.len() == 1).await;
    assert_ne!(queued, empty);
    let (settled, settled_table) = until(&f, "the settled row", |s| {
        s.children
            .iter()
            .all(|c| c.status == Status::Settled && c.disposed)
    })
    .await;

    // Nothing changes: the same texts again.
    assert_eq!(f.answers().await, (settled.clone(), settled_table.clone()));

    // A presence-only change (idle → parked: the snapshot itself is unchanged).
    let target = format!("{id}@1");
    client
        .call("park", json!({ "target": target }))
        .await
        .unwrap();
    let (parked, _) = until(&f, "the parked presence", |s| {
        s.children[0].presence == Some(Presence::Parked)
    })
    .await;
    assert_ne!(parked, settled);

    // A new generation replaces the row.
    client
        .call(
            "revive",
            json!({ "target": target, "assignment": "Survey it again" }),
        )
        .await
        .unwrap();
    until(&f, "the second generation", |s| {
        s.children.len() == 1 && s.children[0].generation == 2
    })
    .await;
    let _ = std::fs::remove_dir_all(&f.base);
}
