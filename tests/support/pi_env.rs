//! Running the real `pi` CLI in tests: finding it, a private sandbox for each run, the hermetic
//! environment of `shared/pi/NOTES.md` ("Setup facts"), and an RPC process handle that reads
//! stdout records with timeouts and leaves no process behind.
//!
//! Include with `#[path = "support/pi_env.rs"] mod pi_env;` (usually next to `fake_llm.rs`).
//!
//! * [`pi_or_skip`] finds pi: `SLATE_PI`, else the env file written by `ci/install-pi.sh`
//!   (`${SLATE_PI_HOME:-$HOME/.cache/slate-pi}/env`). Without pi a test is skipped loudly, except
//!   under `CI=true`, where it fails.
//! * [`PiSandbox`] is a temp dir with `agent/` (a copy of `tests/support/agent_template`, itself a
//!   copy of `shared/pi/agent_template`, with the provider `baseUrl` pointed at the fake server),
//!   `home/` and `work/` (the cwd).
//! * [`PiSandbox::command`] builds the `Command`: cwd `work/`, `PI_CODING_AGENT_DIR`,
//!   `PI_OFFLINE=1`, `PI_SKIP_VERSION_CHECK=1`, `PI_TELEMETRY=0`, `HOME=home/`, every `*_API_KEY`
//!   and inherited `PI_*` variable removed, its own process group, and a tag variable that every
//!   descendant inherits so [`PiSandbox::leftover_processes`] can find stragglers in `/proc`.
//! * [`RpcPi`] runs `pi --mode rpc ...` in a sandbox.
#![allow(dead_code)]

use std::fmt::Write as _;
use std::fs;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use std::os::unix::process::CommandExt as _;

use serde_json::Value;

/// The variable naming the pi command: one path, or `<program> <args...>` split on whitespace
/// (no quoting, so no part may contain whitespace), e.g. `/x/node /x/cli.js`.
pub const SLATE_PI: &str = "SLATE_PI";
/// The pi version these tests and the fake server were written against.
pub const PI_VERSION: &str = "1.6.0";
/// Environment variable set on every sandboxed pi; inherited by all its descendants.
pub const TAG_VAR: &str = "SLATE_TEST_PI_TAG";
/// The skip line, printed to the real stderr (not captured by the test harness).
pub const SKIP_MESSAGE: &str =
    "SKIPPED: real pi not installed (run ci/install-pi.sh and export SLATE_PI)";

/// The agent dir template shipped with the tests (same files as `shared/pi/agent_template`).
pub fn template_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/agent_template")
}

/// Whether this is CI (`CI=true` or `CI=1`), where a missing pi is a failure.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1")
}

/// How to start pi.
#[derive(Clone, Debug)]
pub struct PiCommand {
    /// Program and leading arguments, e.g. `["/x/bin/pi"]` or `["/x/node", "/x/cli.js"]`.
    pub argv: Vec<String>,
    /// Where it came from (for messages).
    pub source: String,
}

impl PiCommand {
    /// `SLATE_PI` if set and non-blank, else the `SLATE_PI` line of the install script's env file.
    pub fn locate() -> Option<Self> {
        if let Some(v) = std::env::var(SLATE_PI)
            .ok()
            .filter(|v| !v.trim().is_empty())
        {
            return Self::parse(&v, "$SLATE_PI");
        }
        let file = env_file()?;
        let text = fs::read_to_string(&file).ok()?;
        let value = text.lines().find_map(|l| {
            let l = l.trim();
            let l = l.strip_prefix("export ").unwrap_or(l).trim_start();
            l.strip_prefix("SLATE_PI=")
        })?;
        let value = value.trim();
        let value = value
            .strip_prefix('\'')
            .and_then(|v| v.strip_suffix('\''))
            .or_else(|| value.strip_prefix('"').and_then(|v| v.strip_suffix('"')))
            .unwrap_or(value);
        Self::parse(value, &file.display().to_string())
    }

