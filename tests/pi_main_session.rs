//! Issue 13, proven with real pi 1.6 as the user's main session: Slate's extension installed
//! by `slate pi install` into a private agent dir, pi in RPC mode against the fake LLM, whose
//! `CALLS` scenario makes the main session's model call the root tools. The session starts its
//! own coordinator (`slate serve --pi-session`), whose workers are real pi too.
//!
//! Without pi these tests print `SKIPPED: …` and pass, except under `CI=true`, where they fail.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

#[path = "support/fake_llm.rs"]
mod fake_llm;
#[path = "support/pi_env.rs"]
mod pi_env;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use fake_llm::FakeLlm;
use pi_env::{PiSandbox, RpcPi};
use serde_json::{Value, json};

const SLATE: &str = env!("CARGO_BIN_EXE_slate");
/// The host extension of the `workerExtensions` tests (one tool, `host_probe`).
const HOST_PROBE: &str = include_str!("support/host_probe/index.ts");
/// Generous: two cores, real pi workers, and cargo may be building next to us.
const RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// An assignment for the `CALLS` scenario: each `(tool, arguments)` is one model tool call.
fn calls(title: &str, script: &[(&str, Value)]) -> String {
    use std::fmt::Write as _;
    let mut text = format!("SCENARIO:CALLS {title}");
    for (tool, args) in script {
        let _ = write!(text, "\nCALL: {tool} {args}");
    }
    text
}

/// The user's pi session with Slate installed (fields drop in order: pi first).
struct Main {
    pi: RpcPi,
    sandbox: PiSandbox,
    llm: FakeLlm,
    pi_argv: Vec<String>,
    settings_before: Option<Vec<u8>>,
}

impl Main {
    /// `None` when real pi is not installed (skipped).
    fn start(test: &str) -> Option<Self> {
        Self::start_with(test, |_| {})
    }

    /// [`Main::start`], with `prepare` run on the sandbox after install, before pi starts.
    fn start_with(test: &str, prepare: impl FnOnce(&PiSandbox)) -> Option<Self> {
        let pi_cmd = pi_env::pi_or_skip(test)?;
        let llm = FakeLlm::start().unwrap();
        let sandbox = PiSandbox::new(test, &llm.base_url()).unwrap();
        let settings = sandbox.agent_dir.join("settings.json");
        let settings_before = std::fs::read(&settings).ok();
        let install = slate(&sandbox, &pi_cmd.argv, &["pi", "install"]);
        assert!(
            install.status.success(),
            "slate pi install: {}{}",
            String::from_utf8_lossy(&install.stdout),
            String::from_utf8_lossy(&install.stderr)
        );
        prepare(&sandbox);
        // Loaded from pi's settings, as a user's pi loads it: no `-e`, no `-ne`.
        let mut command = sandbox.command(&pi_cmd, &["--mode", "rpc"]);
        with_slate_env(&mut command, &sandbox, &pi_cmd.argv);
        let pi = RpcPi::spawn_command(&sandbox, command).unwrap();
        Some(Self {
            pi,
            sandbox,
            llm,
            pi_argv: pi_cmd.argv,
            settings_before,
        })
    }

    /// Prompt and read until that run's `agent_settled`.
    fn run(&mut self, id: &str, message: &str) {
        self.pi
            .send(&json!({"id": id, "type": "prompt", "message": message}))
            .unwrap();
        if let Err(e) = self.pi.read_until_type("agent_settled", RUN_TIMEOUT) {
            panic!("no agent_settled ({e:?}):\n{}", self.evidence());
        }
    }

    fn evidence(&self) -> String {
        format!(
            "records:\n{}\nllm requests:\n{}",
            self.pi.transcript(),
            self.llm.requests_jsonl()
        )
    }

    /// The last `tool_execution_end` record of `tool`.
    fn last_tool_end(&self, tool: &str) -> &Value {
        self.pi
            .of_type("tool_execution_end")
            .into_iter()
            .rev()
            .find(|r| r["toolName"] == tool)
            .unwrap_or_else(|| panic!("no {tool} result:\n{}", self.evidence()))
    }

