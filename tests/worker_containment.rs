//! Issue 14, "Nothing outlives, nothing lies" — the worker side: what a worker starts ends with
//! it (real pi under the containment process, `kill -9` of pi and of `slate run`), its stdout
//! is untrusted input (a stand-in pi that fakes a settle or floods a line), and its transcript
//! is private.
//!
//! pi comes from `SLATE_PI` or `ci/install-pi.sh`'s env file. Without it the real-pi tests
//! print `SKIPPED: …` and pass, except under `CI=true`, where they fail.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

#[path = "support/fake_llm.rs"]
mod fake_llm;
#[path = "support/pi_env.rs"]
mod pi_env;
#[path = "support/pi_runtime.rs"]
mod pi_runtime;

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use pi_env::PiSandbox;
use pi_runtime::{Env, OUTCOME_TIMEOUT, admitted};
use serde_json::{Value, json};
use slate::core::{Party, Role, Status};
use slate::runtime::actors::parent_pid;

/// Everything a worker started is gone this long after its end.
const GONE_WITHIN: Duration = Duration::from_secs(5);

/// `SCENARIO:SHELL` makes the fake LLM call `bash` with the `COMMAND:` line once.
fn shell_task(command: &str) -> String {
    format!("SCENARIO:SHELL run one command\nCOMMAND: {command}")
}

/// The `comm` of `pid` (`sleep`, `bash`, …).
fn comm(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|c| c.trim().to_owned())
        .unwrap_or_default()
}

/// Whether `pid` runs (a zombie only waits to be reaped).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

/// The blocked-signal mask of `pid` (`SigBlk` in `/proc/<pid>/status`; bit n-1 is signal n).
fn blocked_signals(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let hex = status
        .lines()
        .find_map(|l| l.strip_prefix("SigBlk:"))
        .unwrap()
        .trim();
    u64::from_str_radix(hex, 16).unwrap()
}

fn sigkill(pid: u32) {
    kill(Pid::from_raw(i32::try_from(pid).unwrap()), Signal::SIGKILL).unwrap();
}

