//! `slate serve --pi-session`: the coordinator of one pi session, as Slate's extension starts
//! it — parent id = the session id, storage under `--session-dir`, attach to a live one, and no
//! coordinator or worker outliving the session: stdin's end (its holder closed it, or was
//! killed), the death of the process that started it (`PR_SET_PDEATHSIG`), or a `shutdown`
//! request each stop every worker, drain, remove the socket and metadata, and exit. Simulated
//! workers, and real pi workers in one test.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

#[path = "support/fake_llm.rs"]
mod fake_llm;
#[path = "support/pi_env.rs"]
mod pi_env;

use std::io::{BufRead, BufReader, Read as _, Write as _};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use uuid::Uuid;

/// No worker, no coordinator is left this long after the session ended.
const GONE_WITHIN: Duration = Duration::from_secs(5);
const ANSWER: Duration = Duration::from_secs(60);

/// A private base: `work/` (the cwd), `agent/` (pi's agent dir), `run/` (`XDG_RUNTIME_DIR`),
/// `session/` (pi's session directory of this cwd), a script book whose tasks think for a
/// minute.
struct Base {
    root: PathBuf,
    id: Uuid,
}

impl Base {
    fn new(name: &str) -> Self {
        let root = std::env::temp_dir().join(format!("slate-serve-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for dir in ["work", "agent", "run", "session", "home"] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        let root = std::fs::canonicalize(root).unwrap();
        let book = json!({
            "scripts": [],
            "default": {"steps": [
                {"think": 60_000},
                {"request": {"ms": 10, "text": "done", "inputTokens": 1, "outputTokens": 1, "cost": null}},
            ]},
        });
        std::fs::write(root.join("scripts.json"), book.to_string()).unwrap();
        Self {
            root,
            id: Uuid::new_v4(),
        }
    }

    fn work(&self) -> PathBuf {
        self.root.join("work")
    }

    fn socket(&self) -> PathBuf {
        self.root.join(format!("run/slate/{}.sock", self.id))
    }

    fn metadata(&self) -> PathBuf {
        self.socket().with_extension("json")
    }

    fn events(&self) -> PathBuf {
        self.root
            .join(format!("session/delegation/{}/events.jsonl", self.id))
    }

    fn env(&self, cmd: &mut Command) {
        cmd.current_dir(self.work())
            .env("PI_CODING_AGENT_DIR", self.root.join("agent"))
            .env("XDG_RUNTIME_DIR", self.root.join("run"))
            .env("XDG_CACHE_HOME", self.root.join("home/.cache"))
            .env_remove("SLATE_SOCKET");
    }

    /// `serve --pi-session` arguments (sim backend unless `backend` says otherwise).
    fn serve_args(&self, backend: &str) -> Vec<String> {
        let mut args: Vec<String> = vec![
            "serve".into(),
            "--backend".into(),
            backend.into(),
            "--pi-session".into(),
            self.id.to_string(),
            "--session-dir".into(),
            self.root.join("session").display().to_string(),
            "--host-version".into(),
            "1.6.0".into(),
        ];
        if backend == "sim" {
            args.extend([
                "--model".into(),
                "fake/model".into(),
                "--scenario".into(),
                self.root.join("scripts.json").display().to_string(),
            ]);
        }
        args
    }

    fn serve(&self, backend: &str) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_slate"));
        cmd.args(self.serve_args(backend));
        self.env(&mut cmd);
        cmd
    }

    /// `serve --pi-session` with real pi workers against `sandbox`'s fake LLM: pi's sandboxed
    /// agent dir (the fake provider) is the session's, and nothing of the host's pi or
    /// provider keys leaks in. Pipes for all three streams.
    fn serve_real_pi(&self, sandbox: &pi_env::PiSandbox, pi: &pi_env::PiCommand) -> Child {
        for entry in std::fs::read_dir(&sandbox.agent_dir).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(
                entry.path(),
                self.root.join("agent").join(entry.file_name()),
            )
            .unwrap();
        }
        let mut serve = self.serve("pi");
        for (key, _) in std::env::vars_os() {
            let k = key.to_string_lossy();
            if k.ends_with("_API_KEY") || k.starts_with("PI_") {
                serve.env_remove(&key);
            }
        }
        serve
            .env("PI_CODING_AGENT_DIR", self.root.join("agent"))
            .env("PI_OFFLINE", "1")
            .env("PI_SKIP_VERSION_CHECK", "1")
            .env("PI_TELEMETRY", "0")
            .env("HOME", self.root.join("home"))
            .env("SLATE_PI", pi.argv.join(" "))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        serve.spawn().unwrap()
    }

