//! The tokio runtime with the simulated backend: effects really happen (task directories,
//! artifacts, event log, timers, steering, shutdown escalation).

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use slate::core::{
    ChildRef, Input, LimitOverrides, MessageMode, Party, Reply, Role, Status, TaskSpec, WorkerStart,
};
use slate::policy::scheduling::SchedulingPolicy;
use slate::runtime::{
    RuntimeConfig, RuntimeEvent, RuntimeHandle, RuntimeReport, WorkerBackend, WorkerCommand,
    WorkerDirs, spawn,
};
use slate::sim::{Script, Step};
use slate::store::event_log::read_history;
use slate::worker::sim::{BookEntry, ScriptBook, SimBackend};
use tokio::sync::mpsc;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("slate-runtime-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn text(ms: u64, answer: &str) -> Step {
    Step::Request {
        ms,
        text: answer.into(),
        input_tokens: 100,
        output_tokens: 20,
        cost: Some(0.001),
    }
}

fn book() -> ScriptBook {
    let entry = |prefix: &str, steps: Vec<Step>| BookEntry {
        assignment_prefix: prefix.into(),
        script: Script {
            setup_error: None,
            steps,
        },
    };
    ScriptBook {
        scripts: vec![
            entry("slow", vec![Step::Think(60_000), text(10, "late")]),
            entry("hang", vec![Step::Hang]),
            entry(
                "fail",
                vec![
                    text(10, "trying"),
                    Step::Fail("provider returned 500".into()),
                ],
            ),
            entry(
                "tools",
                vec![
                    Step::Tool {
                        name: "read".into(),
                        ms: 5,
                        error: false,
                        args: None,
                        output: None,
                    },
                    Step::Tool {
                        name: "grep".into(),
                        ms: 5,
                        error: false,
                        args: None,
                        output: None,
                    },
                    Step::Tool {
                        name: "ls".into(),
                        ms: 5,
                        error: false,
                        args: None,
                        output: None,
                    },
                    text(10, "done"),
                ],
            ),
        ],
        default: Script {
            setup_error: None,
            steps: vec![text(20, "  Answer with spaces.\n")],
        },
        resumed: None,
    }
}

fn config(dir: &Path, concurrency: u32) -> RuntimeConfig {
    RuntimeConfig {
        root_id: uuid::Uuid::from_u128(0xABCD),
        policy: SchedulingPolicy {
            concurrency,
            ..SchedulingPolicy::default()
        },
        id_seed: 5,
        delegation_dir: dir.join("delegation").join("abcd"),
        event_log: true,
        kill_grace: Duration::from_millis(300),
    }
}

fn start(
    dir: &Path,
    concurrency: u32,
    backend: Arc<dyn WorkerBackend>,
) -> (RuntimeHandle, tokio::task::JoinHandle<RuntimeReport>) {
    spawn(config(dir, concurrency), backend).unwrap()
}

fn scout(assignment: &str, cwd: &Path) -> TaskSpec {
    TaskSpec::new(assignment, Role::Scout, cwd.display().to_string())
}