/// Polls `find` until it gives something, at most [`OUTCOME_TIMEOUT`].
fn wait_for<T>(what: &str, mut find: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + OUTCOME_TIMEOUT;
    loop {
        if let Some(found) = find() {
            return found;
        }
        assert!(Instant::now() < deadline, "never saw {what}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Waits until `left()` is empty, failing after [`GONE_WITHIN`] with what is left.
fn assert_all_gone(what: &str, mut left: impl FnMut() -> Vec<u32>) {
    let since = Instant::now();
    loop {
        let now: Vec<u32> = left().into_iter().filter(|&p| alive(p)).collect();
        if now.is_empty() {
            return;
        }
        let described: Vec<String> = now.iter().map(|&p| format!("{p} {}", comm(p))).collect();
        assert!(
            since.elapsed() < GONE_WITHIN,
            "{what}: still running after {:?}: {described:?}",
            since.elapsed()
        );
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Issue 14, item 1: a `general` task runs `bash -c 'sleep 30'`; `kill -9` of the pi process
/// left the `sleep` under PID 1, outliving the worker (pi runs tools in their own process
/// group). Under the containment process the whole tree ends within seconds, and the task
/// fails naming what ended pi.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_process_outlives_its_worker_1() {
    let Some(env) = Env::real("tool_outlives_worker") else {
        return;
    };
    let (rt, join) = env.start(2);
    let task = env.task(&shell_task("bash -c 'sleep 30'"), Role::General);
    let fg = rt.delegate(Party::Root, vec![task]).await.unwrap().unwrap();
    let child = admitted(&fg.admitted)[0];
    let sleep = tokio::task::block_in_place(|| {
        wait_for("the tool's sleep", || {
            env.leftovers().into_iter().find(|&p| comm(p) == "sleep")
        })
    });
    let container = rt.actors().worker_pid(child).unwrap();
    let pi = env
        .leftovers()
        .into_iter()
        .find(|&p| parent_pid(p) == Some(container) && p != sleep)
        .unwrap();
    assert_ne!(
        nix::unistd::getpgid(Some(Pid::from_raw(i32::try_from(sleep).unwrap()))),
        nix::unistd::getpgid(Some(Pid::from_raw(i32::try_from(pi).unwrap()))),
        "pi runs the tool in a process group of its own"
    );
    assert_eq!(
        blocked_signals(pi) & (1 << (15 - 1) | 1 << (2 - 1)),
        0,
        "SIGTERM and SIGINT still reach pi"
    );
    sigkill(pi);
    let outcome = tokio::time::timeout(OUTCOME_TIMEOUT, fg.outcome)
        .await
        .unwrap()
        .unwrap();
    let s = &outcome.outcomes[0];
    assert_eq!(s.status, Status::Failed, "{s:?}");
    let error = s.error.clone().unwrap_or_default();
    assert!(error.contains("signal 9"), "{error}");
    tokio::task::block_in_place(|| assert_all_gone("after kill -9 of pi", || env.leftovers()));
    rt.shutdown().await.unwrap();
    join.await.unwrap();
}

/// A private base for `slate run` with real or stand-in pi: the sandbox's agent dir (the fake
/// provider), its `work/` as cwd, and a runtime and cache dir of its own.
struct RunBase {
    sandbox: PiSandbox,
    run: PathBuf,
}

impl RunBase {
    fn new(name: &str, base_url: &str) -> Self {
        let sandbox = PiSandbox::new(name, base_url).unwrap();
        let run = sandbox.root().join("run");
        std::fs::create_dir(&run).unwrap();
        std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700)).unwrap();
        Self { sandbox, run }
    }

    /// `slate run --json -` for pi `pi` (a command line, split on whitespace).
    fn slate_run(&self, pi: &str) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_slate"));
        cmd.args(["--json", "run", "-"])
            .current_dir(&self.sandbox.work);
        for (key, _) in std::env::vars_os() {
            let k = key.to_string_lossy();
            if k.ends_with("_API_KEY") || k.starts_with("PI_") || k.starts_with("SLATE_") {
                cmd.env_remove(&key);
            }
        }
        cmd.env("PI_CODING_AGENT_DIR", &self.sandbox.agent_dir)
            .env("PI_OFFLINE", "1")
            .env("PI_SKIP_VERSION_CHECK", "1")
            .env("PI_TELEMETRY", "0")
            .env("HOME", &self.sandbox.home)
            .env("XDG_RUNTIME_DIR", &self.run)
            .env("XDG_CACHE_HOME", self.sandbox.home.join(".cache"))
            .env("SLATE_PI", pi)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    fn spawn(&self, pi: &str, request: &Value) -> Child {
        let mut child = self.slate_run(pi).spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(request.to_string().as_bytes()).unwrap();
        drop(stdin);
        child
    }

    fn output(&self, pi: &str, request: &Value) -> Output {
        self.spawn(pi, request).wait_with_output().unwrap()
    }

    /// Live processes (other than this test) whose environment names this base: pi's
    /// agent dir, inherited by everything a worker starts.
    fn processes(&self) -> Vec<u32> {
        let needle = self.sandbox.agent_dir.display().to_string();
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|&pid| pid != std::process::id() && alive(pid))
            .filter(|&pid| {
                std::fs::read(format!("/proc/{pid}/environ"))
                    .is_ok_and(|bytes| String::from_utf8_lossy(&bytes).contains(&needle))
            })
            .collect()
    }

    /// A stand-in pi: `--version` prints 1.6.0, anything else runs `body`.
    fn fake_pi(&self, name: &str, body: &str) -> String {
        let path = self.sandbox.root().join(name);
        let script =
            format!("#!/bin/sh\nif [ \"$1\" = --version ]; then echo 1.6.0; exit 0; fi\n{body}\n");
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path.display().to_string()
    }
}

impl Drop for RunBase {
    fn drop(&mut self) {
        for pid in self.processes() {
            let _ = kill(Pid::from_raw(i32::try_from(pid).unwrap()), Signal::SIGKILL);
        }
    }
}

/// The one outcome of `slate run --json`.
fn outcome(out: &Output) -> Value {
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: stdout {:?}, stderr {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    v[0].clone()
}

/// Issue 14, item 1, with Slate itself killed: `kill -9` of `slate run` while its worker's
/// tool sleeps, one `sleep` in the tool's process group and one it moved to a session of its
/// own (`setsid`, out of reach of pi's own cleanup when its stdin closes). The containment
/// process gets its parent-death signal and ends pi and both; nothing of the run is left.
#[test]
fn a_tool_process_outlives_a_killed_slate_run_1() {
    let Some(pi) = pi_env::pi_or_skip("a_tool_process_outlives_a_killed_slate_run_1") else {
        return;
    };
    let fake = fake_llm::FakeLlm::start().unwrap();
    let base = RunBase::new("killed-run", &fake.base_url());
    let command = "bash -c 'setsid sleep 30 & exec sleep 30'";
    let request = json!({"assignment": shell_task(command), "profile": "general"});
    let mut run = base.spawn(&pi.argv.join(" "), &request);
    let slate = run.id();
    wait_for("the tool's two sleeps", || {
        let sleeps = base.processes().into_iter().filter(|&p| comm(p) == "sleep");
        (sleeps.count() == 2).then_some(())
    });
    sigkill(slate);
    let status = run.wait().unwrap();
    assert_eq!(status.code(), None, "killed");
    assert_all_gone("after kill -9 of slate run", || base.processes());
}

/// Issue 14, item 2: a `SLATE_PI` wrapper that prints `agent_settled` before starting pi
/// made `slate run` exit 0 with a `settled` task, no request and an empty `result.txt`. The
/// line comes before pi answered Slate's prompt, so it is evidence only: the run pi really
/// does settles it, with its request and its text.
#[test]
fn a_stdout_line_before_pi_cannot_fake_a_success_2() {
    let Some(pi) = pi_env::pi_or_skip("a_stdout_line_before_pi_cannot_fake_a_success_2") else {
        return;
    };
    let fake = fake_llm::FakeLlm::start().unwrap();
    let base = RunBase::new("fake-settle", &fake.base_url());
    let real = pi.argv.join(" ");
    let wrapper = base.fake_pi(
        "pi-wrapper",
        &format!(
            "printf '%s\\n' '{{\"type\":\"agent_settled\",\"aborted\":false}}'\nexec {real} \"$@\""
        ),
    );
    let out = base.output(
        &wrapper,
        &json!({"assignment": "SCENARIO:TEXT say hello", "profile": "scout"}),
    );
    let s = outcome(&out);
    assert_eq!(out.status.code(), Some(0), "{s}");
    assert_eq!(s["status"], "settled", "{s}");
    assert_eq!(s["telemetry"]["requests"], 1, "{s}");
    let text = std::fs::read_to_string(s["artifacts"]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text.trim(), "Hello from the fake LLM.");
    assert_eq!(fake.request_count(), 1);
}

/// Issue 14, item 2, without pi behind it: the fake settle is all there is, so the worker
/// ends without a result — a failure that carries the line as evidence, never a success.
#[test]
fn a_fake_settle_alone_is_a_failure_with_evidence_2() {
    let base = RunBase::new("fake-settle-alone", "http://127.0.0.1:9/v1");
    let pi = base.fake_pi(
        "pi-liar",
        "printf '%s\\n' '{\"type\":\"agent_settled\",\"aborted\":false}'\nexit 0",
    );
    let out = base.output(&pi, &json!({"assignment": "anything", "profile": "scout"}));
    let s = outcome(&out);
    assert_eq!(out.status.code(), Some(1), "{s}");
    assert_eq!(s["status"], "failed", "{s}");
    let error = s["error"].as_str().unwrap();
    assert!(
        error.contains("worker exited: exit 0")
            && error.contains("agent_settled before pi answered"),
        "{error}"
    );
}

/// Issue 14, item 3: a worker's stdout was read without a line cap (300 MB without a newline
/// cost Slate 300 MB). 64 MiB without a newline now pass the 16 MiB cap: the line is dropped
/// unread, and since a record Slate needed may be lost in it the worker is not believed any
/// more — the task fails naming the cap and the line's start, and the worker is stopped.
/// (The reader's memory bound itself: `worker::pi::lines`'
/// `a_stdout_line_without_a_newline_is_not_read_without_a_cap_3`.)
#[test]
fn a_stdout_line_without_a_newline_is_not_read_without_a_cap_3() {
    let base = RunBase::new("flood", "http://127.0.0.1:9/v1");
    let pi = base.fake_pi(
        "pi-flood",
        "printf 'FLOOD'\nhead -c 67108864 /dev/zero\nexec cat > /dev/null",
    );
    let out = base.output(&pi, &json!({"assignment": "anything", "profile": "scout"}));
    let s = outcome(&out);
    assert_eq!(out.status.code(), Some(1), "{s}");
    assert_eq!(s["status"], "failed", "{s}");
    let error = s["error"].as_str().unwrap();
    assert!(
        error.contains("passed the 16 MiB cap") && error.contains("it began: FLOOD"),
        "{error}"
    );
    assert_all_gone("the flooding worker", || base.processes());
}

/// Issue 14, item 11: transcripts were 0644 (pi's default) inside the 0700 task directories,
/// unlike the 0600 artifacts. The session file is now 0600 — and only it: a file the
/// worker's tool creates in the workspace keeps the mode of any file the user creates there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transcripts_are_private_like_the_artifacts_11() {
    let Some(env) = Env::real("private_transcripts") else {
        return;
    };
    let task = env.task(&shell_task("touch made-by-the-tool"), Role::General);
    let s = pi_runtime::run_one(&env, task).await;
    assert_eq!(s.status, Status::Settled, "{:?}", s.error);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let transcript = PathBuf::from(s.transcript.clone().unwrap());
    assert!(
        std::fs::read_to_string(&transcript)
            .unwrap()
            .starts_with("{\"type\":\"session\""),
        "pi wrote its session into the file Slate created"
    );
    assert_eq!(mode(&transcript), 0o600, "{}", transcript.display());
    let text = PathBuf::from(s.artifacts.unwrap().text.unwrap());
    assert_eq!(mode(&text), 0o600);
    let reference = env.sandbox.work.join("made-by-the-test");
    std::fs::File::create(&reference).unwrap();
    assert_eq!(
        mode(&env.sandbox.work.join("made-by-the-tool")),
        mode(&reference),
        "no umask on the worker's tools"
    );
    assert!(env.leftovers().is_empty(), "no process left");
}
