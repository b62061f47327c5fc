//! Issue 22, "Outcomes that must not change": what a run ends with is what every surface says,
//! and nothing reads one outcome as another. Real pi 1.6 workers against the fake LLM where a
//! worker is involved (without pi these print `SKIPPED: …` and pass, except under `CI=true`).
//!
//! - item 4: a present `null` structured value (and every other JSON type) stays present in
//!   the socket answer, `events.jsonl`, `structured.json` and `slate --json` output;
//! - item 5: a delegating child's deadline pauses its grandchild (`ancestor deadline`,
//!   resumable) instead of cancelling it;
//! - item 6: one `slate handoff` of a session at a time (a lock), and a failed `consumed`
//!   write is exit 1;
//! - item 7: a coordinator at its connection limit is `busy` (exit 4) for `slate status`,
//!   never a broken pipe or a reset (exit 2);
//! - item 8: an error quoting a path with controls shows every byte escaped, its data as
//!   text; `--json` escapes every control and bidi character.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

#[path = "support/fake_llm.rs"]
mod fake_llm;
#[path = "support/pi_env.rs"]
mod pi_env;
#[path = "support/pi_runtime.rs"]
mod pi_runtime;
#[path = "support/service_fixture.rs"]
mod service_fixture;

use std::io::{BufRead as _, BufReader, Write as _};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use pi_runtime::{Env, OUTCOME_TIMEOUT, delegate_and_wait};
use serde_json::{Value, json};
use slate::core::{
    ChildSnapshot, Coordinator, Input, LimitOverrides, Party, PauseReason, Role, Status,
};

const SLATE: &str = env!("CARGO_BIN_EXE_slate");

/// An assignment for the `CALLS` scenario: each `(tool, arguments)` is one model tool call.
fn calls(title: &str, script: &[(&str, Value)]) -> String {
    use std::fmt::Write as _;
    let mut text = format!("SCENARIO:CALLS {title}");
    for (tool, args) in script {
        let _ = write!(text, "\nCALL: {tool} {args}");
    }
    text
}

// ---------------------------------------------------------------------------------------------
// Item 5: a pause is never read as a cancellation.

/// The general child's window: long enough for its pi to start and its scout to be running
/// on two busy cores, short enough for the test.
const CHILD_DEADLINE_MS: u64 = 10_000;

