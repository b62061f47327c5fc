//! A raw control-socket client that runs as a process of its own: the test binary re-executed
//! (`<test binary> peer_client --exact`) with `SLATE_PEER_*` variables, so a test can speak to
//! a coordinator from wherever it likes — an unrelated process, a worker's bash, a process
//! whose connecting parent already exited — without python or socat.
//!
//! Include with `#[path = "support/peer_client.rs"] mod peer_client;` and add, in that test
//! file, a test named `peer_client` that calls [`run_if_asked`] (a no-op in a normal run).
//!
//! Modes (`SLATE_PEER_MODE`):
//! * `hello`: connect to `SLATE_PEER_SOCKET` (else `SLATE_SOCKET`), send `hello` (presenting
//!   the capability in the file `SLATE_PEER_CAPABILITY_FILE`, if named), then, if it was
//!   accepted, one `guard {kind: tool}` call; write `{"hello": <answer>, "guard": <answer>}`
//!   to `SLATE_PEER_OUT`.
//! * `hellos`: `SLATE_PEER_COUNT` times (default 2000) connect and `hello` as the operator,
//!   each timed from `connect` to the answer; write `{"n", "medianUs", "p99Us"}`.
//! * `handoff`: connect, hand the socket to a shell (on its descriptor 3) and exit at once;
//!   the shell waits until this process is gone, then sends `hello` (no capability) on the
//!   inherited connection, whose peer process (the one that connected) no longer exists, and
//!   writes the answer line to `SLATE_PEER_OUT`.
#![allow(dead_code)]

use std::io::{BufRead as _, BufReader, Write as _};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;

use serde_json::{Value, json};

/// Environment of the client process.
pub const MODE: &str = "SLATE_PEER_MODE";
pub const SOCKET: &str = "SLATE_PEER_SOCKET";
pub const CAPABILITY_FILE: &str = "SLATE_PEER_CAPABILITY_FILE";
pub const OUT: &str = "SLATE_PEER_OUT";
/// Set for the shell of `handoff`: the pid of the process that connected.
const CONNECTOR: &str = "SLATE_PEER_CONNECTOR";

/// The command line that runs this client: `<test binary> peer_client --exact`, for a shell
/// (the test binary's path never holds a quote here: it is cargo's target directory).
pub fn command_line(
    mode: &str,
    socket: Option<&str>,
    capability: Option<&str>,
    out: &str,
) -> String {
    use std::fmt::Write as _;
    let exe = std::env::current_exe().unwrap();
    let mut line = format!("{MODE}={mode} {OUT}='{out}'");
    if let Some(socket) = socket {
        let _ = write!(line, " {SOCKET}='{socket}'");
    }
    if let Some(file) = capability {
        let _ = write!(line, " {CAPABILITY_FILE}='{file}'");
    }
    let _ = write!(line, " '{}' peer_client --exact --quiet", exe.display());
    line
}

/// The same client as a [`std::process::Command`] (for a process that descends from nothing
/// the coordinator knows).
pub fn command(
    mode: &str,
    socket: &std::path::Path,
    capability: Option<&std::path::Path>,
    out: &std::path::Path,
) -> std::process::Command {
    let mut c = std::process::Command::new(std::env::current_exe().unwrap());
    c.args(["peer_client", "--exact", "--quiet"])
        .env(MODE, mode)
        .env(SOCKET, socket)
        .env(OUT, out)
        .env_remove(CONNECTOR)
        .stdin(std::process::Stdio::null());
    if let Some(file) = capability {
        c.env(CAPABILITY_FILE, file);
    } else {
        c.env_remove(CAPABILITY_FILE);
    }
    c
}

