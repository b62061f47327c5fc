//! Slate's pi extension inside real pi 1.6 (`pi --mode rpc -ne --no-mcp -e <installed copy>`),
//! against the fake LLM and a fake coordinator socket that answers `hello`, `guard`, `submit`
//! and `delegate` the way `docs/protocol.md` says the coordinator does, and `tools` /
//! `callTool` with Slate's own tool layer (`slate::tools`).
//!
//! The extension is the copy the binary installs (`worker::pi::extension::install_into`), pi
//! gets its capability on descriptor 3 (`SLATE_CAPABILITY_FD=3`) and the socket in
//! `SLATE_SOCKET`, as Slate launches workers. The fake LLM's `CALLS` scenario makes the model
//! call named tools with exact argument text. Without pi these tests print `SKIPPED` and pass,
//! except under `CI=true` (see `tests/support/pi_env.rs`).

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

#[path = "support/fake_coordinator.rs"]
mod fake_coordinator;
#[path = "support/fake_llm.rs"]
mod fake_llm;
#[path = "support/pi_env.rs"]
mod pi_env;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use fake_coordinator::{ALL_GRANTED, Answer, FakeCoordinator, allow_all, submitted};
use fake_llm::FakeLlm;
use pi_env::{PiSandbox, RpcPi, message_text};
use serde_json::{Value, json};
use slate::core::{ChildSnapshot, Limits, Role, Status, Telemetry, Window};
use slate::tools::{Caller, Grants};
use slate::worker::pi::extension::install_into;
use uuid::Uuid;

/// Generous: two cores, and cargo may be building next to us.
const RUN_TIMEOUT: Duration = Duration::from_secs(90);
const EXIT_TIMEOUT: Duration = Duration::from_secs(20);
/// What the fake coordinator accepts (a real one is 64 hex digits from the OS).
const CAPABILITY: &str = "5a7e0000c0ffee11deadbeef22aa33bb44cc55dd66ee77ff8899aabbccddeeff";
const CLIENT: &str = concat!("slate-pi-extension ", env!("CARGO_PKG_VERSION"));

/// One worker pi with its fake LLM, fake coordinator and sandbox (dropped in field order).
struct Worker {
    pi: RpcPi,
    coordinator: FakeCoordinator,
    sandbox: PiSandbox,
    llm: FakeLlm,
}

/// How to start the worker.
struct Launch<'a> {
    tools: &'a str,
    /// `None`: the fake coordinator's socket.
    socket: Option<PathBuf>,
    /// Whether pi gets `SLATE_CAPABILITY_FD=3` and the capability on descriptor 3; without,
    /// it gets `SLATE_CAPABILITY_FD=999`, a descriptor that is not open (a worker whose
    /// identity cannot be read: the variable alone makes pi a worker).
    capability: bool,
    /// Whether `SLATE_CAPABILITY_FD` is set at all (false: the worker entry loaded by a pi
    /// that is not a worker).
    identity_env: bool,
    /// The generation as the coordinator knows it: which Slate tools it was granted.
    caller: Caller,
}

impl Launch<'_> {
    fn tools(tools: &str) -> Launch<'_> {
        Launch {
            tools,
            socket: None,
            capability: true,
            identity_env: true,
            caller: ALL_GRANTED,
        }
    }

    fn granted(self, grants: Grants) -> Self {
        Launch {
            caller: Caller::Child(grants),
            ..self
        }
    }
}

