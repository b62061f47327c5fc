//! Issue 15, proven with real pi 1.6 as the MCP host: a private agent dir whose `mcp.json`
//! starts `slate mcp` with `exposure: "direct"`, pi in RPC mode against the fake LLM, whose
//! `CALLS` scenario makes pi's model call `mcp__slate__delegate_task`. The MCP session's own
//! coordinator runs real pi workers against the same fake LLM.
//!
//! Without pi these tests print `SKIPPED: …` and pass, except under `CI=true`, where they fail.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

#[path = "support/fake_llm.rs"]
mod fake_llm;
#[path = "support/pi_env.rs"]
mod pi_env;

use std::process::Command;
use std::time::{Duration, Instant};

use fake_llm::FakeLlm;
use pi_env::{PiSandbox, RpcPi};
use serde_json::{Value, json};

const SLATE: &str = env!("CARGO_BIN_EXE_slate");
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

/// pi with `slate mcp` configured as its MCP server `slate` (fields drop in order: pi first).
struct Host {
    pi: RpcPi,
    sandbox: PiSandbox,
    llm: FakeLlm,
    pi_argv: Vec<String>,
}

impl Host {
    fn start(test: &str) -> Option<Self> {
        let pi_cmd = pi_env::pi_or_skip(test)?;
        let llm = FakeLlm::start().unwrap();
        let sandbox = PiSandbox::new(test, &llm.base_url()).unwrap();
        let config = json!({"mcpServers": {"slate": {
            "command": SLATE,
            "args": ["mcp"],
            "exposure": "direct",
        }}});
        std::fs::write(sandbox.agent_dir.join("mcp.json"), config.to_string()).unwrap();
        // No pre-started processes: this test counts every process below `slate mcp` as a
        // worker, and the pool starts its replacement when a worker ends, so one would be
        // there after the cancelled window by design (nobody's worker; the pool's own tests
        // are in pi_worker_tools and serve_session).
        std::fs::write(
            sandbox.agent_dir.join("delegation.json"),
            json!({"pool": {"size": 0}}).to_string(),
        )
        .unwrap();
        let mut command = sandbox.command(&pi_cmd, &["--mode", "rpc"]);
        // `slate mcp` inherits pi's environment: its workers are this pi, in this agent dir.
        command.env("SLATE_PI", pi_cmd.argv.join(" "));
        let pi = RpcPi::spawn_command(&sandbox, command).unwrap();
        Some(Self {
            pi,
            sandbox,
            llm,
            pi_argv: pi_cmd.argv,
        })
    }

    fn prompt(&mut self, id: &str, message: &str) {
        self.pi
            .send(&json!({"id": id, "type": "prompt", "message": message}))
            .unwrap();
    }

    fn settled(&mut self) -> Value {
        self.pi
            .read_until_type("agent_settled", RUN_TIMEOUT)
            .unwrap_or_else(|e| panic!("no agent_settled ({e:?}):\n{}", self.evidence()))
    }

    fn evidence(&self) -> String {
        format!(
            "records:\n{}\nllm requests:\n{}\npi stderr:\n{}",
            self.pi.transcript(),
            self.llm.requests_jsonl(),
            self.pi.stderr_text()
        )
    }