    fn parse(value: &str, source: &str) -> Option<Self> {
        let argv: Vec<String> = value.split_whitespace().map(str::to_owned).collect();
        (!argv.is_empty()).then(|| Self {
            argv,
            source: source.to_owned(),
        })
    }

    /// This command behind `bash`, which moves the first line of pi's stdin to a pipe on
    /// descriptor 3 (those bytes, then EOF) and `exec`s pi with the rest of stdin: how a test
    /// hands pi a worker capability the way Slate does (`SLATE_CAPABILITY_FD=3`). std cannot map
    /// a descriptor into a child without `unsafe` (`pre_exec`), which the crate forbids. The line
    /// is never in pi's environment or argv; write it with [`RpcPi::write_line`] first.
    pub fn with_first_stdin_line_on_fd3(&self) -> Self {
        const SCRIPT: &str =
            r#"IFS= read -r line || exit 97; exec 3< <(printf %s "$line"); unset line; exec "$@""#;
        let mut argv = vec![
            "bash".to_owned(),
            "-c".to_owned(),
            SCRIPT.to_owned(),
            "bash".to_owned(),
        ];
        argv.extend(self.argv.iter().cloned());
        Self {
            argv,
            source: format!("{} (capability on fd 3)", self.source),
        }
    }

    /// A `Command` for pi followed by `args` (nothing else configured).
    pub fn command<S: AsRef<std::ffi::OsStr>>(&self, args: &[S]) -> Command {
        let mut c = Command::new(&self.argv[0]);
        c.args(&self.argv[1..]).args(args);
        c
    }
}

/// `${SLATE_PI_HOME:-$HOME/.cache/slate-pi}/env`, if that can be named.
pub fn env_file() -> Option<PathBuf> {
    let home = match std::env::var_os("SLATE_PI_HOME") {
        Some(h) if !h.is_empty() => PathBuf::from(h),
        _ => PathBuf::from(std::env::var_os("HOME")?).join(".cache/slate-pi"),
    };
    Some(home.join("env"))
}

/// pi, or `None` after printing [`SKIP_MESSAGE`] loudly; under `CI=true` a missing pi panics.
///
/// # Panics
/// When pi cannot be found and `CI` is `true`.
pub fn pi_or_skip(test: &str) -> Option<PiCommand> {
    if let Some(pi) = PiCommand::locate() {
        return Some(pi);
    }
    let where_ = env_file().map_or_else(String::new, |f| {
        format!(" and {} does not name it", f.display())
    });
    assert!(
        !in_ci(),
        "CI=true but real pi is not available ({SLATE_PI} is not set{where_}): \
         run ci/install-pi.sh and export SLATE_PI"
    );
    // Straight to fd 2: the harness captures eprintln! of passing tests, this must be seen.
    let _ = writeln!(io::stderr(), "\n{SKIP_MESSAGE} [{test}]\n");
    None
}

// ---------------------------------------------------------------------------------------------

/// A private directory tree for one pi run, removed (with any straggler process killed) on drop.
pub struct PiSandbox {
    root: PathBuf,
    /// `PI_CODING_AGENT_DIR`.
    pub agent_dir: PathBuf,
    /// `HOME`.
    pub home: PathBuf,
    /// The process cwd.
    pub work: PathBuf,
    /// Value of [`TAG_VAR`] for processes started by [`PiSandbox::command`].
    pub tag: String,
}