impl Worker {
    /// `None` when real pi is not installed (skipped).
    fn start(
        test: &str,
        launch: &Launch<'_>,
        answerer: impl Fn(&str, &Value, usize) -> Answer + Send + Sync + 'static,
    ) -> Option<Self> {
        let pi_cmd = pi_env::pi_or_skip(test)?;
        let llm = FakeLlm::start().unwrap();
        let sandbox = PiSandbox::new(test, &llm.base_url()).unwrap();
        let coordinator =
            FakeCoordinator::start_as(sandbox.root(), CAPABILITY, launch.caller, answerer).unwrap();
        let extension = install_into(&sandbox.root().join("cache/extension")).unwrap();
        let extension = extension.to_str().unwrap();
        let args = [
            "--mode",
            "rpc",
            "-ne",
            "--no-mcp",
            "-e",
            extension,
            "--tools",
            launch.tools,
            "--no-session",
        ];
        let socket = launch
            .socket
            .clone()
            .unwrap_or_else(|| coordinator.path().to_owned());
        let mut command = if launch.capability {
            let mut c = sandbox.command(&pi_cmd.with_first_stdin_line_on_fd3(), &args);
            c.env("SLATE_CAPABILITY_FD", "3");
            c
        } else {
            let mut c = sandbox.command(&pi_cmd, &args);
            if launch.identity_env {
                c.env("SLATE_CAPABILITY_FD", "999");
            } else {
                c.env_remove("SLATE_CAPABILITY_FD");
            }
            c
        };
        command
            .env("SLATE_SOCKET", &socket)
            .env_remove("SLATE_CAPABILITY");
        let mut pi = RpcPi::spawn_command(&sandbox, command).unwrap();
        if launch.capability {
            pi.write_line(CAPABILITY).unwrap();
        }
        Some(Self {
            pi,
            coordinator,
            sandbox,
            llm,
        })
    }

    fn prompt(&mut self, id: &str, message: &str) {
        self.pi
            .send(&json!({"id": id, "type": "prompt", "message": message}))
            .unwrap();
    }

    /// Prompt and read until `agent_settled`.
    fn run(&mut self, id: &str, message: &str) {
        self.prompt(id, message);
        if let Err(e) = self.pi.read_until_type("agent_settled", RUN_TIMEOUT) {
            panic!("no agent_settled ({e:?}):\n{}", self.evidence());
        }
    }

    fn evidence(&self) -> String {
        let log: Vec<String> = self
            .coordinator
            .log()
            .iter()
            .map(|l| format!("  #{} {} {}", l.connection, l.method, l.params))
            .collect();
        format!(
            "records:\n{}\ncoordinator:\n{}\nllm requests:\n{}",
            self.pi.transcript(),
            log.join("\n"),
            self.llm.requests_jsonl()
        )
    }

    /// Every `tool_execution_end`, as (tool, isError, result text).
    fn tool_ends(&self) -> Vec<(String, bool, String)> {
        self.pi
            .of_type("tool_execution_end")
            .into_iter()
            .map(|r| {
                let text = r
                    .pointer("/result/content")
                    .and_then(Value::as_array)
                    .map(|c| {
                        c.iter()
                            .filter_map(|b| b.get("text").and_then(Value::as_str))
                            .collect::<String>()
                    })
                    .unwrap_or_default();
                (
                    r["toolName"].as_str().unwrap_or_default().to_owned(),
                    r["isError"].as_bool().unwrap_or_default(),
                    text,
                )
            })
            .collect()
    }

    fn last_text(&self) -> String {
        let messages = self.pi.assistant_messages();
        let Some(last) = messages.last() else {
            panic!("no assistant message:\n{}", self.evidence());
        };
        message_text(last)
    }

    /// The `kind` (and tool, for tool guards) of every guard asked, in order.
    fn guards(&self) -> Vec<String> {
        self.coordinator
            .params_of("guard")
            .iter()
            .map(|p| match p["kind"].as_str().unwrap_or_default() {
                "tool" => format!(
                    "tool {} {}",
                    p["tool"].as_str().unwrap_or_default(),
                    p["callId"].as_str().unwrap_or_default()
                ),
                kind => kind.to_owned(),
            })
            .collect()
    }

    /// Close stdin: pi exits 0 (the extension's idle socket does not keep it alive).
    fn finish(mut self) {
        self.pi.close_stdin();
        let status = self.pi.wait_exit(EXIT_TIMEOUT).unwrap();
        let status = status
            .unwrap_or_else(|| panic!("pi did not exit within {EXIT_TIMEOUT:?} of stdin EOF"));
        assert_eq!(status.code(), Some(0), "stderr: {}", self.pi.stderr_text());
        assert_eq!(self.sandbox.leftover_processes(), Vec::<u32>::new());
    }
}

/// A `CALLS` prompt: the model calls `calls` (tool, argument JSON text) in order.
fn calls(calls: &[(&str, &str)]) -> String {
    let mut text = String::from("SCENARIO:CALLS\n");
    for (tool, args) in calls {
        let _ = writeln!(text, "CALL: {tool} {args}");
    }
    text
}