    /// The result text of the last `tool_execution_end` of `tool`, and whether it was an error.
    fn last_tool_result(&self, tool: &str) -> (bool, String) {
        let end = self
            .pi
            .of_type("tool_execution_end")
            .into_iter()
            .rev()
            .find(|r| r["toolName"] == tool)
            .unwrap_or_else(|| panic!("no {tool} result:\n{}", self.evidence()));
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

    /// `slate --json status` beside pi: the coordinator of this directory is the MCP session's.
    fn status(&self) -> Value {
        let mut command = Command::new(SLATE);
        command
            .args(["--json", "status"])
            .current_dir(&self.sandbox.work)
            .env("PI_CODING_AGENT_DIR", &self.sandbox.agent_dir)
            .env("HOME", &self.sandbox.home)
            .env("SLATE_PI", self.pi_argv.join(" "));
        let out = command.output().unwrap();
        serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
    }

    /// `slate --json status TARGET`: that generation's full snapshot.
    fn snapshot(&self, target: &str) -> Value {
        let mut command = Command::new(SLATE);
        command
            .args(["--json", "status", target])
            .current_dir(&self.sandbox.work)
            .env("PI_CODING_AGENT_DIR", &self.sandbox.agent_dir)
            .env("HOME", &self.sandbox.home)
            .env("SLATE_PI", self.pi_argv.join(" "));
        let out = command.output().unwrap();
        let view: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        view["snapshot"].clone()
    }

    /// Waits until the newest child has `status`.
    fn until_newest(&self, status: &str) -> Value {
        let deadline = Instant::now() + RUN_TIMEOUT;
        loop {
            let fleet = self.status();
            if let Some(child) = fleet["children"].as_array().and_then(|c| c.last())
                && child["status"] == status
            {
                return child.clone();
            }
            assert!(
                Instant::now() < deadline,
                "no newest child {status}: {fleet}\n{}",
                self.evidence()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The live descendants of this sandbox's `slate mcp`: its workers (Slate gives a worker
    /// an environment of its own, so they carry no sandbox tag).
    fn workers(&self) -> Vec<u32> {
        let Some(server) = self
            .sandbox
            .leftover_processes()
            .into_iter()
            .find(|&pid| is_slate_mcp(pid))
        else {
            return Vec::new();
        };
        descendants(server)
    }
}

/// `(pid, ppid)` of every live, non-zombie process.
fn parents() -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let mut fields = after.split_whitespace();
        let state = fields.next();
        if let Some(ppid) = fields.next().and_then(|f| f.parse::<u32>().ok())
            && state != Some("Z")
        {
            out.push((pid, ppid));
        }
    }
    out
}

fn descendants(root: u32) -> Vec<u32> {
    let all = parents();
    let mut found = vec![root];
    let mut at = 0;
    while at < found.len() {
        let parent = found[at];
        found.extend(
            all.iter()
                .filter(|(_, ppid)| *ppid == parent)
                .map(|(pid, _)| *pid),
        );
        at += 1;
    }
    found.remove(0);
    found
}

fn is_slate_mcp(pid: u32) -> bool {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
    args.first().is_some_and(|a| a.ends_with(b"slate")) && args.get(1) == Some(&&b"mcp"[..])
}

#[test]
fn pi_as_mcp_host_gets_a_real_workers_text_and_its_abort_cancels_the_window() {
    let Some(mut host) = Host::start("pi_mcp_host") else {
        return;
    };

    // pi connects its MCP servers in the background at start; the first prompt waits for
    // servers with direct tools only 10 s. The server answers `initialize` once its
    // coordinator is up: wait for that coordinator first (two cores, a loaded machine).
    let deadline = Instant::now() + RUN_TIMEOUT;
    while !host.status()["children"].is_array() {
        assert!(
            Instant::now() < deadline,
            "slate mcp never came up:\n{}",
            host.evidence()
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    // Foreground: a real pi worker's text comes back as the MCP tool's result.
    host.prompt(
        "fg",
        &calls(
            "foreground",
            &[(
                "mcp__slate__delegate_task",
                json!({"assignment": "Greet the team", "profile": "scout"}),
            )],
        ),
    );
    host.settled();
    let (error, text) = host.last_tool_result("mcp__slate__delegate_task");
    assert!(!error, "{text}\n{}", host.evidence());
    assert!(text.contains("ACK: Greet the team"), "{text}");
    let done = host.until_newest("settled");
    assert_eq!(done["activity"], "ACK: Greet the team", "{done}");

    // A long foreground window, then pi's abort while the tool runs: pi sends
    // `notifications/cancelled`, the window is cancelled and drains, no worker is left.
    host.prompt(
        "long",
        &calls(
            "long",
            &[(
                "mcp__slate__delegate_task",
                json!({"assignment": "SCENARIO:SLOW60 a long survey", "profile": "scout"}),
            )],
        ),
    );
    host.until_newest("running");
    assert!(!host.workers().is_empty(), "a worker runs the long task");
    host.pi
        .send(&json!({"id": "stop", "type": "abort"}))
        .unwrap();
    host.settled();
    let cancelled = host.until_newest("cancelled");
    let target = format!(
        "{}@{}",
        cancelled["id"].as_str().unwrap(),
        cancelled["generation"]
    );
    let cancelled = host.snapshot(&target);
    let why = cancelled["error"].as_str().unwrap_or_default();
    assert!(
        why.contains("cancelled the foreground call"),
        "cancelled as the caller's cancellation: {cancelled}"
    );
    let deadline = Instant::now() + Duration::from_secs(15);
    while !host.workers().is_empty() {
        assert!(
            Instant::now() < deadline,
            "workers left after the abort: {:?}",
            host.workers()
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    // pi exits: it closes the server's stdin; the MCP session's coordinator drains and is gone.
    let server = host
        .sandbox
        .leftover_processes()
        .into_iter()
        .find(|&pid| is_slate_mcp(pid))
        .expect("slate mcp runs");
    let pi_pid = host.pi.pid();
    host.pi.close_stdin();
    host.pi.wait_exit(RUN_TIMEOUT).unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let left: Vec<u32> = host
            .sandbox
            .leftover_processes()
            .into_iter()
            .filter(|&p| p != pi_pid)
            .collect();
        if left.is_empty() && !std::path::Path::new(&format!("/proc/{server}/stat")).exists() {
            break;
        }
        assert!(Instant::now() < deadline, "left after pi exited: {left:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