impl PiSandbox {
    /// A fresh sandbox whose agent dir sends pi's `fake` provider to `base_url`
    /// (`FakeLlm::base_url()`, `http://127.0.0.1:<port>/v1`).
    pub fn new(name: &str, base_url: &str) -> io::Result<Self> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let tag = format!("{name}-{}-{n}-{nanos}", std::process::id());
        let root = std::env::temp_dir().join(format!("slate-pi-{tag}"));
        fs::create_dir(&root)?;
        let root = fs::canonicalize(&root)?;
        let sandbox = Self {
            agent_dir: root.join("agent"),
            home: root.join("home"),
            work: root.join("work"),
            root,
            tag,
        };
        for d in [&sandbox.agent_dir, &sandbox.home, &sandbox.work] {
            fs::create_dir(d)?;
        }
        copy_template(&template_dir(), &sandbox.agent_dir, base_url)?;
        Ok(sandbox)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `pi <args>` with the sandbox's cwd and hermetic environment, stdio not yet configured,
    /// in a new process group (its id is the child's pid).
    pub fn command<S: AsRef<std::ffi::OsStr>>(&self, pi: &PiCommand, args: &[S]) -> Command {
        let mut c = pi.command(args);
        c.current_dir(&self.work);
        for (key, _) in std::env::vars_os() {
            let k = key.to_string_lossy();
            if k.ends_with("_API_KEY") || k.starts_with("PI_") {
                c.env_remove(&key);
            }
        }
        c.env("PI_CODING_AGENT_DIR", &self.agent_dir)
            .env("PI_OFFLINE", "1")
            .env("PI_SKIP_VERSION_CHECK", "1")
            .env("PI_TELEMETRY", "0")
            .env("HOME", &self.home)
            .env(TAG_VAR, &self.tag)
            .process_group(0);
        c
    }

    /// Live processes started from this sandbox (carrying its tag), e.g. pi or a tool it ran.
    pub fn leftover_processes(&self) -> Vec<u32> {
        tagged_processes(&self.tag)
    }
}

impl Drop for PiSandbox {
    fn drop(&mut self) {
        let pids = self.leftover_processes();
        if !pids.is_empty() {
            let _ = writeln!(
                io::stderr(),
                "pi sandbox {}: killing leftover processes {pids:?}",
                self.tag
            );
            kill(&pids.iter().map(u32::to_string).collect::<Vec<_>>());
        }
        let _ = fs::remove_dir_all(&self.root);
    }
}

/// Copy the template files, rewriting each local provider's `baseUrl` in `models.json`.
fn copy_template(from: &Path, to: &Path, base_url: &str) -> io::Result<()> {
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let dest = to.join(entry.file_name());
        if entry.file_name() != "models.json" {
            fs::copy(entry.path(), &dest)?;
            continue;
        }
        let text = fs::read_to_string(entry.path())?;
        let mut models: Value = serde_json::from_str(&text).map_err(io::Error::other)?;
        let providers = models
            .get_mut("providers")
            .and_then(Value::as_object_mut)
            .ok_or_else(|| io::Error::other("models.json has no providers object"))?;
        let mut rewritten = 0;
        for provider in providers.values_mut() {
            let local = provider
                .get("baseUrl")
                .and_then(Value::as_str)
                .is_some_and(|u| u.starts_with("http://127.0.0.1:"));
            if local {
                provider["baseUrl"] = Value::String(base_url.to_owned());
                rewritten += 1;
            }
        }
        if rewritten == 0 {
            return Err(io::Error::other("models.json has no 127.0.0.1 provider"));
        }
        let out = serde_json::to_string_pretty(&models).map_err(io::Error::other)?;
        fs::write(&dest, out)?;
    }
    Ok(())
}

/// Live processes whose environment has `TAG_VAR=<tag>` (zombies have none).
pub fn tagged_processes(tag: &str) -> Vec<u32> {
    let needle = format!("{TAG_VAR}={tag}");
    proc_pids()
        .into_iter()
        .filter(|&pid| {
            fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|var| var == needle.as_bytes()))
        })
        .collect()
}

fn proc_pids() -> Vec<u32> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

