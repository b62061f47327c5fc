//! Issue 22, items 1 and 2 — a worker's processes never act with more than that worker's
//! authority, with real pi workers:
//!
//! 1. a tool that `kill -9`s its own containment process (and a double-forked and a `setsid`
//!    process it started) is reparented out of the worker's tree; it then ran `slate status`,
//!    `slate stop` and `slate delegate` as the **operator**. Under a `slate serve` coordinator
//!    (the subreaper of its workers) it speaks for nobody.
//! 2. a worker's capability, read out of pi's memory, was accepted from any process of the
//!    same user (and burnt the worker's tool budget through `guard`). It admits only a
//!    process in that worker's tree.
//!
//! pi comes from `SLATE_PI` or `ci/install-pi.sh`'s env file. Without it the tests print
//! `SKIPPED: …` and pass, except under `CI=true`, where they fail.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

#[path = "support/fake_llm.rs"]
mod fake_llm;
#[path = "support/peer_client.rs"]
mod peer_client;
#[path = "support/pi_env.rs"]
mod pi_env;
#[path = "support/pi_runtime.rs"]
mod pi_runtime;

use std::collections::HashMap;
use std::io::BufRead as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use slate::control::{Client, ClientError};
use slate::core::{ChildRef, WorkerStart};
use slate::runtime::backend::EventSink;
use slate::runtime::{
    Capability, RuntimeConfig, WorkerBackend, WorkerCommand, WorkerDirs, WorkerIdentity, spawn,
};
use slate::worker::pi::PiBackend;
use tokio::sync::mpsc;

const ANSWER: Duration = Duration::from_secs(20);
/// How long a worker's shell may take to do what it was told.
const SHELL_DONE: Duration = Duration::from_secs(90);

/// Not a test: the control-socket client the other tests run as a process of its own.
#[test]
fn peer_client() {
    peer_client::run_if_asked();
}

/// `SCENARIO:SHELL` makes the fake LLM call `bash` with the `COMMAND:` line once.
fn shell_task(command: &str) -> String {
    format!("SCENARIO:SHELL run one command\nCOMMAND: {command}")
}

fn wait_for_file(path: &Path, within: Duration) -> String {
    let deadline = Instant::now() + within;
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::fs::read_to_string(path).unwrap()
}

async fn call(client: &Client, method: &str, params: Value) -> Result<Value, ClientError> {
    tokio::time::timeout(ANSWER, client.call(method, params))
        .await
        .unwrap_or_else(|_| panic!("{method}: no answer within {ANSWER:?}"))
}

/// One background task from the operator; its identity.
async fn delegate(operator: &Client, assignment: &str, profile: &str, limits: Value) -> ChildRef {
    let params = json!({
        "request": {"assignment": assignment, "profile": profile, "limits": limits},
        "background": true,
    });
    let reply = call(operator, "delegate", params).await.unwrap();
    let child = &reply["children"][0];
    ChildRef::new(
        child["id"].as_str().unwrap().parse().unwrap(),
        u32::try_from(child["generation"].as_u64().unwrap()).unwrap(),
    )
}

async fn snapshot(operator: &Client, target: ChildRef) -> Value {
    let status = call(operator, "status", json!({"target": target.to_string()}))
        .await
        .unwrap();
    status["snapshot"].clone()
}

