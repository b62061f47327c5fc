//! Policy is resolved at invocation: a serving coordinator with a real agent dir and project
//! dir, the real control service on a socket and simulated workers. Each test edits
//! `delegation.json` while work runs and shows that the next admission, dequeue, followup and
//! resume obey the file as it is then, that running work keeps the limits it was admitted
//! with, that a lowered concurrency evicts nothing, and that a corrupt file refuses new work
//! (naming the file) while `status` and `stop` go on working.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

#[path = "support/service_fixture.rs"]
mod service_fixture;
use service_fixture::models;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use slate::config::live::LivePolicy;
use slate::control::service::Service;
use slate::control::{Client, ClientError, ControlError, Handler, Metadata, Server, ServerConfig};
use slate::policy::capabilities::pi_offered_tools;
use slate::runtime::{RuntimeConfig, RuntimeHandle, RuntimeReport, spawn_watching};
use slate::sim::{Script, Step};
use slate::worker::sim::{BookEntry, ScriptBook, SimBackend};
use tokio::task::JoinHandle;
use uuid::Uuid;

const ANSWER: Duration = Duration::from_secs(20);

struct Fixture {
    _base: tempfile::TempDir,
    operator: PathBuf,
    client: Client,
    policy: Arc<LivePolicy>,
    rt: RuntimeHandle,
    join: JoinHandle<RuntimeReport>,
    server: JoinHandle<()>,
    stop: tokio::sync::oneshot::Sender<()>,
}

fn request(ms: u64) -> Step {
    Step::Request {
        ms,
        text: "done".into(),
        input_tokens: 10,
        output_tokens: 2,
        cost: None,
    }
}

fn entry(prefix: &str, steps: Vec<Step>) -> BookEntry {
    BookEntry {
        assignment_prefix: prefix.into(),
        script: Script {
            setup_error: None,
            steps,
        },
    }
}

/// `hold N`: thinks N ms, then one request. `count`: five requests. Anything else: one
/// quick request. A resumed window makes one quick request.
fn book() -> ScriptBook {
    ScriptBook {
        scripts: vec![
            entry("hold 1500", vec![Step::Think(1500), request(10)]),
            entry("hold 3000", vec![Step::Think(3000), request(10)]),
            entry("hold 9000", vec![Step::Think(9000), request(10)]),
            entry("count", (0..5).map(|_| request(20)).collect()),
            entry(
                "slow count",
                std::iter::once(Step::Think(800))
                    .chain((0..5).map(|_| request(20)))
                    .collect(),
            ),
        ],
        default: Script {
            setup_error: None,
            steps: vec![request(10)],
        },
        resumed: Some(Script {
            setup_error: None,
            steps: vec![request(10)],
        }),
    }
}

/// A coordinator for `<tmp>/work` with the operator file `<tmp>/agent/delegation.json`
/// holding `operator`, wired exactly as `slate serve` wires it.
async fn start(operator: &Value) -> Fixture {
    let base = tempfile::tempdir().unwrap();
    for dir in ["work", "agent"] {
        std::fs::create_dir_all(base.path().join(dir)).unwrap();
    }
    let agent = base.path().join("agent");
    let operator_path = agent.join("delegation.json");
    std::fs::write(&operator_path, operator.to_string()).unwrap();
    let cwd = std::fs::canonicalize(base.path().join("work")).unwrap();
    let policy = Arc::new(LivePolicy::watch_in(&cwd, &agent, None).unwrap());
    let root_id = Uuid::new_v4();
    let config = RuntimeConfig {
        root_id,
        policy: policy.scheduling().unwrap(),
        id_seed: 7,
        delegation_dir: base.path().join("session").join(root_id.to_string()),
        event_log: false,
        kill_grace: Duration::from_millis(300),
    };
    let (rt, join) =
        spawn_watching(config, Arc::new(SimBackend::new(book())), policy.clone()).unwrap();
    let service: Arc<dyn Handler> = Arc::new(Service::new(
        rt.clone(),
        policy.clone(),
        models(),
        pi_offered_tools(),
    ));
    let socket = base.path().join("run").join(format!("{root_id}.sock"));
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
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(server.run(service, async move {
        let _ = stopped.await;
    }));
    let client = Client::connect_path(&socket, ANSWER).await.unwrap();
    Fixture {
        _base: base,
        operator: operator_path,
        client,
        policy,
        rt,
        join,
        server,
        stop,
    }
}