/// `kill -KILL <targets>` (std cannot signal arbitrary pids or groups; `-<pgid>` is a group).
fn kill(targets: &[String]) {
    let _ = Command::new("kill")
        .arg("-KILL")
        .arg("--")
        .args(targets)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Members of process group `pgid` (from `/proc/<pid>/stat`).
pub fn process_group_members(pgid: u32) -> Vec<u32> {
    proc_pids()
        .into_iter()
        .filter(|pid| {
            let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            // "<pid> (<comm>) <state> <ppid> <pgrp> ..."; comm may contain spaces and ')'.
            let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
                return false;
            };
            let mut fields = after.split_whitespace();
            let state = fields.next();
            let pgrp = fields.nth(1).and_then(|f| f.parse::<u32>().ok());
            state != Some("Z") && pgrp == Some(pgid)
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------

/// Why reading pi's stdout stopped.
#[derive(Debug)]
pub enum ReadError {
    Timeout,
    /// stdout closed.
    Eof,
    /// A line that is not a JSON object (pi's stdout should carry protocol records only).
    NotJson(String),
}

/// `pi --mode rpc` in a sandbox. Dropping it closes stdin, then kills the process group if pi is
/// still running after a short grace period.
pub struct RpcPi {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    readers: Vec<JoinHandle<()>>,
    stderr: Arc<Mutex<Vec<u8>>>,
    tag: String,
    /// Every stdout record read so far, in order.
    pub records: Vec<Value>,
    started: Instant,
}

/// stderr kept per process (bounded).
const STDERR_LIMIT: usize = 256 * 1024;

impl RpcPi {
    /// Start `pi --mode rpc <args>` (e.g. `&["--no-session"]`).
    pub fn spawn(sandbox: &PiSandbox, pi: &PiCommand, args: &[&str]) -> io::Result<Self> {
        let mut full_args = vec!["--mode", "rpc"];
        full_args.extend_from_slice(args);
        Self::spawn_command(sandbox, sandbox.command(pi, &full_args))
    }

    /// Start `command` (from [`PiSandbox::command`], with `--mode rpc` among its arguments and
    /// whatever else the test configured) with piped stdio.
    pub fn spawn_command(sandbox: &PiSandbox, mut command: Command) -> io::Result<Self> {
        let program = command.get_program().to_owned();
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                io::Error::new(e.kind(), format!("spawning {}: {e}", program.display()))
            })?;
        let (stdin, stdout, stderr_pipe) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take());
        let (tx, lines) = mpsc::channel();
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let mut readers = Vec::new();
        if let Some(stdout) = stdout {
            readers.push(thread::spawn(move || {
                // Split on '\n' only (NOTES: never on U+2028/2029).
                for line in BufReader::new(stdout).split(b'\n') {
                    let Ok(line) = line else { break };
                    let line = String::from_utf8_lossy(&line).into_owned();
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            }));
        }
        if let Some(mut pipe) = stderr_pipe {
            let buf = Arc::clone(&stderr);
            readers.push(thread::spawn(move || {
                let mut chunk = [0u8; 8192];
                while let Ok(n) = pipe.read(&mut chunk) {
                    if n == 0 {
                        break;
                    }
                    let mut b = buf.lock().unwrap_or_else(PoisonError::into_inner);
                    let room = STDERR_LIMIT.saturating_sub(b.len());
                    b.extend_from_slice(&chunk[..n.min(room)]);
                }
            }));
        }
        Ok(Self {
            child,
            stdin,
            lines,
            readers,
            stderr,
            tag: sandbox.tag.clone(),
            records: Vec::new(),
            started: Instant::now(),
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Time since spawn.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Write one command as a JSON line.
    pub fn send(&mut self, command: &Value) -> io::Result<()> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| io::Error::new(io::ErrorKind::BrokenPipe, "stdin already closed"))?;
        let mut line = command.to_string();
        line.push('\n');
        stdin.write_all(line.as_bytes())?;
        stdin.flush()
    }

    /// Write `text` and a newline to stdin as they are (not a JSON command).
    pub fn write_line(&mut self, text: &str) -> io::Result<()> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| io::Error::new(io::ErrorKind::BrokenPipe, "stdin already closed"))?;
        stdin.write_all(format!("{text}\n").as_bytes())?;
        stdin.flush()
    }

    /// The next stdout record.
    pub fn next_record(&mut self, timeout: Duration) -> Result<Value, ReadError> {
        let line = match self.lines.recv_timeout(timeout) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => return Err(ReadError::Timeout),
            Err(RecvTimeoutError::Disconnected) => return Err(ReadError::Eof),
        };
        match serde_json::from_str::<Value>(&line) {
            Ok(v) if v.is_object() => {
                self.records.push(v.clone());
                Ok(v)
            }
            _ => Err(ReadError::NotJson(line)),
        }
    }

    /// Read records until one satisfies `done` (returned), within `timeout` overall.
    pub fn read_until(
        &mut self,
        timeout: Duration,
        mut done: impl FnMut(&Value) -> bool,
    ) -> Result<Value, ReadError> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let record = self.next_record(left)?;
            if done(&record) {
                return Ok(record);
            }
        }
    }

    /// Read until a record of type `kind`.
    pub fn read_until_type(&mut self, kind: &str, timeout: Duration) -> Result<Value, ReadError> {
        self.read_until(timeout, |r| record_type(r) == kind)
    }

    /// Close stdin (pi exits 0 on EOF; mid-run it aborts silently, see NOTES).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Wait for exit, at most `timeout`; `None` if still running.
    pub fn wait_exit(&mut self, timeout: Duration) -> io::Result<Option<ExitStatus>> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok(Some(status));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// What pi wrote to stderr so far (bounded).
    pub fn stderr_text(&self) -> String {
        let b = self.stderr.lock().unwrap_or_else(PoisonError::into_inner);
        String::from_utf8_lossy(&b).into_owned()
    }

    /// The records read so far, one line each, `type` first (for failure messages).
    pub fn transcript(&self) -> String {
        let mut out = String::new();
        for r in &self.records {
            let mut line = r.to_string();
            if line.len() > 400 {
                let mut cut = 400;
                while !line.is_char_boundary(cut) {
                    cut -= 1;
                }
                line.truncate(cut);
                line.push_str("...");
            }
            let _ = writeln!(out, "  {line}");
        }
        let _ = write!(out, "stderr: {:?}", self.stderr_text());
        out
    }

    /// Records of type `kind` read so far.
    pub fn of_type(&self, kind: &str) -> Vec<&Value> {
        self.records
            .iter()
            .filter(|r| record_type(r) == kind)
            .collect()
    }

    /// The response to the command with `id`, if read.
    pub fn response(&self, id: &str) -> Option<&Value> {
        self.records.iter().find(|r| {
            record_type(r) == "response" && r.get("id").and_then(Value::as_str) == Some(id)
        })
    }

    /// The `message` of every `message_end` whose role is `assistant`, in order.
    pub fn assistant_messages(&self) -> Vec<&Value> {
        self.of_type("message_end")
            .into_iter()
            .filter_map(|r| r.get("message"))
            .filter(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))
            .collect()
    }
}

impl Drop for RpcPi {
    fn drop(&mut self) {
        self.stdin = None;
        if matches!(self.wait_exit(Duration::from_secs(2)), Ok(None)) {
            kill(&[format!("-{}", self.child.id())]);
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        // Readers end at EOF, once every holder of the pipes (pi and its children) is gone;
        // descendants that left pi's process group are found by their tag.
        let stragglers = tagged_processes(&self.tag);
        if !stragglers.is_empty() {
            kill(&stragglers.iter().map(u32::to_string).collect::<Vec<_>>());
        }
        for r in self.readers.drain(..) {
            let _ = r.join();
        }
    }
}

/// A record's `type` (empty if absent).
pub fn record_type(r: &Value) -> &str {
    r.get("type").and_then(Value::as_str).unwrap_or("")
}

/// Text of an assistant message: its `text` blocks concatenated.
pub fn message_text(message: &Value) -> String {
    message
        .get("content")
        .and_then(Value::as_array)
        .map(|blocks| {
            blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default()
}