async fn until_status(operator: &Client, target: ChildRef, done: impl Fn(&str) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let s = snapshot(operator, target).await;
        if done(s["status"].as_str().unwrap_or_default()) {
            return s;
        }
        assert!(Instant::now() < deadline, "{target}: {s}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `slate serve` with real pi workers in a sandbox of its own: the coordinator as the CLI
/// runs it (its workers' subreaper), not one embedded in this test process.
struct Serve {
    sandbox: pi_env::PiSandbox,
    process: Child,
    socket: PathBuf,
}

impl Serve {
    fn start(name: &str, fake: &fake_llm::FakeLlm, pi: &pi_env::PiCommand) -> Self {
        Self::start_with(name, fake, pi, &[])
    }

    /// `slate serve ARGS…`.
    fn start_with(
        name: &str,
        fake: &fake_llm::FakeLlm,
        pi: &pi_env::PiCommand,
        args: &[&str],
    ) -> Self {
        let sandbox = pi_env::PiSandbox::new(name, &fake.base_url()).unwrap();
        let run = sandbox.root().join("run");
        std::fs::create_dir(&run).unwrap();
        std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700)).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_slate"));
        cmd.arg("serve").args(args).current_dir(&sandbox.work);
        for (key, _) in std::env::vars_os() {
            let k = key.to_string_lossy();
            if k.ends_with("_API_KEY") || k.starts_with("PI_") || k.starts_with("SLATE_") {
                cmd.env_remove(&key);
            }
        }
        cmd.env("PI_CODING_AGENT_DIR", &sandbox.agent_dir)
            .env("PI_OFFLINE", "1")
            .env("PI_SKIP_VERSION_CHECK", "1")
            .env("PI_TELEMETRY", "0")
            .env("HOME", &sandbox.home)
            .env("XDG_RUNTIME_DIR", &run)
            .env("XDG_CACHE_HOME", sandbox.home.join(".cache"))
            .env("SLATE_PI", pi.argv.join(" "))
            // Every process of this coordinator carries the sandbox's tag.
            .env(pi_env::TAG_VAR, &sandbox.tag)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut process = cmd.spawn().unwrap();
        let mut lines = std::io::BufReader::new(process.stdout.take().unwrap()).lines();
        let mut socket = None;
        for line in lines.by_ref().take(3) {
            let line = line.unwrap();
            if let Some(path) = line.strip_prefix("socket ") {
                socket = Some(PathBuf::from(path));
            }
        }
        Self {
            sandbox,
            process,
            socket: socket.expect("slate serve printed its socket"),
        }
    }

    /// The `slate` CLI as the user types it in another terminal: not a descendant of the
    /// coordinator, so the operator.
    fn operator_cli(&self, args: &[&str]) -> std::process::Output {
        Command::new(env!("CARGO_BIN_EXE_slate"))
            .args(args)
            .current_dir(&self.sandbox.work)
            .env("SLATE_SOCKET", &self.socket)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// Shut the coordinator down and wait for it; then nothing of the run is left.
    fn finish(mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(i32::try_from(self.process.id()).unwrap()),
            nix::sys::signal::Signal::SIGTERM,
        );
        let status = self.process.wait().unwrap();
        assert!(status.success(), "slate serve: {status:?}");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let left = self.sandbox.leftover_processes();
            if left.is_empty() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "left after the coordinator ended: {left:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// What the worker's bash runs (`sh attack.sh SLATE SIBLING`): it finds its containment
/// process (its nearest ancestor run as `slate __contain-worker`), starts two more attackers
/// that leave its tree (a double fork and a `setsid` process), `kill -9`s the containment,
/// waits until it has exited, and then each of the three tries `slate status`, `slate stop
/// SIBLING` and a nested `slate delegate`, writing what they got to
/// `<name>.status|stop|delegate`. (Before it has exited they are still the worker's.)
const ATTACK: &str = r#"S="$1"; B="$2"
attack() {
  "$S" status >"$1.status" 2>&1; echo "exit=$?" >>"$1.status"
  "$S" stop "$B" >"$1.stop" 2>&1; echo "exit=$?" >>"$1.stop"
  "$S" delegate --profile scout "SCENARIO:TEXT nested" >"$1.delegate" 2>&1; echo "exit=$?" >>"$1.delegate"
  : >"$1.done"
}
if [ -n "$3" ]; then
  while [ ! -f killed ]; do sleep 0.05; done
  attack "$3"
  exit 0
fi
p=$$
while [ "$p" -gt 1 ]; do
  case "$(tr '\0' ' ' <"/proc/$p/cmdline")" in *__contain-worker*) break ;; esac
  p=$(sed 's/.*) //' "/proc/$p/stat" | cut -d' ' -f2)
done
echo "$p" >containment.pid
( sh "$0" "$S" "$B" double </dev/null >/dev/null 2>&1 & )
setsid -f sh "$0" "$S" "$B" setsid </dev/null >/dev/null 2>&1
sleep 0.3
kill -9 "$p"
# The kill is delivered asynchronously: wait until the containment process has exited (a
# zombie, or gone), when its children have been reparented.
while [ -e "/proc/$p" ] && [ "$(sed 's/.*) //' "/proc/$p/stat" | cut -c1)" != Z ]; do sleep 0.01; done
: >killed
attack bash
"#;

/// Issue 22, item 1: `kill -9` of the containment process from the worker's bash reparented
/// its tools out of the worker's tree (to init), and the next `slate status`, `stop` and
/// `delegate` from them acted as the operator: the fleet was listed, the sibling stopped,
/// and a task admitted despite `spawns: 0`. Now every one of them — the bash itself, a
/// double-forked and a `setsid` process — speaks for nobody, the sibling keeps running,
/// nothing is admitted, and the worker whose containment died is ended; the operator's own
/// CLI still acts as the operator.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_that_kills_its_containment_is_never_the_operator_1() {
    let Some(pi) = pi_env::pi_or_skip("a_tool_that_kills_its_containment_is_never_the_operator_1")
    else {
        return;
    };
    let fake = fake_llm::FakeLlm::start().unwrap();
    let serve = Serve::start("kill-containment", &fake, &pi);
    let operator = Client::connect_path(&serve.socket, ANSWER).await.unwrap();
    let sibling = delegate(
        &operator,
        "SCENARIO:SLOW90 keep streaming",
        "scout",
        json!({}),
    )
    .await;
    until_status(&operator, sibling, |s| s == "running").await;
    let work = serve.sandbox.work.clone();
    std::fs::write(work.join("attack.sh"), ATTACK).unwrap();
    let command = format!(
        "sh {} {} {sibling}",
        work.join("attack.sh").display(),
        env!("CARGO_BIN_EXE_slate")
    );
    let attacker = delegate(
        &operator,
        &shell_task(&command),
        "general",
        json!({"spawns": 0}),
    )
    .await;

    let results: HashMap<&str, [String; 3]> = tokio::task::block_in_place(|| {
        ["bash", "double", "setsid"]
            .into_iter()
            .map(|who| {
                wait_for_file(&work.join(format!("{who}.done")), SHELL_DONE);
                let read = |what: &str| {
                    std::fs::read_to_string(work.join(format!("{who}.{what}"))).unwrap()
                };
                (who, [read("status"), read("stop"), read("delegate")])
            })
            .collect()
    });
    let containment = std::fs::read_to_string(work.join("containment.pid")).unwrap();
    eprintln!(
        "what the worker's bash got from `slate status`:\n{}",
        results["bash"][0]
    );
    for (who, [status, stop, delegated]) in &results {
        for (what, out) in [("status", status), ("stop", stop), ("delegate", delegated)] {
            assert!(
                out.contains("speaks for nobody") && out.ends_with("exit=1\n"),
                "{who} (containment {}) {what}: {out}",
                containment.trim()
            );
            assert!(
                !out.contains(&sibling.id.to_string()) || what == "stop",
                "{who} {what}: {out}"
            );
        }
    }

    let s = snapshot(&operator, sibling).await;
    assert_eq!(s["status"], "running", "the sibling was not stopped: {s}");
    let fleet = call(&operator, "status", json!({})).await.unwrap();
    assert_eq!(
        fleet["children"].as_array().unwrap().len(),
        2,
        "nothing was admitted from the orphans: {fleet}"
    );
    let ended = until_status(&operator, attacker, |s| s != "running" && s != "queued").await;
    assert_eq!(ended["status"], "failed", "{ended}");
    assert!(
        ended["error"]
            .as_str()
            .unwrap_or_default()
            .contains("containment"),
        "{ended}"
    );

    // The operator's own CLI, started from outside the coordinator's tree, is the operator.
    let out = serve.operator_cli(&["status"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(text.contains(&sibling.id.to_string()[..8]), "{text}");

    call(&operator, "stop", json!({"target": sibling.to_string()}))
        .await
        .unwrap();
    drop(operator);
    tokio::task::block_in_place(|| serve.finish());
}

/// A worker of one coordinator pointed `slate status` at another coordinator of the same user
/// (`SLATE_SOCKET`): nothing of the second one's descended from the worker, so it answered
/// as to the operator and listed its fleet. The worker's containment process carries a name
/// every coordinator recognizes: there it speaks for nobody.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_is_nobody_to_another_coordinator_of_the_same_user_1() {
    let Some(pi) =
        pi_env::pi_or_skip("a_worker_is_nobody_to_another_coordinator_of_the_same_user_1")
    else {
        return;
    };
    let fake = fake_llm::FakeLlm::start().unwrap();
    let home = Serve::start("fleet-a", &fake, &pi);
    let other = Serve::start_with(
        "fleet-b",
        &fake,
        &pi,
        &["--backend", "sim", "--model", "fake/fake-model"],
    );
    let other_operator = Client::connect_path(&other.socket, ANSWER).await.unwrap();
    let theirs = delegate(&other_operator, "Survey the parser", "scout", json!({})).await;
    let operator = Client::connect_path(&home.socket, ANSWER).await.unwrap();
    let work = home.sandbox.work.clone();
    let command = format!(
        "SLATE_SOCKET={} {} status > cross.out 2>&1; echo exit=$? >> cross.out",
        other.socket.display(),
        env!("CARGO_BIN_EXE_slate")
    );
    let worker = delegate(&operator, &shell_task(&command), "general", json!({})).await;
    let out = tokio::task::block_in_place(|| wait_for_file(&work.join("cross.out"), SHELL_DONE));
    let done = tokio::task::block_in_place(|| {
        let deadline = Instant::now() + SHELL_DONE;
        loop {
            let text = std::fs::read_to_string(work.join("cross.out")).unwrap();
            if text.contains("exit=") || Instant::now() > deadline {
                return text;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    drop(out);
    assert!(
        done.contains("speaks for nobody")
            && done.contains("slate-contain")
            && done.ends_with("exit=1\n"),
        "{done}"
    );
    assert!(!done.contains(&theirs.id.to_string()[..8]), "{done}");
    until_status(&operator, worker, |s| s == "settled").await;
    drop((operator, other_operator));
    tokio::task::block_in_place(|| {
        home.finish();
        other.finish();
    });
}

/// The real pi backend, keeping each started worker's capability for the test (what a
/// same-user process reading pi's memory would find).
struct Capturing {
    pi: PiBackend,
    capabilities: Arc<Mutex<HashMap<ChildRef, Capability>>>,
}

impl WorkerBackend for Capturing {
    fn start(
        &self,
        start: WorkerStart,
        dirs: WorkerDirs,
        identity: WorkerIdentity,
        events: EventSink,
    ) -> mpsc::UnboundedSender<WorkerCommand> {
        self.capabilities
            .lock()
            .unwrap()
            .insert(start.child, identity.capability().clone());
        self.pi.start(start, dirs, identity, events)
    }

    fn name(&self) -> &'static str {
        "capturing-pi"
    }
}

/// Issue 22, item 2: a real worker's capability presented by a process outside that worker's
/// tree was accepted as the worker, and its `guard` calls counted against the worker's tool
/// budget. Now it is refused (`capability-refused`) and counts nothing, while the same
/// capability presented from the worker's own bash is that worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capability_presented_outside_its_workers_tree_is_refused_2() {
    let Some(env) = pi_runtime::Env::real("stolen_capability") else {
        return;
    };
    let capabilities = Arc::new(Mutex::new(HashMap::new()));
    let backend = Capturing {
        pi: PiBackend::new(env.pi.clone()).with_containment(pi_runtime::contained()),
        capabilities: Arc::clone(&capabilities),
    };
    let config = RuntimeConfig {
        root_id: uuid::Uuid::new_v4(),
        policy: slate::policy::scheduling::SchedulingPolicy {
            concurrency: 2,
            ..Default::default()
        },
        id_seed: 5,
        delegation_dir: env.delegation.clone(),
        event_log: false,
        kill_grace: Duration::from_secs(10),
    };
    let root_id = config.root_id;
    let (rt, join) = spawn(config, Arc::new(backend)).unwrap();
    let work = std::fs::canonicalize(&env.sandbox.work).unwrap();
    let (socket, server, stop) = pi_runtime::serve_pi(&env, &rt, root_id, &work);

    // The worker's bash waits for the capability, then presents it from inside the tree.
    let inside = peer_client::command_line("hello", None, Some("capability"), "inside.json");
    let command = format!("while [ ! -f capability ]; do sleep 0.05; done; {inside}");
    let task = env.task(&shell_task(&command), slate::core::Role::General);
    let fg = rt
        .delegate(slate::core::Party::Root, vec![task])
        .await
        .unwrap()
        .unwrap();
    let child = pi_runtime::admitted(&fg.admitted)[0];
    pi_runtime::wait_status(&rt, child, slate::core::Status::Running).await;
    let capability = capabilities.lock().unwrap()[&child].clone();
    let stolen = env.sandbox.root().join("stolen");
    std::fs::write(&stolen, capability.expose()).unwrap();

    // From a process that descends from no worker (a child of this test): refused.
    let outside = env.sandbox.root().join("outside.json");
    let status = peer_client::command("hello", &socket, Some(&stolen), &outside)
        .status()
        .unwrap();
    assert!(status.success());
    let answer: Value = serde_json::from_str(&std::fs::read_to_string(&outside).unwrap()).unwrap();
    assert_eq!(
        answer["hello"]["error"]["code"], "capability-refused",
        "a stolen capability from outside the worker's tree: {answer}"
    );
    assert_eq!(answer["guard"], Value::Null, "{answer}");

    // From the worker's own bash: that worker.
    std::fs::write(work.join("capability"), capability.expose()).unwrap();
    let inside =
        tokio::task::block_in_place(|| wait_for_file(&work.join("inside.json"), SHELL_DONE));
    let inside: Value = serde_json::from_str(&inside).unwrap();
    assert_eq!(
        inside["hello"]["result"]["actor"],
        json!({"kind": "child", "target": child.to_string()}),
        "{inside}"
    );
    assert_eq!(inside["guard"]["result"]["allow"], true, "{inside}");

    let outcome = tokio::time::timeout(pi_runtime::OUTCOME_TIMEOUT, fg.outcome)
        .await
        .unwrap()
        .unwrap();
    let s = &outcome.outcomes[0];
    assert_eq!(s.status, slate::core::Status::Settled, "{:?}", s.error);
    // The bash call and the inside client's guard; nothing from outside.
    assert_eq!(s.tool_calls, 2, "{s:?}");
    rt.shutdown().await.unwrap();
    join.await.unwrap();
    let _ = stop.send(());
    let _ = server.await;
}

/// Figures for `docs/performance.md` (run by hand, `--ignored --nocapture`): connect +
/// `hello` from a process outside the coordinator's tree (this test's child, several
/// ancestors deep, as a CLI command is) against `slate serve --backend sim`. `SLATE_BIN`
/// names another `slate` binary to compare (an earlier build).
#[test]
#[ignore = "a measurement, not a check"]
fn hello_latency_figures() {
    let bin = std::env::var_os("SLATE_BIN")
        .map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_slate")), PathBuf::from);
    let base = std::env::temp_dir().join(format!("slate-hello-fig-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    for dir in ["work", "agent", "run"] {
        std::fs::create_dir_all(base.join(dir)).unwrap();
    }
    std::fs::set_permissions(base.join("run"), std::fs::Permissions::from_mode(0o700)).unwrap();
    let mut serve = Command::new(&bin)
        .args(["serve", "--backend", "sim", "--model", "fake/m"])
        .current_dir(base.join("work"))
        .env("PI_CODING_AGENT_DIR", base.join("agent"))
        .env("XDG_RUNTIME_DIR", base.join("run"))
        .env_remove("SLATE_SOCKET")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut socket = None;
    for line in std::io::BufReader::new(serve.stdout.take().unwrap())
        .lines()
        .take(3)
    {
        if let Some(path) = line.unwrap().strip_prefix("socket ") {
            socket = Some(PathBuf::from(path));
        }
    }
    let socket = socket.unwrap();
    let out = base.join("hellos.json");
    for round in 0..3 {
        let status = peer_client::command("hellos", &socket, None, &out)
            .status()
            .unwrap();
        assert!(status.success());
        eprintln!(
            "{} round {round}: {}",
            bin.display(),
            std::fs::read_to_string(&out).unwrap().trim()
        );
    }
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(serve.id()).unwrap()),
        nix::sys::signal::Signal::SIGTERM,
    );
    let _ = serve.wait();
    let _ = std::fs::remove_dir_all(base);
}