    /// The result text of the last `tool_execution_end` of `tool`, and whether it was an error.
    fn last_tool_result(&self, tool: &str) -> (bool, String) {
        let end = self.last_tool_end(tool);
        let text = end
            .pointer("/result/content")
            .and_then(Value::as_array)
            .map(|c| {
                c.iter()
                    .filter_map(|b| b.get("text").and_then(Value::as_str))
                    .collect::<String>()
            })
            .unwrap_or_default();
        (end["isError"].as_bool().unwrap_or_default(), text)
    }

    /// The session file pi writes for this session.
    fn session_file(&self) -> PathBuf {
        let sessions = self.sandbox.agent_dir.join("sessions");
        let mut found = Vec::new();
        for dir in std::fs::read_dir(&sessions).unwrap().flatten() {
            for file in std::fs::read_dir(dir.path()).unwrap().flatten() {
                if file.path().extension().is_some_and(|e| e == "jsonl") {
                    found.push(file.path());
                }
            }
        }
        assert_eq!(found.len(), 1, "one session file: {found:?}");
        found.remove(0)
    }

    /// The session's `custom_message` entries of `custom_type`.
    fn custom_messages(&self, custom_type: &str) -> Vec<Value> {
        let text = std::fs::read_to_string(self.session_file()).unwrap_or_default();
        text.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|e| e["type"] == "custom_message" && e["customType"] == custom_type)
            .collect()
    }

    /// Waits until the session holds `n` window-outcome messages, then a moment more to see
    /// that no further one follows.
    fn expect_outcome_messages(&self, n: usize) -> Vec<Value> {
        let deadline = Instant::now() + RUN_TIMEOUT;
        while self.custom_messages("slate-window-outcome").len() < n {
            assert!(
                Instant::now() < deadline,
                "{n} window-outcome messages never arrived:\n{}",
                self.evidence()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        std::thread::sleep(Duration::from_millis(1500));
        let messages = self.custom_messages("slate-window-outcome");
        assert_eq!(messages.len(), n, "exactly {n}: {messages:#?}");
        messages
    }

    /// `slate <args>` in the session's directory, as the user would run it beside pi.
    fn slate(&self, args: &[&str]) -> std::process::Output {
        slate(&self.sandbox, &self.pi_argv, args)
    }

    /// The session's parent id (pi's session id, from the session file's header).
    fn parent_id(&self) -> String {
        let text = std::fs::read_to_string(self.session_file()).unwrap();
        let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        header["id"].as_str().unwrap().to_owned()
    }
}

/// `slate` with the sandbox's environment (its agent dir, home and so data dir).
fn slate(sandbox: &PiSandbox, pi_argv: &[String], args: &[&str]) -> std::process::Output {
    let mut command = Command::new(SLATE);
    command.args(args).current_dir(&sandbox.work);
    with_slate_env(&mut command, sandbox, pi_argv);
    command.output().unwrap()
}

fn with_slate_env(command: &mut Command, sandbox: &PiSandbox, pi_argv: &[String]) {
    command
        .env("PI_CODING_AGENT_DIR", &sandbox.agent_dir)
        .env("HOME", &sandbox.home)
        .env_remove("XDG_DATA_HOME")
        .env("SLATE_PI", pi_argv.join(" "));
}

/// The one accepted child's identity, from the last `tool` result's `details` (the snapshots
/// the compact text leaves out); the text the model reads must name it as `UUID@generation`.
fn accepted_id(main: &Main, tool: &str) -> String {
    let end = main.last_tool_end(tool);
    let details = &end["result"]["details"];
    let children = details["children"]
        .as_array()
        .unwrap_or_else(|| panic!("no children in details: {end:#}"));
    assert_eq!(children.len(), 1, "one accepted child: {end:#}");
    let id = children[0]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no id: {end:#}"))
        .to_owned();
    let generation = &children[0]["generation"];
    let target = format!("{id}@{generation}");
    assert_eq!(details["rows"][0]["target"], target.as_str(), "{end:#}");
    let (_, text) = main.last_tool_result(tool);
    assert!(text.contains(&target), "the model reads {target}: {text}");
    id
}

/// Live processes whose command line mentions `needle` (the session's parent id).
fn processes_mentioning(needle: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(needle) {
            found.push(pid);
        }
    }
    found
}

#[test]
fn the_root_tools_delegate_to_real_pi_workers_from_the_main_session() {
    let Some(mut main) = Main::start("main_session_root_tools") else {
        return;
    };

    // Foreground: a real pi worker's text is the tool result.
    main.run(
        "fg",
        &calls(
            "foreground",
            &[(
                "delegate_task",
                json!({"assignment": "Greet the team", "profile": "scout"}),
            )],
        ),
    );
    let (error, text) = main.last_tool_result("delegate_task");
    assert!(!error, "{text}");
    assert!(text.contains("ACK: Greet the team"), "{text}");

    // Background: the accepted identity at once, exactly one outcome message after drain.
    main.run(
        "bg",
        &calls(
            "background",
            &[(
                "delegate_task",
                json!({"assignment": "Count the modules", "profile": "scout", "background": true}),
            )],
        ),
    );
    let (error, accepted) = main.last_tool_result("delegate_task");
    assert!(!error, "{accepted}");
    assert!(accepted.contains("Accepted 1 task"), "{accepted}");
    let messages = main.expect_outcome_messages(1);
    let content = messages[0]["content"].to_string();
    assert!(content.contains("ACK: Count the modules"), "{content}");

    // The compatibility tool, async by default: one message that wakes the session.
    let runs_before = main.pi.of_type("agent_settled").len();
    main.run(
        "compat",
        &calls(
            "subagent",
            &[(
                "subagent",
                json!({"agent": "scout", "task": "List the entry points"}),
            )],
        ),
    );
    main.expect_outcome_messages(2);
    if let Err(e) = main.pi.read_until_type("agent_settled", RUN_TIMEOUT) {
        panic!(
            "the async outcome did not wake the session ({e:?}):\n{}",
            main.evidence()
        );
    }
    assert_eq!(main.pi.of_type("agent_settled").len(), runs_before + 2);

    // delegate_coordinate: a long background worker, its status, then stop.
    main.run(
        "long",
        &calls(
            "long",
            &[(
                "delegate_task",
                json!({"assignment": "SCENARIO:SLOW30 a long survey", "profile": "scout", "background": true}),
            )],
        ),
    );
    let (error, accepted) = main.last_tool_result("delegate_task");
    assert!(!error, "{accepted}");
    let target = format!("{}@1", accepted_id(&main, "delegate_task"));
    main.run(
        "status",
        &calls(
            "status",
            &[(
                "delegate_coordinate",
                json!({"action": "status", "target": target}),
            )],
        ),
    );
    let (error, status) = main.last_tool_result("delegate_coordinate");
    assert!(!error, "{status}");
    assert!(status.contains(&target[..36]), "{status}");
    main.run(
        "stop",
        &calls(
            "stop",
            &[(
                "delegate_coordinate",
                json!({"action": "stop", "target": target}),
            )],
        ),
    );
    let (error, stopped) = main.last_tool_result("delegate_coordinate");
    assert!(!error, "{stopped}");
    assert!(stopped.contains(&target[..36]), "{stopped}");

    status_then_kill_then_uninstall(main);
}

/// `/subagent-status` equals `slate status`; pi killed with SIGKILL leaves nothing of its
/// session; `slate pi uninstall` restores the settings exactly.
fn status_then_kill_then_uninstall(mut main: Main) {
    // `/subagent-status` inside pi is `slate status` beside it, word for word (every row has
    // ended, so no clock differs).
    main.expect_outcome_messages(3);
    let parent = main.parent_id();
    main.pi
        .send(&json!({"id": "cmd", "type": "prompt", "message": "/subagent-status"}))
        .unwrap();
    let notify = main
        .pi
        .read_until(RUN_TIMEOUT, |r| {
            r["type"] == "extension_ui_request" && r["method"] == "notify"
        })
        .unwrap_or_else(|e| panic!("no notify ({e:?}):\n{}", main.evidence()));
    let cli = main.slate(&["status", "--parent", &parent]);
    assert!(cli.status.success());
    assert_eq!(
        notify["message"].as_str().unwrap().trim_end(),
        String::from_utf8_lossy(&cli.stdout).trim_end()
    );

    // pi killed with SIGKILL: no coordinator or worker of this session 5 s later.
    assert!(
        !processes_mentioning(&parent).is_empty(),
        "the session's coordinator runs"
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(main.pi.pid()).unwrap()),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    std::thread::sleep(Duration::from_secs(5));
    assert_eq!(
        processes_mentioning(&parent),
        Vec::<u32>::new(),
        "nothing of the session survives it"
    );
    assert!(main.sandbox.leftover_processes().is_empty());

    // Uninstall restores the settings exactly.
    let uninstall = main.slate(&["pi", "uninstall"]);
    assert!(uninstall.status.success());
    let settings = main.sandbox.agent_dir.join("settings.json");
    assert_eq!(std::fs::read(&settings).ok(), main.settings_before);
}

#[test]
fn the_main_sessions_bash_waits_for_a_writer_childs_lease() {
    let Some(mut main) = Main::start("main_session_writer_lease") else {
        return;
    };
    let witness = main.sandbox.work.join("written-by-the-main-session");
    main.run(
        "writer",
        &calls(
            "writer",
            &[(
                "delegate_task",
                json!({"assignment": "SCENARIO:SLOW6 rewrite the module", "profile": "implementation", "background": true}),
            )],
        ),
    );
    let (error, accepted) = main.last_tool_result("delegate_task");
    assert!(!error, "{accepted}");
    let holder = accepted_id(&main, "delegate_task");
    let touch = json!({"command": format!("touch '{}'", witness.display())});
    main.run("blocked", &calls("blocked", &[("bash", touch.clone())]));
    let (error, reason) = main.last_tool_result("bash");
    assert!(error, "{reason}");
    assert!(
        reason.contains("holds the writer lease") && reason.contains(&holder),
        "{reason}"
    );
    assert!(!witness.exists(), "the blocked call never ran");

    main.expect_outcome_messages(1);
    main.run("allowed", &calls("allowed", &[("bash", touch)]));
    let (error, text) = main.last_tool_result("bash");
    assert!(!error, "{text}");
    assert!(witness.exists(), "allowed once the lease was released");
    drop(main);
}

#[test]
fn a_host_extension_the_patterns_select_reaches_the_workers() {
    let Some(mut main) = Main::start_with("main_session_worker_extensions", |sandbox| {
        // An extension the user's pi loads, and the session's pattern that selects it.
        let probe = sandbox.root().join("host-probe/index.ts");
        std::fs::create_dir_all(probe.parent().unwrap()).unwrap();
        std::fs::write(&probe, HOST_PROBE).unwrap();
        let settings = sandbox.agent_dir.join("settings.json");
        let mut value: Value = serde_json::from_slice(&std::fs::read(&settings).unwrap()).unwrap();
        value["extensions"]
            .as_array_mut()
            .unwrap()
            .push(json!(probe.parent().unwrap()));
        std::fs::write(&settings, serde_json::to_vec_pretty(&value).unwrap()).unwrap();
        std::fs::write(
            sandbox.agent_dir.join("slate.json"),
            r#"{"workerExtensions": ["host-probe"]}"#,
        )
        .unwrap();
    }) else {
        return;
    };
    let worker = calls("worker", &[("host_probe", json!({}))]);
    main.run(
        "probe",
        &calls(
            "main",
            &[(
                "delegate_task",
                json!({"assignment": worker, "profile": "scout"}),
            )],
        ),
    );
    let (error, text) = main.last_tool_result("delegate_task");
    assert!(!error, "{text}");
    assert!(
        text.contains("[1] host probe ran"),
        "the worker ran the host's tool: {text}"
    );
    // The main session's model was told what its workers gain.
    let told = main.llm.requests().iter().any(|r| {
        r.body
            .to_string()
            .contains("Slate workers also load these host extensions")
    });
    assert!(told, "the doctrine line:\n{}", main.llm.requests()[0].body);
}

/// pi's current session file (RPC `get_state`).
fn current_session_file(main: &mut Main, id: &str) -> String {
    main.pi
        .send(&json!({"id": id, "type": "get_state"}))
        .unwrap();
    let state = main
        .pi
        .read_until(RUN_TIMEOUT, |r| r["type"] == "response" && r["id"] == id)
        .unwrap_or_else(|e| panic!("no get_state answer ({e:?}):\n{}", main.evidence()));
    state["data"]["sessionFile"].as_str().unwrap().to_owned()
}

#[test]
fn slate_handoff_inside_pi_switches_to_the_successor_and_sends_its_kickoff() {
    // The routing policy permits the session's model, so the successor is adopted at once
    // (otherwise adoption pauses until `/slate resume` with a permitted model).
    let Some(mut main) = Main::start_with("main_session_handoff", |sandbox| {
        let slate = json!({"router": {"models": {"add": [{
            "model": "fake-test", "capabilityRating": 50, "costRating": 10, "effort": "off",
            "preferredProvider": "fake", "providers": {"fake": "fake-model"},
            "guidelines": ["tests only"], "cautions": ["offline fake server"]
        }]}}});
        std::fs::write(sandbox.agent_dir.join("slate.json"), slate.to_string()).unwrap();
    }) else {
        return;
    };
    main.run("first", "SCENARIO:TEXT the work so far");
    let original = current_session_file(&mut main, "state-1");
    main.pi
        .send(&json!({"id": "handoff", "type": "prompt", "message": "/slate handoff --user-request finish the parser"}))
        .unwrap();
    let deadline = Instant::now() + RUN_TIMEOUT;
    let mut n = 0;
    let successor = loop {
        n += 1;
        let now = current_session_file(&mut main, &format!("state-{}", n + 1));
        if now != original {
            break now;
        }
        assert!(
            Instant::now() < deadline,
            "pi never switched sessions:\n{}",
            main.evidence()
        );
        std::thread::sleep(Duration::from_millis(300));
    };
    assert!(std::path::Path::new(&successor).exists(), "{successor}");
    // The claimed kickoff starts the successor's first turn, naming the focus.
    let deadline = Instant::now() + RUN_TIMEOUT;
    while !main
        .llm
        .requests()
        .iter()
        .any(|r| r.last_user_text.contains("finish the parser"))
    {
        assert!(
            Instant::now() < deadline,
            "no kickoff request:\n{}",
            main.evidence()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let successor_text = std::fs::read_to_string(&successor).unwrap();
    assert!(
        successor_text.contains("slate-kickoff"),
        "the kickoff is in the successor: {successor_text}"
    );
}

/// The notices a slash command showed (`ctx.ui.notify`: `(kind, text)`), read up to pi's
/// answer to the command.
fn command_notices(main: &mut Main, id: &str, command: &str) -> Vec<(String, String)> {
    let before = main.pi.of_type("extension_ui_request").len();
    main.pi
        .send(&json!({"id": id, "type": "prompt", "message": command}))
        .unwrap();
    if let Err(e) = main
        .pi
        .read_until(RUN_TIMEOUT, |r| r["type"] == "response" && r["id"] == id)
    {
        panic!("no answer to {command} ({e:?}):\n{}", main.evidence());
    }
    main.pi.of_type("extension_ui_request")[before..]
        .iter()
        .filter(|r| r["method"] == "notify")
        .map(|r| {
            (
                r["notifyType"].as_str().unwrap_or("info").to_owned(),
                r["message"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// The summary rows of `slate status --json` (`--parent P`), by `UUID@generation`: their
/// `deliveredAt`.
fn delivered(main: &Main, parent: &str) -> std::collections::BTreeMap<String, Option<u64>> {
    let out = main.slate(&["status", "--json", "--parent", parent]);
    let value: Value = serde_json::from_slice(&out.stdout).unwrap();
    value["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                format!("{}@{}", c["id"].as_str().unwrap(), c["generation"]),
                c["deliveredAt"].as_u64(),
            )
        })
        .collect()
}

/// Issue 21: a followup's and a revive's window is delivered by the same rule as a
/// delegation's (its outcome message reaches the session, which acknowledges it: `deliveredAt`,
/// shown in `slate status --json`'s summary rows too); `/slate effective` in pi shows the
/// session's remembered providers and which permitted routes this pi has, worded by Slate.
#[test]
#[allow(clippy::too_many_lines, reason = "one session, step by step")]
fn followup_and_revive_windows_are_delivered_and_slate_effective_shows_the_sessions_routing() {
    let Some(mut main) = Main::start_with("main_session_renewals", |sandbox| {
        std::fs::write(
            sandbox.agent_dir.join("slate.json"),
            r#"{"router": {"models": {"add": [{"model": "fake-logical", "capabilityRating": 50,
                "effort": "off", "costRating": 10, "preferredProvider": "fake",
                "providers": {"fake": "fake-model"}, "guidelines": [], "cautions": []}]}}}"#,
        )
        .unwrap();
    }) else {
        return;
    };
    // Before any logical action: nothing remembered; pi has the permitted fake route.
    main.run("hello", "hello");
    let notices = command_notices(&mut main, "eff1", "/slate effective");
    let info = &notices
        .iter()
        .find(|(k, _)| k == "info")
        .unwrap_or_else(|| panic!("{notices:?}"))
        .1;
    assert!(
        info.contains("Remembered successful providers\n  none."),
        "{info}"
    );
    assert!(
        info.contains("Permitted routes in this session's pi"),
        "{info}"
    );
    assert!(
        info.lines().any(|l| l.trim_start().starts_with("usable ")
            && l.contains("fake/fake-model (fake-logical)")),
        "{info}"
    );
    assert!(
        !notices.iter().any(|(k, _)| k == "warning"),
        "a usable route: no warning: {notices:?}"
    );

    // A foreground logical delegation: delivered when answered; it publishes its provider.
    main.run(
        "fg",
        &calls(
            "foreground",
            &[(
                "delegate_task",
                json!({"assignment": "Greet the team", "profile": "scout",
                       "model": "fake-logical", "reason": "the test's one logical model"}),
            )],
        ),
    );
    let (error, text) = main.last_tool_result("delegate_task");
    assert!(!error, "{text}");
    let id = main.last_tool_end("delegate_task")["result"]["details"]["children"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let parent = main.parent_id();
    assert!(
        delivered(&main, &parent)[&format!("{id}@1")].is_some(),
        "a foreground answer delivers: {:?}",
        delivered(&main, &parent)
    );
    let notices = command_notices(&mut main, "eff2", "/slate effective");
    let info = &notices.iter().find(|(k, _)| k == "info").unwrap().1;
    assert!(
        info.lines()
            .any(|l| l.trim() == "fake-logical         fake"),
        "the session remembers fake for fake-logical:\n{info}"
    );

    // followup (idle → generation 2), then park and revive (parked → generation 3): each
    // window's outcome reaches the session as one message and is acknowledged.
    let steps = [
        (
            "followup",
            vec![(
                "delegate_coordinate",
                json!({"action": "followup", "target": format!("{id}@1"), "assignment": "Greet again"}),
            )],
        ),
        (
            "revive",
            vec![
                (
                    "delegate_coordinate",
                    json!({"action": "park", "target": format!("{id}@2")}),
                ),
                (
                    "delegate_coordinate",
                    json!({"action": "revive", "target": format!("{id}@2"), "assignment": "Greet once more"}),
                ),
            ],
        ),
    ];
    for (n, (title, script)) in steps.iter().enumerate() {
        let script: Vec<(&str, Value)> = script.iter().map(|(t, v)| (*t, v.clone())).collect();
        main.run(title, &calls(title, &script));
        let (error, text) = main.last_tool_result("delegate_coordinate");
        assert!(!error, "{title}: {text}");
        let messages = main.expect_outcome_messages(n + 1);
        let generation = n + 2;
        assert!(
            messages[n]["content"]
                .to_string()
                .contains(&format!("{id}@{generation}")),
            "{title}: {:#}",
            messages[n]
        );
        let deadline = Instant::now() + RUN_TIMEOUT;
        while delivered(&main, &parent)[&format!("{id}@{generation}")].is_none() {
            assert!(
                Instant::now() < deadline,
                "{title}: generation {generation} never delivered: {:?}",
                delivered(&main, &parent)
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}