/// Be the client when asked to (the `peer_client` test of a test binary); otherwise nothing.
pub fn run_if_asked() {
    let Ok(mode) = std::env::var(MODE) else {
        return;
    };
    let out = PathBuf::from(std::env::var_os(OUT).expect("SLATE_PEER_OUT"));
    let result = match mode.as_str() {
        "hello" => {
            let stream = UnixStream::connect(socket()).expect("connect");
            talk(stream)
        }
        "handoff" => {
            use command_fds::{CommandFdExt as _, FdMapping};
            let stream = UnixStream::connect(socket()).expect("connect");
            // A shell can write to and read from an inherited socket; it waits until this
            // process is gone, so its `hello` comes from a connection whose peer is dead.
            let script = r#"while [ -e "/proc/$SLATE_PEER_CONNECTOR" ]; do sleep 0.01; done
printf '%s\n' "$SLATE_PEER_HELLO" >&3
head -n 1 <&3 >"$SLATE_PEER_OUT""#;
            let hello = json!({"id": 1, "method": "hello", "params": {"protocols": [2]}});
            let mut second = std::process::Command::new("sh");
            second
                .args(["-c", script])
                .env(CONNECTOR, std::process::id().to_string())
                .env("SLATE_PEER_HELLO", hello.to_string())
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null());
            second
                .fd_mappings(vec![FdMapping {
                    parent_fd: OwnedFd::from(stream),
                    child_fd: 3,
                }])
                .unwrap();
            #[allow(
                clippy::zombie_processes,
                reason = "this process exits at once; the shell is reparented and reaped there"
            )]
            second.spawn().expect("the second client");
            // Exit at once: the second one answers.
            return;
        }
        "hellos" => hellos(),
        other => panic!("{MODE}={other}?"),
    };
    std::fs::write(&out, format!("{result}\n")).unwrap();
}

fn socket() -> PathBuf {
    std::env::var_os(SOCKET)
        .or_else(|| std::env::var_os("SLATE_SOCKET"))
        .map(PathBuf::from)
        .expect("SLATE_PEER_SOCKET or SLATE_SOCKET")
}

/// `hello` (with the capability, if any), then one `guard` call when it was accepted.
fn talk(stream: UnixStream) -> Value {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    let mut params = json!({"protocols": [2], "client": "peer-client"});
    if let Some(file) = std::env::var_os(CAPABILITY_FILE) {
        let capability = std::fs::read_to_string(file).unwrap();
        params["capability"] = json!(capability.trim());
    }
    let mut call = |id: u32, method: &str, params: Value| -> Value {
        let line = json!({"id": id, "method": method, "params": params});
        writer.write_all(format!("{line}\n").as_bytes()).unwrap();
        let mut answer = String::new();
        reader.read_line(&mut answer).unwrap();
        serde_json::from_str(&answer).unwrap_or_else(|_| json!({"unreadable": answer}))
    };
    let hello = call(1, "hello", params);
    let guard = if hello.get("result").is_some() {
        call(
            2,
            "guard",
            json!({"kind": "tool", "tool": "bash", "callId": "peer-client-1"}),
        )
    } else {
        Value::Null
    };
    json!({"hello": hello, "guard": guard})
}

/// Timed connect + `hello` round trips (the connection cost a CLI command pays once).
fn hellos() -> Value {
    let n: usize = std::env::var("SLATE_PEER_COUNT")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2000);
    let socket = socket();
    let hello = format!(
        "{}\n",
        json!({"id": 1, "method": "hello", "params": {"protocols": [2]}})
    );
    let mut micros: Vec<u128> = Vec::with_capacity(n);
    for _ in 0..n {
        let started = std::time::Instant::now();
        let stream = UnixStream::connect(&socket).expect("connect");
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut writer = stream;
        writer.write_all(hello.as_bytes()).unwrap();
        let mut answer = String::new();
        reader.read_line(&mut answer).unwrap();
        micros.push(started.elapsed().as_micros());
        assert!(answer.contains("\"operator\""), "{answer}");
    }
    micros.sort_unstable();
    // How many processes the server's walk from this one to init passes.
    let mut depth = 0;
    let mut pid = std::process::id();
    while pid > 0 && depth < 100 {
        depth += 1;
        pid = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| {
                let rest = s.rsplit_once(')')?.1.to_owned();
                rest.split_ascii_whitespace().nth(1)?.parse().ok()
            })
            .unwrap_or(0);
    }
    json!({"n": n, "medianUs": micros[n / 2], "p99Us": micros[n * 99 / 100], "ancestry": depth})
}