fn hellos(coordinator: &FakeCoordinator) -> Vec<fake_coordinator::Logged> {
    coordinator
        .log()
        .into_iter()
        .filter(|l| l.method == "hello")
        .collect()
}

/// The methods logged on each connection, in connection order.
fn connections(coordinator: &FakeCoordinator) -> Vec<Vec<String>> {
    let log = coordinator.log();
    let last = log.iter().map(|l| l.connection).max().unwrap_or(0);
    (1..=last)
        .map(|connection| {
            log.iter()
                .filter(|l| l.connection == connection)
                .map(|l| l.method.clone())
                .collect()
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------

#[test]
fn submit_result_values_reach_slate_exactly_as_the_model_wrote_them() {
    let answerer = |method: &str, params: &Value, before: usize| match method {
        "guard" => Ok(json!({"allow": true})),
        // The first attempt is invalid (a string where the schema wants an integer).
        "submit" if before == 0 => Ok(json!({
            "status": "invalid", "attempts": 1, "errors": ["/answer: expected integer, got string"],
            "message": "Invalid result (attempt 1): /answer: expected integer, got string",
        })),
        "submit" => {
            let _ = params;
            Ok(submitted())
        }
        other => allow_all(other, params, before),
    };
    // A task with a result schema: the coordinator grants submit_result alone.
    let launch = Launch::tools("read,submit_result").granted(Grants {
        submit: true,
        ..Grants::default()
    });
    let Some(mut w) = Worker::start("ext-submit", &launch, answerer) else {
        return;
    };
    let nested = r#"{"value": {"answer": "42", "n": 42, "f": 2.5, "s": "2.5", "b": "true", "list": [null, true, "1", {"k": "\u00e9"}], "empty": {}}}"#;
    w.run(
        "p1",
        &calls(&[
            ("submit_result", r#"{"value": "42"}"#),
            ("submit_result", nested),
        ]),
    );

    // The input, exactly as the model wrote it, reached Slate's tool layer: pi's coercion did
    // not touch it ("42" stays a string, etc.), and pi's call ids came with it.
    let nested_value: Value = serde_json::from_str(nested).unwrap();
    assert_eq!(
        w.coordinator.params_of("callTool"),
        vec![
            json!({"tool": "submit_result", "input": {"value": "42"}, "callId": "call_fake_1"}),
            json!({"tool": "submit_result", "input": nested_value, "callId": "call_fake_2"}),
        ],
        "{}",
        w.evidence()
    );
    // ...and the layer submitted those values, untouched.
    assert_eq!(
        w.coordinator.params_of("submit"),
        vec![json!({"value": "42"}), nested_value],
        "{}",
        w.evidence()
    );

    // Slate's message is the tool result; only `submitted` is a success.
    let ends = w.tool_ends();
    assert_eq!(
        ends,
        vec![
            (
                "submit_result".to_owned(),
                true,
                "Invalid result (attempt 1): /answer: expected integer, got string".to_owned()
            ),
            (
                "submit_result".to_owned(),
                false,
                "Result accepted.".to_owned()
            ),
        ],
        "{}",
        w.evidence()
    );
    // The model saw both results.
    let text = w.last_text();
    assert!(text.starts_with("Calls done."), "{text}");
    assert!(text.contains("[1] Invalid result (attempt 1)"), "{text}");
    assert!(text.contains("[2] Result accepted."), "{text}");

    // Every model request and tool call was guarded, in order, with pi's call ids.
    assert_eq!(
        w.guards(),
        vec![
            "request",
            "tool submit_result call_fake_1",
            "request",
            "tool submit_result call_fake_2",
            "request"
        ],
        "{}",
        w.evidence()
    );
    assert_eq!(w.llm.request_count(), 3);

    // One persistent connection for the tools list and the guards, and one per tool call
    // (with the submit it made), each presenting the capability from descriptor 3 and the
    // hash of the extension files it was loaded from (this binary's: issue 23).
    let client = json!({"name": CLIENT, "extension": slate::worker::pi::extension::content_hash()});
    let hello = json!({"protocols": [2], "client": client, "capability": CAPABILITY});
    assert_eq!(w.coordinator.params_of("hello"), vec![hello; 3]);
    let guards = ["guard"; 5];
    assert_eq!(
        connections(&w.coordinator),
        [
            [&["hello", "tools"][..], &guards].concat(),
            vec!["hello", "callTool", "submit"],
            vec!["hello", "callTool", "submit"],
        ],
        "{}",
        w.evidence()
    );

    // `--tools` is the ceiling: the always-registered delegate tools are not declared.
    let declared: Vec<String> = w.llm.requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(declared, ["read", "submit_result"]);
    w.finish();
}

#[test]
fn a_denied_model_request_sends_zero_bytes_to_the_provider() {
    // Deny the first request guard only: the second prompt shows the guard is what held pi.
    let answerer = |method: &str, params: &Value, before: usize| match method {
        "guard" if before == 0 => Ok(json!({
            "allow": false, "reason": "out of budget: request limit of 0 reached",
        })),
        other => allow_all(other, params, before),
    };
    let Some(mut w) = Worker::start("ext-deny-request", &Launch::tools("read"), answerer) else {
        return;
    };
    w.prompt("p1", "SCENARIO:TEXT first");
    let settled = w.pi.read_until_type("agent_settled", RUN_TIMEOUT).unwrap();
    assert_eq!(w.llm.accepted_connections(), 0, "{}", w.evidence());
    // pi ends the turn as if the user aborted: an empty assistant message, `aborted`.
    assert_eq!(settled["aborted"], true, "{}", w.evidence());
    let last = w.pi.assistant_messages().last().map(|m| (*m).clone());
    assert_eq!(
        last.map(|m| m["stopReason"].clone()),
        Some(json!("aborted"))
    );
    assert!(
        w.pi.stderr_text()
            .contains("slate: model request out of budget: request limit of 0 reached"),
        "{}",
        w.pi.stderr_text()
    );

    w.run("p2", "SCENARIO:TEXT second");
    assert_eq!(w.llm.request_count(), 1, "{}", w.evidence());
    assert_eq!(w.llm.accepted_connections(), 1);
    assert_eq!(w.last_text(), "Hello from the fake LLM.");
    assert_eq!(w.guards(), ["request", "request"]);
    w.finish();
}

#[test]
fn a_blocked_tool_never_runs_and_the_model_gets_slates_reason() {
    let reason = "out of budget: tool limit of 1 reached";
    let answerer = move |method: &str, params: &Value, before: usize| match method {
        "guard" if params["kind"] == "tool" => Ok(json!({"allow": false, "reason": reason})),
        other => allow_all(other, params, before),
    };
    let Some(mut w) = Worker::start("ext-block-tool", &Launch::tools("bash"), answerer) else {
        return;
    };
    let marker = w.sandbox.work.join("the-tool-ran");
    let command = json!({"command": format!("touch '{}' && echo ran", marker.display())});
    w.run("p1", &calls(&[("bash", &command.to_string())]));
    assert!(!marker.exists(), "the blocked bash ran");
    let ends = w.tool_ends();
    assert_eq!(ends.len(), 1, "{}", w.evidence());
    assert!(ends[0].1, "not an error result: {ends:?}");
    assert!(ends[0].2.contains(reason), "{ends:?}");
    let text = w.last_text();
    assert!(text.contains(&format!("[1] {reason}")), "{text}");
    assert_eq!(w.guards(), ["request", "tool bash call_fake_1", "request"]);
    w.finish();
}

#[test]
fn the_models_bash_cannot_read_the_capability() {
    let Some(mut w) = Worker::start("ext-no-leak", &Launch::tools("bash"), allow_all) else {
        return;
    };
    let script = [
        "echo \"== ppid\"; echo $PPID",
        "echo '== pi environ'; tr '\\0' '\\n' < /proc/$PPID/environ",
        "echo '== env'; env",
        "echo '== pi fds'; ls -l /proc/$PPID/fd",
        "echo '== bash fds'; ls /proc/$$/fd",
        "echo '== fd 3'; cat <&3",
        "echo '== pi cmdline'; tr '\\0' ' ' < /proc/$PPID/cmdline; echo",
    ]
    .join("; ");
    w.run(
        "p1",
        &calls(&[("bash", &json!({"command": script}).to_string())]),
    );
    let ends = w.tool_ends();
    assert_eq!(ends.len(), 1, "{}", w.evidence());
    let out = &ends[0].2;
    // The script ran where it should: its parent is pi (which sets its process title to `pi`).
    let section = |name: &str| {
        let start = out
            .find(&format!("== {name}\n"))
            .unwrap_or_else(|| panic!("no {name} in {out}"));
        let rest = &out[start + name.len() + 4..];
        rest[..rest.find("\n== ").unwrap_or(rest.len())].to_owned()
    };
    let pid = w.pi.pid();
    assert_eq!(section("ppid").trim(), pid.to_string(), "{out}");
    assert!(section("pi cmdline").starts_with("pi"), "{out}");
    assert!(section("pi environ").contains("SLATE_SOCKET="), "{out}");
    assert!(section("env").contains("SLATE_SOCKET="), "{out}");
    assert!(
        !section("env").contains("SLATE_CAPABILITY"),
        "the extension did not delete SLATE_CAPABILITY_FD: {out}"
    );
    assert!(
        !section("bash fds").lines().any(|l| l.trim() == "3"),
        "bash inherited descriptor 3: {out}"
    );
    assert!(
        !out.contains(CAPABILITY),
        "the capability leaked to bash: {out}"
    );
    // pi's own process: not in its environment or argv either.
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    for (what, bytes) in [("environ", &environ), ("cmdline", &cmdline)] {
        assert!(
            !String::from_utf8_lossy(bytes).contains(CAPABILITY),
            "capability in pi's {what}"
        );
    }
    // ...while the extension did present it.
    assert_eq!(hellos(&w.coordinator)[0].params["capability"], CAPABILITY);
    w.finish();
}

#[test]
fn an_unreachable_coordinator_fails_closed() {
    // A worker that cannot ask its coordinator cannot be guarded nor given its tools: the
    // extension fails pi at load (a worker setup failure), before anything reaches the model.
    let launch = Launch {
        tools: "bash",
        socket: Some(PathBuf::from("/nonexistent/slate/coordinator.sock")),
        capability: true,
        identity_env: true,
        caller: ALL_GRANTED,
    };
    let Some(mut w) = Worker::start("ext-unreachable", &launch, allow_all) else {
        return;
    };
    let status = w.pi.wait_exit(EXIT_TIMEOUT).unwrap().expect("pi exits");
    assert_eq!(status.code(), Some(1), "{}", w.evidence());
    let stderr = w.pi.stderr_text();
    assert!(
        stderr.contains(
            "Slate worker extension: cannot read this generation's tools: cannot reach the Slate coordinator at /nonexistent/slate/coordinator.sock"
        ),
        "{stderr}"
    );
    assert!(
        matches!(
            w.pi.next_record(Duration::from_secs(1)),
            Err(pi_env::ReadError::Eof)
        ),
        "pi wrote to stdout"
    );
    assert_eq!(w.llm.accepted_connections(), 0, "{}", w.evidence());
    assert!(w.coordinator.log().is_empty());
    assert_eq!(w.sandbox.leftover_processes(), Vec::<u32>::new());
}

#[test]
fn a_worker_whose_identity_cannot_be_read_does_not_start() {
    let launch = Launch {
        tools: "read",
        socket: None,
        capability: false,
        identity_env: true,
        caller: ALL_GRANTED,
    };
    let Some(mut w) = Worker::start("ext-no-identity", &launch, allow_all) else {
        return;
    };
    let status = w.pi.wait_exit(EXIT_TIMEOUT).unwrap().expect("pi exits");
    assert_eq!(status.code(), Some(1));
    assert!(
        w.pi.stderr_text()
            .contains("Slate worker extension: descriptor 999 is not open"),
        "{}",
        w.pi.stderr_text()
    );
    assert!(
        matches!(
            w.pi.next_record(Duration::from_secs(1)),
            Err(pi_env::ReadError::Eof)
        ),
        "pi wrote to stdout"
    );
    assert!(w.coordinator.log().is_empty());
}

#[test]
fn the_worker_entry_without_an_identity_does_not_start() {
    // Workers load `worker_entry.ts`; a pi given it without `SLATE_CAPABILITY_FD` is not a
    // worker of any coordinator, and the entry refuses to load rather than run unguarded.
    let launch = Launch {
        tools: "read",
        socket: None,
        capability: false,
        identity_env: false,
        caller: ALL_GRANTED,
    };
    let Some(mut w) = Worker::start("ext-no-identity-env", &launch, allow_all) else {
        return;
    };
    let status = w.pi.wait_exit(EXIT_TIMEOUT).unwrap().expect("pi exits");
    assert_eq!(status.code(), Some(1));
    assert!(
        w.pi.stderr_text()
            .contains("Slate worker extension: loaded as a worker without SLATE_CAPABILITY_FD"),
        "{}",
        w.pi.stderr_text()
    );
    assert_eq!(w.llm.accepted_connections(), 0);
    assert!(w.coordinator.log().is_empty());
}

/// A settled scout generation, as the coordinator's snapshots say it.
fn settled_scout() -> ChildSnapshot {
    ChildSnapshot {
        id: Uuid::from_u128(0x0b6a_0000_0000_4000_8000_0000_0000_000a),
        generation: 1,
        parent_id: Uuid::from_u128(0x0b6a_0000_0000_4000_8000_0000_0000_0000),
        parent_generation: Some(1),
        depth: 2,
        status: Status::Settled,
        profile: Role::Scout,
        cwd: "/work".to_owned(),
        assignment: "Find it".to_owned(),
        activity: None,
        progress: None,
        result: Some("Found it.".to_owned()),
        model: Some("fake/fake-model".to_owned()),
        effort: Some("off".to_owned()),
        requested_model: None,
        requested_effort: None,
        logical: None,
        prewalk: None,
        telemetry: Telemetry::default(),
        error: None,
        transcript: None,
        limits: Limits {
            deadline_ms: 1_800_000,
            requests: 5,
            tools: 100,
            depth: 1,
            spawns: 0,
        },
        limit_reason: None,
        tool_calls: 0,
        spawns: 0,
        writer_lease: false,
        disposed: true,
        created_at: 0,
        ended_at: Some(1200),
        outcome: None,
        artifacts: None,
        tools: Vec::new(),
        leaf_tools: Vec::new(),
        skills: Vec::new(),
        capability_denials: Vec::new(),
        pause_reason: None,
        retained_context: false,
        streaming: None,
        retry: None,
        delivered_at: None,
        window: Window {
            number: 1,
            started_at: 0,
            deadline_at: 1_800_000,
        },
    }
}

/// The coordinator's refusal of a child's `stop`.
const ROOT_ONLY: &str =
    "stop: root-only action; child 0b6a0000-0000-4000-8000-000000000000@1 cannot call it";

/// A foreground `delegate` answer: window `call` admitted `snapshot` and drained with it.
fn foreground(call: u64, snapshot: &Value, preview: &str) -> Value {
    json!({
        "admitted": {"kind": "admitted", "call": call, "children": [snapshot]},
        "outcome": {"call": call, "request": 7, "initiator": "0b6a0000-0000-4000-8000-000000000000@1",
                    "delivery": "foreground", "outcomes": [snapshot]},
        "preview": preview,
    })
}

#[test]
fn delegate_tools_pass_the_models_input_through_and_slates_answers_back() {
    let preview =
        "1 task, in order:\n1. 0b6a0000-0000-4000-8000-00000000000a@1 scout settled: Found it.";
    let snapshot = serde_json::to_value(settled_scout()).unwrap();
    let outcome = foreground(3, &snapshot, preview);
    let answerer = move |method: &str, params: &Value, before: usize| match method {
        "delegate" => Ok(outcome.clone()),
        "stop" => Err(("root-only".to_owned(), ROOT_ONLY.to_owned())),
        other => allow_all(other, params, before),
    };
    // A task that may spawn and coordinate: delegate_task and delegate_coordinate.
    let launch = Launch::tools("delegate_task,delegate_coordinate").granted(Grants {
        submit: false,
        delegate: true,
        coordinate: true,
    });
    let Some(mut w) = Worker::start("ext-delegate", &launch, answerer) else {
        return;
    };
    let task = r#"{"assignment": "Find it", "profile": "scout", "limits": {"requests": "5"}, "background": null}"#;
    let wait = r#"{"action": "wait", "timeoutMs": "100"}"#;
    let bad_stop = r#"{"action": "stop", "target": {"id": "x", "generation": 1}}"#;
    let stop = r#"{"action": "stop", "target": "0b6a0000-0000-4000-8000-00000000000a@1"}"#;
    w.run(
        "p1",
        &calls(&[
            ("delegate_task", task),
            ("delegate_coordinate", wait),
            ("delegate_coordinate", bad_stop),
            ("delegate_coordinate", stop),
        ]),
    );
    // Untouched: "5" and "100" stay strings, null stays null, the object target stays an
    // object, in what reached Slate's tool layer.
    let input = |text: &str| serde_json::from_str::<Value>(text).unwrap();
    assert_eq!(
        w.coordinator.params_of("callTool"),
        vec![
            json!({"tool": "delegate_task", "input": input(task), "callId": "call_fake_1"}),
            json!({"tool": "delegate_coordinate", "input": input(wait), "callId": "call_fake_2"}),
            json!({"tool": "delegate_coordinate", "input": input(bad_stop), "callId": "call_fake_3"}),
            json!({"tool": "delegate_coordinate", "input": input(stop), "callId": "call_fake_4"}),
        ],
        "{}",
        w.evidence()
    );
    // The layer hands the task to policy as written; the wait's string and the object target
    // are refused by Slate's strict reading (a coerced 100 would have made a `wait` request);
    // the well-formed stop goes to the coordinator.
    assert_eq!(
        w.coordinator.params_of("delegate"),
        vec![json!({"request": input(task)})],
        "{}",
        w.evidence()
    );
    assert_eq!(w.coordinator.params_of("wait"), Vec::<Value>::new());
    assert_eq!(
        w.coordinator.params_of("stop"),
        vec![json!({"target": "0b6a0000-0000-4000-8000-00000000000a@1"})]
    );
    let ends = w.tool_ends();
    assert_eq!(ends.len(), 4, "{}", w.evidence());
    assert_eq!(
        ends[0],
        ("delegate_task".to_owned(), false, preview.to_owned())
    );
    assert!(ends[1].1, "{ends:?}");
    assert!(
        ends[1]
            .2
            .starts_with("delegate_coordinate wait: params.timeoutMs"),
        "{ends:?}"
    );
    assert!(ends[2].1, "{ends:?}");
    assert!(
        ends[2]
            .2
            .starts_with("delegate_coordinate stop: params.target"),
        "{ends:?}"
    );
    let refused = ("delegate_coordinate".to_owned(), true, ROOT_ONLY.to_owned());
    assert_eq!(ends[3], refused, "{ends:?}");
    // Each call had its own connection, with the requests it made; the guards shared one.
    let guards = ["guard"; 9];
    assert_eq!(
        connections(&w.coordinator),
        [
            [&["hello", "tools"][..], &guards].concat(),
            vec!["hello", "callTool", "delegate"],
            vec!["hello", "callTool"],
            vec!["hello", "callTool"],
            vec!["hello", "callTool", "stop"],
        ],
        "{}",
        w.evidence()
    );
    // The delegate tool result's details carry the window's call and its snapshots.
    let details =
        w.pi.of_type("tool_execution_end")
            .first()
            .map(|r| r["result"]["details"].clone())
            .unwrap();
    assert_eq!(details["call"], 3, "{details}");
    assert_eq!(details["children"], json!([snapshot]), "{details}");
    w.finish();
}

#[test]
fn a_new_session_keeps_the_identity() {
    // pi re-runs the extension's factory for `new_session`; the capability was read once, at
    // module load, and fd 3 is long closed: the new runtime must still speak as this worker.
    let Some(mut w) = Worker::start("ext-new-session", &Launch::tools("read"), allow_all) else {
        return;
    };
    w.run("p1", "SCENARIO:TEXT one");
    w.pi.send(&json!({"id": "n1", "type": "new_session"}))
        .unwrap();
    let response =
        w.pi.read_until(RUN_TIMEOUT, |r| r["type"] == "response" && r["id"] == "n1")
            .unwrap();
    assert_eq!(response["success"], true, "{response}");
    w.run("p2", "SCENARIO:TEXT two");
    assert_eq!(w.llm.request_count(), 2, "{}", w.evidence());
    assert_eq!(w.guards(), ["request", "request"]);
    let hellos = hellos(&w.coordinator);
    assert!(
        hellos.iter().all(|h| h.params["capability"] == CAPABILITY),
        "{}",
        w.evidence()
    );
    w.finish();
}