fn admitted(reply: &Reply) -> Vec<ChildRef> {
    match reply {
        Reply::Admitted { children, .. } => children
            .iter()
            .map(slate::core::ChildSnapshot::child_ref)
            .collect(),
        other => panic!("not admitted: {other:?}"),
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[tokio::test]
async fn a_foreground_batch_runs_publishes_and_logs() {
    let dir = temp_dir("batch");
    let (rt, join) = start(&dir, 2, Arc::new(SimBackend::new(book())));
    let tasks = vec![
        scout("first", &dir),
        scout("tools task", &dir),
        scout("fail now", &dir),
    ];
    let fg = rt.delegate(Party::Root, tasks).await.unwrap().unwrap();
    let refs = admitted(&fg.admitted);
    let outcome = tokio::time::timeout(Duration::from_secs(10), fg.outcome)
        .await
        .unwrap()
        .unwrap();
    let statuses: Vec<Status> = outcome.outcomes.iter().map(|s| s.status).collect();
    assert_eq!(
        statuses,
        vec![Status::Settled, Status::Settled, Status::Failed]
    );
    assert!(
        outcome
            .outcomes
            .iter()
            .all(|s| s.disposed && s.ended_at.is_some())
    );

    // result.txt is the exact last assistant text; `result` is trimmed.
    let first = &outcome.outcomes[0];
    assert_eq!(first.result.as_deref(), Some("Answer with spaces."));
    let text_path = first
        .artifacts
        .as_ref()
        .and_then(|a| a.text.clone())
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(&text_path).unwrap(),
        "  Answer with spaces.\n"
    );
    assert_eq!(mode(Path::new(&text_path)), 0o600);
    let task_dir = Path::new(&text_path).parent().unwrap();
    assert_eq!(
        task_dir.file_name().unwrap().to_str().unwrap(),
        refs[0].directory_name()
    );
    assert_eq!(mode(task_dir), 0o700);
    assert_eq!(mode(&task_dir.join("agent")), 0o700);
    assert_eq!(mode(&task_dir.join("transcripts")), 0o700);
    assert_eq!(outcome.outcomes[1].tool_calls, 3);
    assert_sim_transcript(outcome.outcomes[1].transcript.as_deref().unwrap());
    assert_eq!(
        outcome.outcomes[2].error.as_deref(),
        Some("provider returned 500")
    );

    rt.shutdown().await.unwrap();
    let report = join.await.unwrap();
    assert_eq!(report.workers_started, 3);
    assert_eq!(report.workers_killed, 0);
    let history = read_history(&config(&dir, 2).delegation_dir.join("events.jsonl")).unwrap();
    let last = history.snapshot(refs[0]).unwrap();
    assert_eq!(
        last.status,
        Status::Settled,
        "the log ends with the final snapshot"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The simulated worker writes pi's session format: a version-3 header, then `message`
/// entries with 8-hex ids chained by `parentId`, ISO timestamps, and the conversation.
fn assert_sim_transcript(path: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    let entries: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(entries[0]["type"], "session");
    assert_eq!(entries[0]["version"], 3);
    let mut parent = serde_json::Value::Null;
    let mut roles = Vec::new();
    for e in &entries[1..] {
        assert_eq!(e["type"], "message");
        let id = e["id"].as_str().unwrap();
        assert!(
            id.len() == 8 && id.chars().all(|c| c.is_ascii_hexdigit()),
            "{id}"
        );
        assert_eq!(e["parentId"], parent, "the parentId chain");
        assert!(e["timestamp"].as_str().unwrap().ends_with('Z'));
        parent = e["id"].clone();
        roles.push(e["message"]["role"].as_str().unwrap().to_owned());
    }
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "toolResult",
            "assistant",
            "toolResult",
            "assistant",
            "toolResult",
            "assistant"
        ]
    );
    assert_eq!(entries[1]["message"]["content"][0]["text"], "tools task");
    assert_eq!(entries[2]["message"]["content"][0]["type"], "toolCall");
    assert_eq!(entries[2]["message"]["content"][0]["name"], "read");
    assert_eq!(
        entries[3]["message"]["toolCallId"],
        entries[2]["message"]["content"][0]["id"]
    );
}

#[tokio::test]
async fn stop_cancels_a_running_worker_and_releases_its_permit() {
    let dir = temp_dir("stop");
    let (rt, join) = start(&dir, 1, Arc::new(SimBackend::new(book())));
    let mut events = rt.subscribe();
    let reply = rt
        .call({
            let tasks = vec![scout("slow one", &dir), scout("second", &dir)];
            move |request| Input::Admit {
                request,
                actor: Party::Root,
                tasks,
                background: true,
            }
        })
        .await
        .unwrap()
        .unwrap();
    let refs = admitted(&reply);
    // Wait until the first is running.
    loop {
        if let RuntimeEvent::Registry(e) = events.recv().await.unwrap()
            && e.child.child_ref() == refs[0]
            && e.child.status == Status::Running
        {
            break;
        }
    }
    let target = refs[0];
    rt.call(move |request| Input::Stop {
        request,
        actor: Party::Root,
        target,
    })
    .await
    .unwrap()
    .unwrap();
    // One background outcome for the call, after both drained.
    let outcome = loop {
        if let RuntimeEvent::Outcome(o) = events.recv().await.unwrap() {
            break o;
        }
    };
    assert_eq!(outcome.outcomes[0].status, Status::Cancelled);
    assert_eq!(
        outcome.outcomes[1].status,
        Status::Settled,
        "the queued sibling ran after the permit was released"
    );
    assert!(outcome.outcomes[0].artifacts.is_some() || outcome.outcomes[0].error.is_some());
    rt.shutdown().await.unwrap();
    join.await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn steering_reaches_the_worker_with_real_receipt_states() {
    let dir = temp_dir("steer");
    let (rt, join) = start(&dir, 1, Arc::new(SimBackend::new(book())));
    let mut events = rt.subscribe();
    let reply = rt
        .call({
            let tasks = vec![scout("slow steer", &dir)];
            move |request| Input::Admit {
                request,
                actor: Party::Root,
                tasks,
                background: true,
            }
        })
        .await
        .unwrap()
        .unwrap();
    let target = admitted(&reply)[0];
    loop {
        if let RuntimeEvent::Registry(e) = events.recv().await.unwrap()
            && e.child.status == Status::Running
        {
            break;
        }
    }
    let receipt = rt
        .call(move |request| Input::Steer {
            request,
            target,
            text: "focus".into(),
        })
        .await
        .unwrap()
        .unwrap();
    let Reply::Message { message } = receipt else {
        panic!("receipt expected")
    };
    assert_eq!(message.mode, MessageMode::Steer);
    let id = message.id;
    let waited = rt
        .call(move |request| Input::Wait {
            request,
            actor: Party::Root,
            target: None,
            message_id: Some(id),
            timeout_ms: 5000,
        })
        .await
        .unwrap()
        .unwrap();
    let Reply::Wait { result } = waited else {
        panic!("wait reply expected")
    };
    assert!(format!("{result:?}").contains("Delivered"), "{result:?}");
    // Like pi, the worker's session records the delivered steer as a user message.
    let transcript = rt
        .snapshot(target)
        .await
        .unwrap()
        .and_then(|s| s.transcript)
        .unwrap();
    let users: Vec<String> = std::fs::read_to_string(transcript)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["message"]["role"] == "user")
        .map(|e| {
            e["message"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(users, ["slow steer", "focus"]);
    rt.shutdown().await.unwrap();
    join.await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn shutdown_escalates_against_a_worker_that_ignores_abort() {
    let dir = temp_dir("hang");
    let (rt, join) = start(&dir, 2, Arc::new(SimBackend::new(book())));
    let reply = rt
        .call({
            let tasks = vec![
                scout("hang forever", &dir),
                scout("slow too", &dir),
                scout("queued", &dir),
            ];
            move |request| Input::Admit {
                request,
                actor: Party::Root,
                tasks,
                background: true,
            }
        })
        .await
        .unwrap()
        .unwrap();
    let refs = admitted(&reply);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let hung = refs[0];
    rt.call(move |request| Input::Stop {
        request,
        actor: Party::Root,
        target: hung,
    })
    .await
    .unwrap()
    .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Stopping does not fake completion: the worker ignores abort and stays draining.
    assert_eq!(
        rt.snapshot(hung).await.unwrap().unwrap().status,
        Status::Draining
    );
    tokio::time::timeout(Duration::from_secs(10), rt.shutdown())
        .await
        .unwrap()
        .unwrap();
    let report = join.await.unwrap();
    assert!(report.workers_killed >= 1, "{report:?}");
    let history = read_history(&config(&dir, 2).delegation_dir.join("events.jsonl")).unwrap();
    for r in &refs {
        let s = history.snapshot(*r).unwrap();
        assert!(s.disposed, "{r} not disposed");
        assert_eq!(s.status, Status::Cancelled, "{r}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn dropping_every_handle_shuts_the_runtime_down() {
    let dir = temp_dir("drop");
    let (rt, join) = start(&dir, 1, Arc::new(SimBackend::new(book())));
    rt.call({
        let tasks = vec![scout("slow dropped", &dir)];
        move |request| Input::Admit {
            request,
            actor: Party::Root,
            tasks,
            background: true,
        }
    })
    .await
    .unwrap()
    .unwrap();
    drop(rt);
    let report = tokio::time::timeout(Duration::from_secs(10), join)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(report.workers_started, 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn deadlines_pause_in_real_time_and_resume_continues() {
    let dir = temp_dir("deadline");
    let (rt, join) = start(&dir, 1, Arc::new(SimBackend::new(book())));
    let mut task = scout("slow deadline", &dir);
    task.limits = LimitOverrides {
        deadline_ms: Some(150),
        ..LimitOverrides::default()
    };
    let fg = rt.delegate(Party::Root, vec![task]).await.unwrap().unwrap();
    let target = admitted(&fg.admitted)[0];
    let outcome = tokio::time::timeout(Duration::from_secs(10), fg.outcome)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(outcome.outcomes[0].status, Status::Paused);
    assert!(outcome.outcomes[0].retained_context);
    let resumed = rt
        .call(move |request| Input::Resume {
            request,
            actor: Party::Root,
            target,
            assignment: "Continue".into(),
        })
        .await
        .unwrap();
    assert!(resumed.is_ok(), "{resumed:?}");
    rt.shutdown().await.unwrap();
    join.await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// A backend that breaks publication: it puts a directory where `result.txt` goes.
struct BlockResult(SimBackend);

impl WorkerBackend for BlockResult {
    fn start(
        &self,
        start: WorkerStart,
        dirs: WorkerDirs,
        identity: slate::runtime::WorkerIdentity,
        events: slate::runtime::backend::EventSink,
    ) -> mpsc::UnboundedSender<WorkerCommand> {
        std::fs::create_dir(dirs.task.join("result.txt")).unwrap();
        self.0.start(start, dirs, identity, events)
    }
    fn name(&self) -> &'static str {
        "block-result"
    }
}

#[tokio::test]
async fn a_persistence_error_fails_an_otherwise_successful_task_visibly() {
    let dir = temp_dir("persist");
    let (rt, join) = start(&dir, 1, Arc::new(BlockResult(SimBackend::new(book()))));
    let fg = rt
        .delegate(Party::Root, vec![scout("first", &dir)])
        .await
        .unwrap()
        .unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(10), fg.outcome)
        .await
        .unwrap()
        .unwrap();
    let s = &outcome.outcomes[0];
    assert_eq!(s.status, Status::Failed);
    assert!(
        s.error
            .as_deref()
            .unwrap()
            .contains("artifact persistence failed"),
        "{:?}",
        s.error
    );
    let artifacts = s.artifacts.as_ref().unwrap();
    assert!(
        artifacts.text.is_none(),
        "no reference to an unwritten file"
    );
    assert!(artifacts.error.as_deref().unwrap().contains("result.txt"));
    assert_eq!(
        s.result.as_deref(),
        Some("Answer with spaces."),
        "the text result is not lost"
    );
    rt.shutdown().await.unwrap();
    join.await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