#[tokio::test]
async fn a_delegating_childs_deadline_pauses_its_grandchild_resumably() {
    let Some(env) = Env::real("outcomes_ancestor_deadline") else {
        return;
    };
    let marker = "deadline-parent";
    let mut task = env.task(
        &calls(
            marker,
            &[(
                "delegate_task",
                json!({"assignment": "SCENARIO:SLOW120 slow-scout", "profile": "scout"}),
            )],
        ),
        Role::General,
    );
    task.spawn = vec![Role::Scout, Role::Review];
    task.limits = LimitOverrides {
        deadline_ms: Some(CHILD_DEADLINE_MS),
        ..LimitOverrides::default()
    };
    let (rt, join) = env.start(4);
    let (refs, outcome) = delegate_and_wait(&rt, vec![task]).await;
    let child = refs[0];
    let s = &outcome.outcomes[0];
    assert_eq!(s.status, Status::Paused, "{:?}", s.error);
    assert_eq!(s.pause_reason, Some(PauseReason::Deadline));

    let fleet: Vec<ChildSnapshot> = rt.query(Coordinator::list).await.unwrap();
    let grandchild = fleet
        .iter()
        .find(|g| g.depth == 2)
        .unwrap_or_else(|| panic!("the scout was never admitted (slow start?): {fleet:?}"))
        .clone();
    assert_eq!(grandchild.parent_id, child.id);
    assert_eq!(
        grandchild.status,
        Status::Paused,
        "the child's pause reached its scout as a cancellation: {:?}",
        grandchild.error
    );
    assert_eq!(grandchild.pause_reason, Some(PauseReason::AncestorDeadline));
    assert_eq!(grandchild.error, None);
    assert!(!grandchild.disposed, "a paused scout stays resumable");
    assert!(grandchild.retained_context, "its conversation is kept");

    // Resumable in the order spec 003 gives: the parent generation first, then the scout.
    // The parent streams for a while (its completion would retire a running scout), the
    // scout answers at once.
    let resume = |target, text: &str| {
        let assignment = text.to_owned();
        rt.call(move |request| Input::Resume {
            request,
            actor: Party::Root,
            target,
            assignment,
        })
    };
    let resumed = resume(child, "SCENARIO:SLOW8 go on").await.unwrap();
    assert!(resumed.is_ok(), "{resumed:?}");
    // A child is resumed under a running parent.
    let deadline = tokio::time::Instant::now() + OUTCOME_TIMEOUT;
    loop {
        let s = rt.snapshot(child).await.unwrap().unwrap();
        if s.status == Status::Running {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline && !s.disposed,
            "the resumed child never ran: {s:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let resumed = resume(grandchild.child_ref(), "SCENARIO:TEXT go on")
        .await
        .unwrap();
    assert!(
        resumed.is_ok(),
        "the scout could not be resumed: {resumed:?}"
    );
    // The scout runs again, in its kept conversation, and ends settled (or, on a machine so
    // slow that its parent's new window ran out first, paused again): never cancelled.
    let scout = grandchild.child_ref();
    let deadline = tokio::time::Instant::now() + OUTCOME_TIMEOUT;
    let mut ran = false;
    loop {
        let s = rt.snapshot(scout).await.unwrap().unwrap();
        ran |= s.status == Status::Running;
        if ran && matches!(s.status, Status::Settled | Status::Paused) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline && s.status != Status::Cancelled,
            "the resumed scout: {s:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    rt.shutdown().await.unwrap();
    join.await.unwrap();
    assert!(env.leftovers().is_empty(), "no process left");
}

// ---------------------------------------------------------------------------------------------
// Item 4: a present `null` (and every JSON type) stays present on every surface.

/// `slate serve --backend pi --pi-session ID` over a private base (work dir, agent dir with
/// the fake provider, runtime dir, session dir), stopped and cleaned up when dropped.
struct Served {
    root: PathBuf,
    id: uuid::Uuid,
    pi: Vec<String>,
    serve: Option<Child>,
    _sandbox: pi_env::PiSandbox,
    _fake: fake_llm::FakeLlm,
}

impl Served {
    fn start(test: &str) -> Option<Self> {
        let pi = pi_env::pi_or_skip(test)?;
        let fake = fake_llm::FakeLlm::start().unwrap();
        let sandbox = pi_env::PiSandbox::new(test, &fake.base_url()).unwrap();
        let root =
            std::env::temp_dir().join(format!("slate-outcomes-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for dir in ["work", "agent", "run", "session", "home"] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        let root = std::fs::canonicalize(root).unwrap();
        for entry in std::fs::read_dir(&sandbox.agent_dir).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_file() {
                std::fs::copy(entry.path(), root.join("agent").join(entry.file_name())).unwrap();
            }
        }
        let mut served = Self {
            root,
            id: uuid::Uuid::new_v4(),
            pi: pi.argv,
            serve: None,
            _sandbox: sandbox,
            _fake: fake,
        };
        let mut serve = served.command();
        serve
            .args(["serve", "--backend", "pi", "--pi-session"])
            .arg(served.id.to_string())
            .arg("--session-dir")
            .arg(served.root.join("session"))
            .args(["--host-version", "1.6.0"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = serve.spawn().unwrap();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        assert!(first.starts_with("slate serve: parent"), "{first}");
        served.serve = Some(child);
        Some(served)
    }

    /// `slate` in this base, with pi's environment as the coordinator's workers get it.
    fn command(&self) -> Command {
        let mut cmd = Command::new(SLATE);
        for (key, _) in std::env::vars_os() {
            let k = key.to_string_lossy();
            if k.ends_with("_API_KEY") || k.starts_with("PI_") {
                cmd.env_remove(&key);
            }
        }
        cmd.current_dir(self.root.join("work"))
            .env("PI_CODING_AGENT_DIR", self.root.join("agent"))
            .env("PI_OFFLINE", "1")
            .env("PI_SKIP_VERSION_CHECK", "1")
            .env("PI_TELEMETRY", "0")
            .env("HOME", self.root.join("home"))
            .env("XDG_RUNTIME_DIR", self.root.join("run"))
            .env("XDG_CACHE_HOME", self.root.join("home/.cache"))
            .env("SLATE_PI", self.pi.join(" "))
            .env_remove("SLATE_SOCKET");
        cmd
    }

    fn slate(&self, args: &[&str]) -> Output {
        let parent = self.id.to_string();
        let mut cmd = self.command();
        cmd.arg("--json")
            .args(args)
            .args(["--parent", &parent])
            .stdin(Stdio::null());
        cmd.output().unwrap()
    }

    fn socket(&self) -> PathBuf {
        self.root.join(format!("run/slate/{}.sock", self.id))
    }

    fn events(&self) -> PathBuf {
        self.root
            .join(format!("session/delegation/{}/events.jsonl", self.id))
    }

    /// Ends the coordinator (stdin closed) and waits for it.
    fn stop(&mut self) {
        if let Some(mut serve) = self.serve.take() {
            drop(serve.stdin.take());
            let deadline = Instant::now() + Duration::from_secs(30);
            while serve.try_wait().unwrap().is_none() {
                assert!(Instant::now() < deadline, "slate serve did not stop");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(mut serve) = self.serve.take() {
            let _ = serve.kill();
            let _ = serve.wait();
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// `hello`, then one request, on a plain socket: the answer line.
fn request(socket: &Path, method: &str, params: &Value) -> Value {
    let mut stream = UnixStream::connect(socket).unwrap();
    stream.set_read_timeout(Some(OUTCOME_TIMEOUT)).unwrap();
    let lines = format!(
        "{}\n{}\n",
        json!({"id": 1, "method": "hello", "params": {"protocols": [2]}}),
        json!({"id": 2, "method": method, "params": params})
    );
    stream.write_all(lines.as_bytes()).unwrap();
    let mut reader = BufReader::new(stream);
    let mut answer = String::new();
    loop {
        answer.clear();
        reader.read_line(&mut answer).unwrap();
        let value: Value = serde_json::from_str(&answer).unwrap();
        if value["id"] == 2 {
            return value;
        }
    }
}

/// The structured value at `outcome` of a snapshot: `Some` when `value` is a member (a
/// present `null` is `Some(Null)`), `None` when it is absent.
fn value_of(snapshot: &Value) -> Option<Value> {
    snapshot["outcome"]
        .as_object()
        .unwrap_or_else(|| panic!("no outcome in {snapshot}"))
        .get("value")
        .cloned()
}

fn target_of(snapshot: &Value) -> String {
    format!(
        "{}@{}",
        snapshot["id"].as_str().unwrap(),
        snapshot["generation"].as_u64().unwrap()
    )
}

fn stdout_json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: stdout {:?} stderr {:?}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// Every JSON type as a submitted value, each with the schema that accepts exactly it.
fn every_json_type() -> Vec<(Value, Value)> {
    vec![
        (json!(null), json!({"type": "null"})),
        (json!(false), json!({"type": "boolean"})),
        (json!(0), json!({"type": "integer"})),
        (json!(2.5), json!({"type": "number"})),
        (json!(""), json!({"type": "string"})),
        (json!([null]), json!({"type": "array"})),
        (json!({"k": null}), json!({"type": "object"})),
    ]
}

#[test]
fn a_submitted_value_of_every_json_type_stays_present_on_every_surface() {
    let Some(mut served) = Served::start("json_types") else {
        return;
    };
    let submit = |i: usize, value: &Value| {
        format!(
            "SCENARIO:CALLS value-{i}\nCALL: submit_result {}",
            json!({"value": value})
        )
    };

    // The issue's own command: `--schema FILE` and a `null` value, one foreground task.
    let schema = served.root.join("null.schema.json");
    std::fs::write(&schema, r#"{"type":"null"}"#).unwrap();
    let out = served.slate(&[
        "delegate",
        "--schema",
        schema.to_str().unwrap(),
        &submit(0, &Value::Null),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let single = stdout_json(&out)["outcome"]["outcomes"][0].clone();
    assert_eq!(single["status"], "settled", "{single}");
    assert_eq!(
        value_of(&single),
        Some(Value::Null),
        "delegate --json: {single}"
    );

    // Every type in one batch (`--file`), each task with its own schema.
    let cases = every_json_type();
    let tasks: Vec<Value> = cases
        .iter()
        .enumerate()
        .map(|(i, (value, schema))| {
            json!({"assignment": submit(i + 1, value), "profile": "scout", "resultSchema": schema})
        })
        .collect();
    let file = served.root.join("batch.json");
    std::fs::write(&file, json!({"tasks": tasks}).to_string()).unwrap();
    let out = served.slate(&["delegate", "--file", file.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let outcomes = stdout_json(&out)["outcome"]["outcomes"].clone();
    let mut targets = vec![(target_of(&single), Value::Null)];
    for (i, (value, _)) in cases.iter().enumerate() {
        let s = &outcomes[i];
        assert_eq!(s["status"], "settled", "{s}");
        assert_eq!(value_of(s).as_ref(), Some(value), "delegate --json: {s}");
        targets.push((target_of(s), value.clone()));
    }

    for (target, value) in &targets {
        // The socket answer.
        let answer = request(&served.socket(), "status", &json!({"target": target}));
        let snapshot = &answer["result"]["snapshot"];
        assert!(snapshot.is_object(), "socket: {answer}");
        assert_eq!(value_of(snapshot).as_ref(), Some(value), "socket: {answer}");
        // `slate --json status TARGET` (the answer read into the CLI's types and written again).
        let status = stdout_json(&served.slate(&["status", target]));
        assert!(status["snapshot"].is_object(), "status --json: {status}");
        assert_eq!(
            value_of(&status["snapshot"]).as_ref(),
            Some(value),
            "status --json: {status}"
        );
        // structured.json.
        let path = snapshot["artifacts"]["structured"].as_str().unwrap();
        let written: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        assert_eq!(&written, value, "{path}");
    }

    // events.jsonl, as written and as read back.
    served.stop();
    let log = std::fs::read_to_string(served.events()).unwrap();
    for (target, value) in &targets {
        let id = target.split_once('@').unwrap().0;
        let last = log
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .rfind(|e| e["child"]["id"] == id)
            .unwrap_or_else(|| panic!("{target} not in events.jsonl"));
        assert_eq!(
            value_of(&last["child"]).as_ref(),
            Some(value),
            "events.jsonl: {last}"
        );
        // Read back into the typed event (as `status --parent` of an exited coordinator
        // reads its log) and written again.
        let event: slate::core::RegistryEvent = serde_json::from_value(last.clone()).unwrap();
        let again = serde_json::to_value(&event).unwrap();
        assert_eq!(
            value_of(&again["child"]).as_ref(),
            Some(value),
            "events.jsonl read back: {again}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Item 6: one handoff of a session at a time; a failed `consumed` write is a failure.

const SID: &str = "0b7e2c1e-2222-4000-8000-00000000000b";

/// A working directory, an agent dir and pi's session directory for the working directory.
struct HandoffEnv {
    _dir: tempfile::TempDir,
    cwd: PathBuf,
    agent: PathBuf,
    sessions: PathBuf,
    made: std::cell::Cell<u64>,
}

impl HandoffEnv {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let cwd = base.join("work");
        let agent = base.join("agent");
        std::fs::create_dir_all(&cwd).unwrap();
        let sessions = agent.join("sessions").join(format!(
            "--{}--",
            cwd.display()
                .to_string()
                .trim_start_matches('/')
                .replace('/', "-")
        ));
        std::fs::create_dir_all(&sessions).unwrap();
        Self {
            _dir: dir,
            cwd,
            agent,
            sessions,
            made: std::cell::Cell::new(0),
        }
    }

    /// A session as pi writes one (model, thinking level, a user message of `text`).
    fn session(&self, text: &str) -> PathBuf {
        use slate::store::session::{self, NewEntry};
        let n = self.made.get();
        self.made.set(n + 1);
        let s = session::create_session(
            &self.sessions,
            SID,
            &self.cwd.display().to_string(),
            None,
            &[
                NewEntry::ModelChange {
                    provider: "fake".to_owned(),
                    model_id: "fake-model".to_owned(),
                },
                NewEntry::ThinkingLevelChange {
                    level: "off".to_owned(),
                },
            ],
            1_796_000_000_000 + n,
        )
        .unwrap();
        let message = json!({"type": "message", "id": "abcdef12", "parentId": s.leaf(),
            "timestamp": "2026-11-30T02:50:49.589Z",
            "message": {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}});
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&s.path)
            .unwrap();
        f.write_all(format!("{message}\n").as_bytes()).unwrap();
        s.path
    }

    /// `slate handoff --session FILE` (under `prlimit` when `fsize` is given).
    fn handoff(&self, session: &Path, fsize: Option<u64>) -> Command {
        let mut cmd = match fsize {
            Some(bytes) => {
                let mut cmd = Command::new("prlimit");
                cmd.arg(format!("--fsize={bytes}")).arg(SLATE);
                cmd
            }
            None => Command::new(SLATE),
        };
        cmd.arg("handoff")
            .arg("--session")
            .arg(session)
            .current_dir(&self.cwd)
            .env("PI_CODING_AGENT_DIR", &self.agent)
            .env("HOME", self.agent.parent().unwrap())
            .env("XDG_RUNTIME_DIR", self.agent.parent().unwrap())
            .env_remove("SLATE_SOCKET")
            .stdin(Stdio::null());
        cmd
    }

    fn session_files(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&self.sessions)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        files
    }
}

/// The `slate-handoff-purpose` records of a session: `(status, attemptId)` in file order.
fn purposes(path: &Path) -> Vec<(String, String)> {
    slate::store::session::read(path)
        .unwrap()
        .entries
        .iter()
        .filter(|e| e.custom_type() == Some("slate-handoff-purpose"))
        .map(|e| {
            (
                e.raw["data"]["status"].as_str().unwrap().to_owned(),
                e.raw["data"]["attemptId"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn a_held_session_lock_refuses_a_handoff_with_exit_1_and_writes_nothing() {
    let env = HandoffEnv::new();
    let path = env.session("hi");
    let before = std::fs::read(&path).unwrap();
    let held = slate::store::session::lock(&path).unwrap();
    let out = env.handoff(&path, None).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("another slate process"), "{stderr}");
    assert_eq!(std::fs::read(&path).unwrap(), before, "nothing appended");
    assert_eq!(
        env.session_files(),
        std::slice::from_ref(&path),
        "no successor"
    );
    drop(held);
    let out = env.handoff(&path, None).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn concurrent_handoffs_of_one_session_write_one_successor_each_in_turn() {
    for round in 0..10 {
        let env = HandoffEnv::new();
        let path = env.session("hi");
        let mut both: Vec<Child> = (0..2)
            .map(|_| {
                env.handoff(&path, None)
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let mut won = 0;
        for child in &mut both {
            let status = child.wait().unwrap();
            let mut stderr = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
            match status.code() {
                Some(0) => won += 1,
                Some(1) => assert!(
                    stderr.contains("another slate process"),
                    "round {round}: refused for another reason: {stderr}"
                ),
                other => panic!("round {round}: exit {other:?}: {stderr}"),
            }
        }
        // Each handoff that ran is a whole one (attempt, then its consumption) before the
        // next began: never an attempt read as the other's failed one.
        let records = purposes(&path);
        assert_eq!(records.len(), 2 * won, "round {round}: {records:?}");
        for pair in records.chunks(2) {
            assert_eq!(pair[0].0, "pending", "round {round}: {records:?}");
            assert_eq!(pair[1].0, "consumed", "round {round}: {records:?}");
            assert_eq!(pair[0].1, pair[1].1, "round {round}: {records:?}");
        }
        assert!(won >= 1, "round {round}: neither handoff ran");
        assert_eq!(
            env.session_files().len(),
            1 + won,
            "round {round}: one successor per handoff that ran"
        );
    }
}

#[test]
fn a_failed_consumed_write_exits_1_naming_the_successor() {
    let env = HandoffEnv::new();
    // A session large enough that its successor is far smaller than it.
    let padding = "p".repeat(100_000);
    // The attempt entry's length, measured on a twin session (same sizes: fixed-width ids
    // and timestamps).
    let twin = env.session(&padding);
    let twin_len = std::fs::metadata(&twin).unwrap().len();
    let out = env.handoff(&twin, None).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let twin_text = std::fs::read_to_string(&twin).unwrap();
    let attempt_len = twin_text[usize::try_from(twin_len).unwrap()..]
        .split_inclusive('\n')
        .next()
        .unwrap()
        .len();
    let attempt_len = u64::try_from(attempt_len).unwrap();

    let path = env.session(&padding);
    let len = std::fs::metadata(&path).unwrap().len();
    assert_eq!(len, twin_len);
    let files_before = env.session_files().len();
    // Room for the attempt, not for its consumption.
    let out = env
        .handoff(&path, Some(len + attempt_len + 16))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("consumed failed"), "{stderr}");
    let records = purposes(&path);
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0].0, "pending");
    let successor = env.session_files().len();
    assert_eq!(successor, files_before + 1, "the successor was written");
    assert!(stderr.contains("pi --session"), "{stderr}");
}

// ---------------------------------------------------------------------------------------------
// Item 7: `busy` is read, whatever the kernel says about the closed connection.

/// `slate --json status` against `socket`: its exit code and stdout.
fn status_at(socket: &Path) -> (Option<i32>, String, String) {
    let out = Command::new(SLATE)
        .args(["--json", "status"])
        .env("SLATE_SOCKET", socket)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn assert_busy(socket: &Path, tries: usize) {
    for i in 0..tries {
        let (code, stdout, stderr) = status_at(socket);
        assert_eq!(code, Some(4), "try {i}: stdout {stdout} stderr {stderr}");
        let v: Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(v["error"]["code"], "busy", "try {i}: {v}");
    }
}

/// A server that refuses every connection as a coordinator at its limit does, and closes it
/// at once without reading what the client sent (the kernel then resets the client's side, or
/// the client's write fails with a broken pipe).
#[test]
fn a_refusal_before_a_reset_or_a_broken_pipe_is_still_busy() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("busy.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let line = json!({"id": null, "error": {"code": "busy",
        "message": "the coordinator is at its connection limit (1); try again"}})
    .to_string()
        + "\n";
    let tries = 20;
    let server = std::thread::spawn(move || {
        for stream in listener.incoming().take(tries) {
            let mut stream = stream.unwrap();
            let _ = stream.write_all(line.as_bytes());
        }
    });
    assert_busy(&socket, tries);
    server.join().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_with_every_connection_and_the_reserved_lane_held_is_busy() {
    use slate::control::service::Service;
    use slate::control::{Handler, Metadata, Server, ServerConfig};

    let base = service_fixture::base("slate-outcomes", "busy");
    let cwd = base.join("work");
    let root_id = uuid::Uuid::new_v4();
    let runtime = slate::runtime::RuntimeConfig {
        root_id,
        policy: slate::policy::scheduling::SchedulingPolicy::default(),
        id_seed: 5,
        delegation_dir: base.join("delegation").join(root_id.to_string()),
        event_log: false,
        kill_grace: Duration::from_millis(300),
    };
    let book = slate::worker::sim::ScriptBook {
        scripts: Vec::new(),
        default: slate::sim::Script {
            setup_error: None,
            steps: Vec::new(),
        },
        resumed: None,
    };
    let (rt, _join) = slate::runtime::spawn(
        runtime,
        std::sync::Arc::new(slate::worker::sim::SimBackend::new(book)),
    )
    .unwrap();
    let service: std::sync::Arc<dyn Handler> = std::sync::Arc::new(Service::new(
        rt.clone(),
        service_fixture::loaded(&cwd, &base.join("agent")),
        service_fixture::models(),
        slate::policy::capabilities::pi_offered_tools(),
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
        max_connections: 1,
        reserved_connections: 1,
        reserved_idle: Duration::from_secs(120),
        hello_timeout: Duration::from_secs(120),
        ..ServerConfig::default()
    };
    let server = Server::bind(&socket, metadata, config).unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.run(service, async move {
        let _ = stopped.await;
    }));

    // The regular slot and the reserved lane, each held by a connection that said hello.
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut stream = UnixStream::connect(&socket).unwrap();
        stream
            .write_all(
                format!(
                    "{}\n",
                    json!({"id": 1, "method": "hello", "params": {"protocols": [2]}})
                )
                .as_bytes(),
            )
            .unwrap();
        let mut answer = String::new();
        BufReader::new(&stream).read_line(&mut answer).unwrap();
        assert!(answer.contains("\"result\""), "{answer}");
        held.push(stream);
    }
    let probe = socket.clone();
    tokio::task::spawn_blocking(move || assert_busy(&probe, 20))
        .await
        .unwrap();
    drop(held);
    let _ = stop.send(());
    let _ = serving.await;
    rt.shutdown().await.unwrap();
    let _ = std::fs::remove_dir_all(&base);
}

// ---------------------------------------------------------------------------------------------
// Item 8: an error naming a path with controls.

/// The characters no terminal-facing byte stream of Slate may carry raw: C0 (but `\n`), DEL,
/// C1 and the bidi controls.
fn raw_controls(text: &str) -> Vec<char> {
    text.chars()
        .filter(|&c| {
            (c.is_control() && c != '\n')
                || matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
        })
        .collect()
}

#[test]
fn an_error_naming_a_path_with_controls_shows_every_byte_escaped() {
    // A coordinator with simulated workers serving a private directory.
    let base = service_fixture::base("slate-outcomes", "controls");
    let run = base.join("run");
    std::fs::create_dir_all(&run).unwrap();
    let mut serve = Command::new(SLATE);
    serve
        .args(["serve", "--backend", "sim", "--model", "fake/model"])
        .current_dir(base.join("work"))
        .env("PI_CODING_AGENT_DIR", base.join("agent"))
        .env("HOME", &base)
        .env("XDG_RUNTIME_DIR", &run)
        .env_remove("SLATE_SOCKET")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut serve = Killed(serve.spawn().unwrap());
    let mut first = String::new();
    BufReader::new(serve.0.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with("slate serve: parent"), "{first}");

    let path = "/tmp/x \u{9d}0;t \u{1b}]52;c;QUJD\u{7} \u{202e}gnp.exe";
    let delegate = |json: bool| {
        let mut cmd = Command::new(SLATE);
        if json {
            cmd.arg("--json");
        }
        cmd.args(["delegate", "--cwd", path, "x"])
            .current_dir(base.join("work"))
            .env("PI_CODING_AGENT_DIR", base.join("agent"))
            .env("HOME", &base)
            .env("XDG_RUNTIME_DIR", &run)
            .env_remove("SLATE_SOCKET")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };

    let text = delegate(false);
    let stderr = String::from_utf8(text.stderr).unwrap();
    assert!(!text.status.success(), "{stderr}");
    assert_eq!(raw_controls(&stderr), Vec::<char>::new(), "{stderr:?}");
    // Every byte of the path is there, the controls as visible escapes.
    assert!(
        stderr.contains(r"/tmp/x \u{9d}0;t \x1b]52;c;QUJD\x07 \u{202e}gnp.exe"),
        "{stderr}"
    );
    // `data` is text, not a raw JSON line.
    assert!(
        stderr
            .lines()
            .all(|l| !l.trim_start().starts_with(['{', '['])),
        "{stderr}"
    );

    let json = delegate(true);
    let stdout = String::from_utf8(json.stdout).unwrap();
    assert_eq!(json.status.code(), text.status.code());
    assert_eq!(raw_controls(&stdout), Vec::<char>::new(), "{stdout:?}");
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert!(
        v["error"]["message"].as_str().unwrap().contains(path),
        "the JSON message decodes to the exact path: {v}"
    );

    drop(serve);
    let _ = std::fs::remove_dir_all(&base);
}

// ---------------------------------------------------------------------------------------------
// Item 15 (part): the CLI as its docs say.

#[test]
fn steer_followup_revive_take_uuid_gen_and_a_timed_out_wait_exits_1() {
    let base = service_fixture::base("slate-outcomes", "cli-forms");
    let run = base.join("run");
    std::fs::create_dir_all(&run).unwrap();
    // Every simulated worker thinks for a minute.
    let book = json!({"scripts": [], "default": {"steps": [
        {"think": 60_000},
        {"request": {"ms": 10, "text": "done", "inputTokens": 1, "outputTokens": 1, "cost": null}},
    ]}});
    std::fs::write(base.join("scripts.json"), book.to_string()).unwrap();
    let slate = |args: &[&str]| {
        let mut cmd = Command::new(SLATE);
        cmd.args(args)
            .current_dir(base.join("work"))
            .env("PI_CODING_AGENT_DIR", base.join("agent"))
            .env("HOME", &base)
            .env("XDG_RUNTIME_DIR", &run)
            .env_remove("SLATE_SOCKET")
            .stdin(Stdio::null());
        cmd
    };
    let serve = slate(&[
        "serve",
        "--backend",
        "sim",
        "--model",
        "fake/model",
        "--scenario",
    ])
    .arg(base.join("scripts.json"))
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let mut serve = Killed(serve);
    let mut first = String::new();
    BufReader::new(serve.0.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with("slate serve: parent"), "{first}");

    let out = slate(&["--json", "delegate", "--background", "think"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let reply = stdout_json(&out);
    let id = reply["children"][0]["id"].as_str().unwrap().to_owned();
    let started = Instant::now();
    while stdout_json(
        &slate(&["--json", "status", &format!("{id}@1")])
            .output()
            .unwrap(),
    )["snapshot"]["status"]
        != "running"
    {
        assert!(started.elapsed() < Duration::from_secs(30), "never ran");
        std::thread::sleep(Duration::from_millis(50));
    }

    // `UUID GEN TEXT`: the coordinator answers (a steer is delivered to the running worker;
    // followup and revive are refused by its rules, exit 1), never a usage error (exit 2).
    let steer = slate(&["--json", "steer", &id, "1", "look here"])
        .output()
        .unwrap();
    assert_eq!(
        steer.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&steer.stdout)
    );
    for command in ["followup", "revive"] {
        let out = slate(&["--json", command, &id, "1", "again"])
            .output()
            .unwrap();
        let v = stdout_json(&out);
        assert_eq!(out.status.code(), Some(1), "{command}: {v}");
        assert_ne!(v["error"]["code"], "usage", "{command}: {v}");
    }

    // A wait that times out: its answer, then exit 1 as docs/cli.md says.
    let target = format!("{id}@1");
    let out = slate(&["--json", "wait", "--target", &target, "--timeout", "50"])
        .output()
        .unwrap();
    let v = stdout_json(&out);
    assert_eq!(out.status.code(), Some(1), "{v}");

    drop(serve);
    let _ = std::fs::remove_dir_all(&base);
}

/// A child process killed and reaped when dropped, also when a test panics.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