    fn slate(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_slate"));
        cmd.args(args).stdin(Stdio::null());
        self.env(&mut cmd);
        cmd.output().unwrap()
    }

    /// One background task of the session's coordinator, by the CLI.
    fn delegate(&self, assignment: &str) -> String {
        let parent = self.id.to_string();
        let out = self.slate(&[
            "--json",
            "delegate",
            "--background",
            "--parent",
            &parent,
            assignment,
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        let reply: Value = serde_json::from_slice(&out.stdout).unwrap();
        let child = &reply["children"][0];
        format!(
            "{}@{}",
            child["id"].as_str().unwrap(),
            child["generation"].as_u64().unwrap()
        )
    }

    fn until_running(&self, target: &str) {
        let parent = self.id.to_string();
        let deadline = Instant::now() + ANSWER;
        loop {
            let out = self.slate(&["--json", "status", "--parent", &parent, target]);
            let status: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
            if status["snapshot"]["status"] == "running" {
                return;
            }
            assert!(Instant::now() < deadline, "{target}: {status}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The coordinator's pid, from its metadata.
    fn pid(&self) -> u32 {
        let meta: Value = serde_json::from_slice(&std::fs::read(self.metadata()).unwrap()).unwrap();
        u32::try_from(meta["pid"].as_u64().unwrap()).unwrap()
    }

    /// Live processes whose command line or environment names this base: the coordinator
    /// (its arguments) and its workers (pi renames its process title, but its environment
    /// names the coordinator's socket and the session's agent dir).
    fn processes(&self) -> Vec<u32> {
        let needle = self.root.display().to_string();
        let names = |pid: u32, file: &str| {
            std::fs::read(format!("/proc/{pid}/{file}"))
                .is_ok_and(|bytes| String::from_utf8_lossy(&bytes).contains(&needle))
        };
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|&pid| pid != std::process::id() && alive(pid))
            .filter(|&pid| names(pid, "cmdline") || names(pid, "environ"))
            .collect()
    }

    /// Waits until the coordinator `pid` and every process of this base are gone, and its
    /// socket and metadata were removed: within [`GONE_WITHIN`] of `since`.
    fn assert_gone(&self, pid: u32, since: Instant) {
        loop {
            let left: Vec<u32> = self.processes();
            let files = self.socket().exists() || self.metadata().exists();
            if !alive(pid) && left.is_empty() && !files {
                return;
            }
            assert!(
                since.elapsed() < GONE_WITHIN,
                "after {:?}: coordinator alive {}, processes {left:?}, socket/metadata left {files}",
                since.elapsed(),
                alive(pid)
            );
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// The last snapshot the event log holds of `target`.
    fn logged(&self, target: &str) -> Value {
        let (id, _) = target.split_once('@').unwrap();
        let text = std::fs::read_to_string(self.events()).unwrap();
        let last = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .rfind(|e| e["child"]["id"] == id);
        match last {
            Some(event) => event["child"].clone(),
            None => panic!("{target} not in {}", self.events().display()),
        }
    }
}

impl Drop for Base {
    fn drop(&mut self) {
        for pid in self.processes() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap()),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Whether `pid` runs (a zombie does not: it only waits to be reaped).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The three lines `serve` prints first: parent, socket, events.
fn first_lines(stdout: ChildStdout) -> (String, PathBuf, PathBuf) {
    let mut lines = BufReader::new(stdout).lines();
    let mut next = || lines.next().unwrap().unwrap();
    let parent = next()
        .strip_prefix("slate serve: parent ")
        .unwrap()
        .to_owned();
    let socket = PathBuf::from(next().strip_prefix("socket ").unwrap());
    let events = PathBuf::from(next().strip_prefix("events ").unwrap());
    (parent, socket, events)
}

fn wait_exit(child: &mut Child, within: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "still running after {within:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `hello`, then one request, on a plain socket; the answer line.
fn request(socket: &Path, method: &str, params: &Value) -> Value {
    let mut stream = UnixStream::connect(socket).unwrap();
    stream.set_read_timeout(Some(ANSWER)).unwrap();
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

#[test]
fn the_session_coordinator_serves_the_session_id_attaches_and_ends_with_stdin() {
    let base = Base::new("stdin");
    let mut serve = base
        .serve("sim")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (parent, socket, events) = first_lines(serve.stdout.take().unwrap());
    assert_eq!(parent, base.id.to_string());
    assert_eq!(socket, base.socket());
    assert_eq!(events, base.events());
    let meta: Value = serde_json::from_slice(&std::fs::read(base.metadata()).unwrap()).unwrap();
    assert_eq!(meta["events"], json!(base.events()));
    assert_eq!(meta["cwd"], json!(base.work()));

    let task = base.delegate("Survey the parser");
    base.until_running(&task);
    // `slate status` finds it from the same directory, with no selector.
    let status = base.slate(&["--json", "status"]);
    assert!(status.status.success(), "{}", stderr(&status));
    let fleet: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(fleet["parentId"], json!(base.id));

    // A second spawn for the same session attaches: the same lines, exit 0, nothing started.
    let second = base
        .serve("sim")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(second.status.success(), "{}", stderr(&second));
    assert_eq!(
        String::from_utf8_lossy(&second.stdout),
        format!(
            "slate serve: parent {}\nsocket {}\nevents {}\n",
            base.id,
            base.socket().display(),
            base.events().display()
        )
    );
    assert!(stderr(&second).contains("attached"), "{}", stderr(&second));
    let pid = base.pid();
    assert_eq!(pid, serve.id(), "the first coordinator still serves");
    let mut json = base.serve("sim");
    json.arg("--json");
    let attached = json.stdin(Stdio::null()).output().unwrap();
    let attached: Value = serde_json::from_slice(&attached.stdout).unwrap();
    assert_eq!(
        attached,
        json!({"parentId": base.id, "socket": base.socket(), "events": base.events(), "attached": true})
    );

    // The session ends: stdin closes while the starting process lives on.
    let since = Instant::now();
    drop(serve.stdin.take());
    let status = wait_exit(&mut serve, GONE_WITHIN);
    assert!(status.success(), "{status:?}");
    base.assert_gone(pid, since);
    let mut err = String::new();
    serve
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(err.contains("stdin closed"), "{err}");
    let snapshot = base.logged(&task);
    assert_eq!(snapshot["status"], "cancelled", "{snapshot}");
    assert!(snapshot["endedAt"].is_u64(), "disposed: {snapshot}");
}

#[test]
fn a_new_runtime_of_a_resumed_session_replaces_a_stale_socket_and_sets_the_earlier_log_aside() {
    let base = Base::new("resumed");
    for round in 1..=2 {
        let mut serve = base
            .serve("sim")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let (parent, _, events) = first_lines(serve.stdout.take().unwrap());
        assert_eq!(parent, base.id.to_string(), "round {round}");
        assert_eq!(events, base.events());
        base.delegate(&format!("Survey round {round}"));
        if round == 1 {
            // Killed outright: its socket and metadata stay behind, stale.
            serve.kill().unwrap();
            serve.wait().unwrap();
            assert!(base.socket().exists() && base.metadata().exists());
        } else {
            drop(serve.stdin.take());
            assert!(wait_exit(&mut serve, GONE_WITHIN).success());
        }
    }
    let dir = base.events().parent().unwrap().to_owned();
    let earlier = std::fs::read_to_string(dir.join("events.1.jsonl")).unwrap();
    let latest = std::fs::read_to_string(base.events()).unwrap();
    assert!(earlier.contains("Survey round 1") && !earlier.contains("Survey round 2"));
    assert!(latest.contains("Survey round 2") && !latest.contains("Survey round 1"));
}

#[test]
fn killing_the_process_that_holds_stdin_stops_the_coordinator() {
    let base = Base::new("sigkill");
    let fifo = base.root.join("lifeline");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    // sh starts `serve` with stdin from the FIFO, then holds the FIFO's write end itself
    // (opened after the fork, so only sh has it) and waits: pi's role.
    let mut sh = Command::new("sh");
    sh.arg("-c")
        .arg(r#"fifo=$1; shift; "$@" < "$fifo" & exec 3>"$fifo"; wait"#)
        .arg("sh")
        .arg(&fifo)
        .arg(env!("CARGO_BIN_EXE_slate"))
        .args(base.serve_args("sim"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    base.env(&mut sh);
    let mut sh = sh.spawn().unwrap();
    let (parent, _, _) = first_lines(sh.stdout.take().unwrap());
    assert_eq!(parent, base.id.to_string());
    let pid = base.pid();
    assert_ne!(pid, sh.id());
    let task = base.delegate("Survey the parser");
    base.until_running(&task);
    let since = Instant::now();
    sh.kill().unwrap();
    sh.wait().unwrap();
    base.assert_gone(pid, since);
    assert_eq!(base.logged(&task)["status"], "cancelled");
}

#[test]
fn the_death_of_the_starting_process_alone_stops_the_coordinator() {
    let base = Base::new("pdeathsig");
    let fifo = base.root.join("lifeline");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    // This time the test holds stdin's write end: only the parent-death signal can tell.
    let mut sh = Command::new("sh");
    sh.arg("-c")
        .arg(r#"fifo=$1; shift; "$@" < "$fifo" & wait"#)
        .arg("sh")
        .arg(&fifo)
        .arg(env!("CARGO_BIN_EXE_slate"))
        .args(base.serve_args("sim"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    base.env(&mut sh);
    let mut sh = sh.spawn().unwrap();
    let lifeline = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    let (parent, _, _) = first_lines(sh.stdout.take().unwrap());
    assert_eq!(parent, base.id.to_string());
    let pid = base.pid();
    let task = base.delegate("Survey the parser");
    base.until_running(&task);
    let since = Instant::now();
    sh.kill().unwrap();
    sh.wait().unwrap();
    base.assert_gone(pid, since);
    drop(lifeline);
    assert_eq!(base.logged(&task)["status"], "cancelled");
}

#[test]
fn a_shutdown_request_stops_running_workers_too() {
    let base = Base::new("shutdown");
    let mut serve = base
        .serve("sim")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (_, socket, _) = first_lines(serve.stdout.take().unwrap());
    let pid = base.pid();
    let task = base.delegate("Survey the parser");
    base.until_running(&task);
    let since = Instant::now();
    let answer = request(&socket, "shutdown", &json!({}));
    assert_eq!(answer["result"], json!({"shuttingDown": true}), "{answer}");
    assert!(wait_exit(&mut serve, GONE_WITHIN).success());
    base.assert_gone(pid, since);
    assert_eq!(base.logged(&task)["status"], "cancelled");
}

#[test]
fn a_bad_session_id_is_a_usage_error_naming_the_flag() {
    let base = Base::new("usage");
    for id in [
        "not-a-uuid",
        "6f1c",
        "{6f1c2b3a-0000-4000-8000-000000000000}",
    ] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_slate"));
        cmd.args(["serve", "--backend", "sim", "--pi-session", id])
            .stdin(Stdio::null());
        base.env(&mut cmd);
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{id}");
        assert!(stderr(&out).contains("--pi-session"), "{}", stderr(&out));
    }
    // The session's own flags need a session.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_slate"));
    cmd.args(["serve", "--backend", "sim", "--host-version", "1.6.0"])
        .stdin(Stdio::null());
    base.env(&mut cmd);
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--pi-session"), "{}", stderr(&out));
}

#[test]
fn an_unsupported_host_still_serves_status_and_refuses_delegation() {
    let base = Base::new("old-host");
    let mut args = base.serve_args("pi");
    let at = args.iter().position(|a| a == "--host-version").unwrap();
    args[at + 1] = "1.5.1".into();
    // The workers' pi is never asked: nothing can be launched under this host.
    let mut serve = Command::new(env!("CARGO_BIN_EXE_slate"));
    serve
        .args(&args)
        .args(["--model", "fake/model"])
        .env("SLATE_PI", base.root.join("no-such-pi"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    base.env(&mut serve);
    let mut serve = serve.spawn().unwrap();
    let (_, socket, _) = first_lines(serve.stdout.take().unwrap());
    let refused = request(
        &socket,
        "delegate",
        &json!({"request": {"assignment": "Survey", "profile": "scout"}}),
    );
    assert_eq!(refused["error"]["code"], "unsupported-host", "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Pi 1.5.1 is below the minimum stable version 1.5.2"),
        "{refused}"
    );
    let status = request(&socket, "status", &json!({}));
    assert_eq!(status["result"]["children"], json!([]), "{status}");
    drop(serve.stdin.take());
    assert!(wait_exit(&mut serve, GONE_WITHIN).success());
}

#[test]
fn real_pi_workers_do_not_outlive_their_session() {
    let Some(pi) = pi_env::pi_or_skip("real_pi_workers_do_not_outlive_their_session") else {
        return;
    };
    let fake = fake_llm::FakeLlm::start().unwrap();
    let sandbox = pi_env::PiSandbox::new("serve-session", &fake.base_url()).unwrap();
    let base = Base::new("real-pi");
    let mut serve = base.serve_real_pi(&sandbox, &pi);
    let (parent, _, _) = first_lines(serve.stdout.take().unwrap());
    assert_eq!(parent, base.id.to_string());
    let pid = base.pid();
    let task = base.delegate("SCENARIO:SLOW120 Survey the parser slowly");
    base.until_running(&task);
    // The worker is a real process of this base (its session dir is under it).
    let deadline = Instant::now() + ANSWER;
    while base.processes().iter().filter(|&&p| p != pid).count() == 0 {
        assert!(Instant::now() < deadline, "no pi worker process found");
        std::thread::sleep(Duration::from_millis(50));
    }
    let workers: Vec<u32> = base.processes().into_iter().filter(|&p| p != pid).collect();
    let since = Instant::now();
    drop(serve.stdin.take());
    let status = wait_exit(&mut serve, GONE_WITHIN);
    assert!(status.success(), "{status:?}");
    base.assert_gone(pid, since);
    for worker in workers {
        assert!(!alive(worker), "worker {worker} survived its session");
    }
    assert_eq!(base.logged(&task)["status"], "cancelled");
    drop(sandbox);
}

/// Issue 23: the coordinator's pre-started pi processes (`pool` in the operator's
/// `delegation.json`) are below its containment like workers: a coordinator killed with
/// SIGKILL leaves none of them behind.
#[test]
fn pre_started_pi_processes_die_with_a_killed_coordinator() {
    let Some(pi) = pi_env::pi_or_skip("pre_started_pi_processes_die_with_a_killed_coordinator")
    else {
        return;
    };
    let fake = fake_llm::FakeLlm::start().unwrap();
    let sandbox = pi_env::PiSandbox::new("serve-pool", &fake.base_url()).unwrap();
    let base = Base::new("pool");
    std::fs::write(
        base.root.join("agent/delegation.json"),
        r#"{"pool": {"size": 2, "idleSeconds": 600}}"#,
    )
    .unwrap();
    let mut serve = base.serve_real_pi(&sandbox, &pi);
    let _ = first_lines(serve.stdout.take().unwrap());
    let pid = base.pid();
    // Two pre-started pi processes (and their containment processes) appear, no task given.
    let deadline = Instant::now() + ANSWER;
    let pooled = |base: &Base| -> Vec<u32> {
        base.processes()
            .into_iter()
            .filter(|&p| p != pid)
            .filter(|&p| {
                std::fs::read(format!("/proc/{p}/environ"))
                    .is_ok_and(|e| String::from_utf8_lossy(&e).contains("SLATE_WORKER_POOLED=1"))
            })
            .collect()
    };
    while pooled(&base).len() < 2 {
        assert!(Instant::now() < deadline, "no pre-started pi appeared");
        std::thread::sleep(Duration::from_millis(50));
    }
    let before = pooled(&base);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap()),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let since = Instant::now();
    let _ = serve.wait();
    loop {
        let left: Vec<u32> = base.processes();
        if left.is_empty() {
            break;
        }
        assert!(
            since.elapsed() < GONE_WITHIN,
            "pre-started {before:?}: still running {left:?} after {:?}",
            since.elapsed()
        );
        std::thread::sleep(Duration::from_millis(25));
    }
    drop(sandbox);
}