impl Fixture {
    /// Replace the operator file (a new inode, as an editor's atomic save does).
    fn write_operator(&self, text: &str) {
        let tmp = self.operator.with_extension("json.tmp");
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, &self.operator).unwrap();
    }

    async fn call(&self, method: &str, params: Value) -> Result<Value, ClientError> {
        tokio::time::timeout(ANSWER, self.client.call(method, params))
            .await
            .unwrap_or_else(|_| panic!("{method}: no answer within {ANSWER:?}"))
    }

    async fn ok(&self, method: &str, params: Value) -> Value {
        self.call(method, params)
            .await
            .unwrap_or_else(|e| panic!("{method}: {e:?}"))
    }

    async fn refused(&self, method: &str, params: Value) -> ControlError {
        match self.call(method, params).await {
            Err(ClientError::Remote(error)) => error,
            other => panic!("{method}: expected a refusal, got {other:?}"),
        }
    }

    /// Admit one background task; its `UUID@generation`.
    async fn delegate(&self, task: Value) -> String {
        let reply = self
            .ok("delegate", json!({"request": task, "background": true}))
            .await;
        assert_eq!(reply["kind"], "admitted", "{reply}");
        let child = &reply["children"][0];
        format!("{}@{}", child["id"].as_str().unwrap(), child["generation"])
    }

    /// The current snapshot of `target`'s identity.
    async fn snapshot(&self, target: &str) -> Value {
        let id = target.split('@').next().unwrap();
        let status = self.ok("status", json!({})).await;
        status["children"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("{target} is not in {status}"))
    }

    async fn status_of(&self, target: &str) -> String {
        self.snapshot(target).await["status"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// Polls until `target` has `status`; its snapshot then.
    async fn until(&self, target: &str, status: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let snapshot = self.snapshot(target).await;
            if snapshot["status"] == status {
                return snapshot;
            }
            assert!(
                Instant::now() < deadline,
                "{target} never became {status}: {snapshot}"
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    async fn active_permits(&self) -> u64 {
        self.ok("status", json!({})).await["stats"]["activePermits"]
            .as_u64()
            .unwrap()
    }

    async fn finish(self) {
        let _ = self.stop.send(());
        let _ = self.server.await;
        self.rt.shutdown().await.unwrap();
        drop(self.rt);
        let _ = self.join.await;
    }
}

fn scout(assignment: &str) -> Value {
    json!({"assignment": assignment, "profile": "scout"})
}

fn is_active(status: &str) -> bool {
    matches!(status, "setup" | "running")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lowering_concurrency_evicts_nothing_and_stops_dequeue_until_below_the_new_maximum() {
    let f = start(&json!({"scheduling": {"concurrency": 2}})).await;
    let short = f.delegate(scout("hold 1500")).await;
    let long = f.delegate(scout("hold 3000")).await;
    let waiting = f.delegate(scout("quick")).await;
    assert_eq!(f.status_of(&waiting).await, "queued");

    f.write_operator(r#"{"scheduling": {"concurrency": 1}}"#);
    let policy = f.ok("policy", json!({})).await;
    assert_eq!(
        policy["concurrency"], 1,
        "the policy reply shows the file: {policy}"
    );
    // Both running children keep running: two permits against a maximum of one.
    assert!(is_active(&f.status_of(&short).await));
    assert!(is_active(&f.status_of(&long).await));
    assert_eq!(f.active_permits().await, 2);

    f.until(&short, "settled").await;
    // One active child is not below the new maximum of one: the queued one waits.
    assert!(is_active(&f.status_of(&long).await));
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(f.status_of(&waiting).await, "queued");

    f.until(&long, "settled").await;
    f.until(&waiting, "settled").await;
    f.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_raised_concurrency_starts_queued_work_without_any_other_event() {
    let f = start(&json!({"scheduling": {"concurrency": 1}})).await;
    let first = f.delegate(scout("hold 9000")).await;
    let second = f.delegate(scout("hold 9000")).await;
    f.until(&first, "running").await;
    assert_eq!(f.status_of(&second).await, "queued");
    f.write_operator(r#"{"scheduling": {"concurrency": 2}}"#);
    let started = Instant::now();
    // No client request: the runtime's own poll while work is queued must notice.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let snapshot =
            f.rt.query({
                let id = second.clone();
                move |c| {
                    c.list()
                        .into_iter()
                        .find(|s| s.child_ref().to_string() == id)
                        .map(|s| s.status)
                }
            })
            .await
            .unwrap();
        if snapshot.is_some_and(|s| s != slate::core::Status::Queued) {
            break;
        }
        assert!(Instant::now() < deadline, "the queued task never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(started.elapsed() < Duration::from_secs(2));
    f.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lowered_request_limit_binds_the_next_admission_and_not_running_work() {
    let f = start(&json!({})).await;
    let running = f.delegate(scout("slow count")).await;
    f.until(&running, "running").await;
    f.write_operator(r#"{"scheduling": {"requests": 2}}"#);

    let next = f.delegate(scout("count")).await;
    let limited = f.until(&next, "cancelled").await;
    assert_eq!(limited["limits"]["requests"], 2, "{limited}");
    assert_eq!(limited["limitReason"], "requests", "{limited}");

    // Admitted under 100 requests, it makes its five and settles.
    let kept = f.until(&running, "settled").await;
    assert_eq!(kept["limits"]["requests"], 100, "{kept}");
    assert_eq!(kept["telemetry"]["requests"], 5, "{kept}");
    f.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_spawn_grant_refuses_the_next_admission_that_asks_for_it() {
    let f = start(&json!({"general": {"spawn": ["scout", "review"]}})).await;
    let asks = json!({"assignment": "quick", "profile": "general", "spawn": ["review"]});
    let admitted = f.delegate(asks.clone()).await;
    f.until(&admitted, "settled").await;

    f.write_operator(r#"{"general": {"spawn": ["scout"]}}"#);
    let error = f
        .refused("delegate", json!({"request": asks, "background": true}))
        .await;
    assert_eq!(error.code, "invalid-request");
    assert!(error.message.contains("spawn"), "{}", error.message);
    let profiles = f.ok("profiles", json!({})).await;
    let general = profiles["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "general")
        .cloned()
        .unwrap();
    assert_eq!(general["spawn"], json!(["scout"]), "{general}");
    f.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_followup_gets_the_profile_tools_as_they_are_at_invocation() {
    let f = start(&json!({})).await;
    let first = f
        .delegate(json!({"assignment": "quick", "profile": "general"}))
        .await;
    let settled = f.until(&first, "settled").await;
    assert_eq!(settled["tools"].as_array().unwrap().len(), 7, "{settled}");

    f.write_operator(r#"{"general": {"tools": ["read", "grep"]}}"#);
    let reply = f
        .ok(
            "followup",
            json!({"target": first, "assignment": "quick again"}),
        )
        .await;
    let renewed = &reply["children"][0];
    assert_eq!(renewed["generation"], 2, "{reply}");
    assert_eq!(renewed["tools"], json!(["read", "grep"]), "{reply}");
    f.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_window_is_bounded_by_the_current_deadline() {
    let f = start(&json!({"scheduling": {"deadlineMs": 600}})).await;
    let child = f.delegate(scout("hold 9000")).await;
    let paused = f.until(&child, "paused").await;
    assert_eq!(paused["limits"]["deadlineMs"], 600, "{paused}");

    f.write_operator(r#"{"scheduling": {"deadlineMs": 250}}"#);
    let reply = f
        .ok("resume", json!({"target": child, "assignment": "Continue"}))
        .await;
    let resumed = &reply["children"][0];
    let window = &resumed["window"];
    assert_eq!(window["number"], 2, "{reply}");
    assert_eq!(
        window["deadlineAt"].as_u64().unwrap() - window["startedAt"].as_u64().unwrap(),
        250,
        "{reply}"
    );
    assert_eq!(resumed["limits"]["deadlineMs"], 250, "{reply}");
    f.until(&child, "settled").await;
    f.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_raised_deadline_does_not_lengthen_a_resume_beyond_its_admitted_limit() {
    let f = start(&json!({"scheduling": {"deadlineMs": 600}})).await;
    let child = f.delegate(scout("hold 9000")).await;
    f.until(&child, "paused").await;
    f.write_operator(r#"{"scheduling": {"deadlineMs": 5000}}"#);
    let reply = f
        .ok("resume", json!({"target": child, "assignment": "Continue"}))
        .await;
    let window = &reply["children"][0]["window"];
    assert_eq!(
        window["deadlineAt"].as_u64().unwrap() - window["startedAt"].as_u64().unwrap(),
        600,
        "{reply}"
    );
    f.finish().await;
}

fn names(error: &ControlError, file: &Path) -> bool {
    error.message.contains(&file.display().to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_file_refuses_new_work_naming_it_while_status_and_stop_work() {
    let f = start(&json!({"scheduling": {"deadlineMs": 600}})).await;
    let idle = f.delegate(scout("quick")).await;
    let paused = f.delegate(scout("hold 9000")).await;
    f.until(&idle, "settled").await;
    f.until(&paused, "paused").await;
    f.write_operator(r#"{"scheduling": {"concurrency": 4}}"#);
    let running = f.delegate(scout("hold 9000")).await;

    f.write_operator("{ not json");
    for (method, params) in [
        (
            "delegate",
            json!({"request": scout("quick"), "background": true}),
        ),
        ("followup", json!({"target": idle, "assignment": "again"})),
        (
            "resume",
            json!({"target": paused, "assignment": "Continue"}),
        ),
        ("policy", json!({})),
        ("profiles", json!({})),
    ] {
        let error = f.refused(method, params).await;
        assert_eq!(error.code, "invalid-request", "{method}: {error:?}");
        assert!(names(&error, &f.operator), "{method}: {}", error.message);
        assert!(error.message.contains('$'), "{method}: {}", error.message);
        assert!(error.data.is_some(), "{method}: every problem as data");
    }
    // Non-admitting controls go on working.
    assert!(is_active(&f.status_of(&running).await));
    let stopped = f.ok("stop", json!({"target": running})).await;
    assert_eq!(stopped["kind"], "snapshot", "{stopped}");
    f.until(&running, "cancelled").await;

    // Fixed: work is admitted again, under the fixed file.
    f.write_operator(r#"{"scheduling": {"concurrency": 3, "requests": 7}}"#);
    let again = f.delegate(scout("quick")).await;
    let snapshot = f.until(&again, "settled").await;
    assert_eq!(snapshot["limits"]["requests"], 7, "{snapshot}");
    assert_eq!(f.ok("policy", json!({})).await["concurrency"], 3);
    f.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unchanged_policy_is_resolved_once_however_often_it_is_asked() {
    let f = start(&json!({"scheduling": {"concurrency": 3}})).await;
    // Let the fresh stamps age out of the racy window first.
    tokio::time::sleep(slate::config::live::RACY_WINDOW + Duration::from_millis(100)).await;
    let before = f.policy.resolutions();
    for _ in 0..50 {
        assert_eq!(f.ok("policy", json!({})).await["concurrency"], 3);
    }
    // At most one re-resolution: the one that renews the racy stamps.
    assert!(f.policy.resolutions() <= before + 1);
    let delegated = f.delegate(scout("quick")).await;
    f.until(&delegated, "settled").await;
    assert!(f.policy.resolutions() <= before + 1);
    f.finish().await;
}
