//! Nobody can wedge the control socket (issue 11, part 5): the real service over a live
//! runtime with simulated workers, on a private temp socket, abused the ways that wedged it
//! before. Timing bounds are upper bounds on hangs, not benchmarks.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

#[path = "support/service_fixture.rs"]
mod service_fixture;
use service_fixture::{loaded, models};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use slate::control::protocol::{MAX_REQUEST_LINE, codes};
use slate::control::service::Service;
use slate::control::{Client, ClientError, Handler, Metadata, Server, ServerConfig};
use slate::core::bounds::ASSIGNMENT_BYTES;
use slate::policy::capabilities::pi_offered_tools;
use slate::policy::scheduling::SchedulingPolicy;
use slate::runtime::{RuntimeConfig, RuntimeHandle, spawn};
use slate::sim::{Script, Step};
use slate::worker::sim::{ScriptBook, SimBackend};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use uuid::Uuid;

/// How long an answer may take before the test calls it a hang.
const HANG: Duration = Duration::from_secs(1);

struct Fixture {
    base: PathBuf,
    socket: PathBuf,
    delegation_dir: PathBuf,
    rt: RuntimeHandle,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

/// Every worker thinks `think_ms`, then answers once.
fn book(think_ms: u64) -> ScriptBook {
    ScriptBook {
        scripts: Vec::new(),
        default: Script {
            setup_error: None,
            steps: vec![
                Step::Think(think_ms),
                Step::Request {
                    ms: 10,
                    text: "surveyed".into(),
                    input_tokens: 100,
                    output_tokens: 20,
                    cost: Some(0.001),
                },
            ],
        },
        resumed: None,
    }
}

fn start(name: &str, think_ms: u64, concurrency: u32, config: ServerConfig) -> Fixture {
    let base = std::env::temp_dir().join(format!("slate-abuse-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    for dir in ["work", "agent"] {
        std::fs::create_dir_all(base.join(dir)).unwrap();
    }
    let cwd = std::fs::canonicalize(base.join("work")).unwrap();
    let root_id = Uuid::new_v4();
    let delegation_dir = base.join("delegation").join(root_id.to_string());
    let runtime = RuntimeConfig {
        root_id,
        policy: SchedulingPolicy {
            concurrency,
            ..SchedulingPolicy::default()
        },
        id_seed: 5,
        delegation_dir: delegation_dir.clone(),
        event_log: true,
        kill_grace: Duration::from_millis(300),
    };
    let (rt, _join) = spawn(runtime, Arc::new(SimBackend::new(book(think_ms)))).unwrap();
    let service: Arc<dyn Handler> = Arc::new(Service::new(
        rt.clone(),
        loaded(&cwd, &base.join("agent")),
        models(),
        pi_offered_tools(),
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
    let server = Server::bind(&socket, metadata, config).unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(server.run(service, async move {
        let _ = stopped.await;
    }));
    Fixture {
        base,
        socket,
        delegation_dir,
        rt,
        stop: Some(stop),
    }
}

async fn connect(socket: &Path) -> Client {
    Client::connect_path(socket, HANG).await.unwrap()
}

/// `call`, failing the test if it takes longer than [`HANG`].
async fn call(client: &Client, method: &str, params: Value) -> Result<Value, ClientError> {
    tokio::time::timeout(HANG, client.call(method, params))
        .await
        .unwrap_or_else(|_| panic!("{method}: no answer within {HANG:?}"))
}

/// One background scout; its `ChildRef` text.
async fn delegate(client: &Client, text: &str) -> String {
    let reply = call(
        client,
        "delegate",
        json!({"request": {"assignment": text, "profile": "scout"}, "background": true}),
    )
    .await
    .unwrap();
    format!("{}@1", reply["children"][0]["id"].as_str().unwrap())
}

/// Raw bytes on a socket, `hello` already said.
struct Raw {
    reader: BufReader<tokio::net::unix::OwnedReadHalf>,
    writer: tokio::net::unix::OwnedWriteHalf,
}

impl Raw {
    async fn connect(socket: &Path) -> Self {
        let (read, writer) = UnixStream::connect(socket).await.unwrap().into_split();
        let mut raw = Self {
            reader: BufReader::new(read),
            writer,
        };
        raw.send(&json!({"id": 0, "method": "hello", "params": {"protocols": [2]}}))
            .await;
        assert!(raw.recv().await.unwrap()["result"].is_object());
        raw
    }

    async fn send(&mut self, message: &Value) {
        let mut line = serde_json::to_vec(message).unwrap();
        line.push(b'\n');
        self.send_bytes(&line).await;
    }

    async fn send_bytes(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).await.unwrap();
        self.writer.flush().await.unwrap();
    }

    async fn recv(&mut self) -> Option<Value> {
        let mut line = String::new();
        let n = tokio::time::timeout(HANG, self.reader.read_line(&mut line))
            .await
            .expect("an answer within the hang bound")
            .ok()?;
        (n > 0).then(|| serde_json::from_str(&line).unwrap())
    }
}

fn stats(status: &Value, name: &str) -> u64 {
    status["stats"][name].as_u64().unwrap()
}

/// Polls `status` until `done` holds, for at most `within`.
async fn until(client: &Client, within: Duration, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let status = call(client, "status", json!({})).await.unwrap();
        if done(&status) {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "not reached within {within:?}: {status}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Whether the other end of `socket` closed (poll(2) `POLLHUP`), without reading from it.
fn hung_up(socket: &tokio::net::unix::OwnedWriteHalf) -> bool {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::os::fd::AsFd;
    let stream: &UnixStream = socket.as_ref();
    let mut fds = [PollFd::new(stream.as_fd(), PollFlags::empty())];
    poll(&mut fds, PollTimeout::ZERO).unwrap_or(0) > 0
        && fds[0]
            .revents()
            .is_some_and(|r| r.contains(PollFlags::POLLHUP))
}

/// Was: 64 clients that sent `wait {timeoutMs: 60000}` and closed held every slot (and the
/// core's 64 waiters) for 61 s; `status` and `stop` answered `busy`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_disconnected_waiters_free_their_slots_and_waits_at_once() {
    let f = start("waiters", 30_000, 4, ServerConfig::default());
    let driver = connect(&f.socket).await;
    let target = delegate(&driver, "Hold on for the waiters").await;
    drop(driver);

    let mut waiters = Vec::new();
    for n in 0..64 {
        let mut raw = Raw::connect(&f.socket).await;
        raw.send(&json!({"id": n + 1, "method": "wait",
            "params": {"target": target, "timeoutMs": 60_000}}))
            .await;
        waiters.push(raw);
    }
    let probe = f.rt.clone();
    let pending = || async { probe.query(|c| c.stats().pending_waiters).await.unwrap() };
    let deadline = Instant::now() + HANG;
    while pending().await < 64 {
        assert!(
            Instant::now() < deadline,
            "the 64 waits never became pending"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    drop(waiters);

    let started = Instant::now();
    let operator = tokio::time::timeout(HANG, Client::connect_path(&f.socket, HANG))
        .await
        .expect("connect within 1 s")
        .expect("a free slot");
    let stopped = call(&operator, "stop", json!({"target": target})).await;
    assert!(stopped.is_ok(), "{stopped:?}");
    assert!(
        started.elapsed() < HANG,
        "stop took {:?}",
        started.elapsed()
    );
    let status = until(&operator, HANG, |s| stats(s, "pendingWaiters") == 0).await;
    assert_eq!(
        stats(&status, "pendingWaiters"),
        0,
        "every dead client's wait cancelled"
    );

    // Every slot is free again: the operator and 63 more are 64 regular connections at once
    // (`agents` is not served on the reserved lane, so the last one proves its slot is regular).
    let mut clients = Vec::new();
    for _ in 0..63 {
        clients.push(connect(&f.socket).await);
    }
    assert!(call(&clients[62], "agents", json!({})).await.is_ok());
}

/// Was: a foreground `slate delegate` killed with SIGINT held its slot until its task
/// finished. Now its slot is free at once; its window goes on, owned by the coordinator, and
/// stays visible in status.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_foreground_delegate_frees_its_slot_and_its_window_goes_on() {
    let config = ServerConfig {
        max_connections: 1,
        reserved_connections: 0,
        ..ServerConfig::default()
    };
    let f = start("foreground", 1_500, 4, config);
    let mut raw = Raw::connect(&f.socket).await;
    raw.send(&json!({"id": 1, "method": "delegate", "params": {
        "request": {"assignment": "Survey while nobody waits", "profile": "scout"}}}))
        .await;
    let probe = f.rt.clone();
    let deadline = Instant::now() + HANG;
    while probe.query(|c| c.list().len()).await.unwrap() == 0 {
        assert!(Instant::now() < deadline, "never admitted");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let killed = Instant::now();
    drop(raw);

    // The only slot is free again at once (the limit is 1 and there is no reserved lane).
    let client = loop {
        match Client::connect_path(&f.socket, HANG).await {
            Ok(client) => break client,
            Err(e) if e.remote().is_some_and(|r| r.code == codes::BUSY) => {
                assert!(
                    killed.elapsed() < HANG,
                    "the dead delegate still holds its slot"
                );
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Err(e) => panic!("{e}"),
        }
    };
    let status = call(&client, "status", json!({})).await.unwrap();
    let child = &status["children"][0];
    assert!(
        ["setup", "running"].contains(&child["status"].as_str().unwrap()),
        "the window goes on: {child}"
    );
    let done = until(&client, Duration::from_secs(10), |s| {
        s["children"][0]["status"] == "settled"
    })
    .await;
    assert_eq!(done["children"][0]["result"], "surveyed", "{done}");
}

/// The operator's `status` and `stop` are never refused for capacity: connections over the
/// limit get the reserved lane (only hello/status/stop/stopMany/shutdown, bounded, closed
/// when idle); past it, `busy`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_and_status_are_served_on_the_reserved_lane_when_every_slot_is_taken() {
    let config = ServerConfig {
        reserved_idle: Duration::from_millis(300),
        ..ServerConfig::default()
    };
    let reserved = config.reserved_connections;
    let f = start("lane", 30_000, 4, config);
    let driver = connect(&f.socket).await;
    let target = delegate(&driver, "Run while the socket is full").await;
    let mut hogs = vec![driver];
    for _ in 1..64 {
        hogs.push(connect(&f.socket).await);
    }

    let started = Instant::now();
    let operator = connect(&f.socket).await;
    let status = call(&operator, "status", json!({})).await.unwrap();
    assert_eq!(status["children"].as_array().unwrap().len(), 1);
    let other = call(&operator, "agents", json!({})).await.unwrap_err();
    let other = other.remote().unwrap();
    assert_eq!(other.code, codes::BUSY);
    assert!(other.message.contains("reserved lane"), "{}", other.message);
    assert!(other.message.contains("\"agents\""), "{}", other.message);
    let stopped = call(&operator, "stop", json!({"target": target})).await;
    assert!(stopped.is_ok(), "{stopped:?}");
    assert!(started.elapsed() < HANG);

    // The lane is bounded: `reserved` connections, then `busy`.
    let mut lane = vec![operator];
    for _ in 1..reserved {
        lane.push(connect(&f.socket).await);
    }
    let refused = Client::connect_path(&f.socket, HANG).await.err().unwrap();
    assert_eq!(refused.remote().map(|e| e.code.as_str()), Some(codes::BUSY));
    // An idle reserved connection is closed, so the lane cannot be held.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let closed = call(&lane[0], "status", json!({})).await.unwrap_err();
    assert!(matches!(closed, ClientError::Closed), "{closed}");
    let again = connect(&f.socket).await;
    assert!(call(&again, "status", json!({})).await.is_ok());
}

/// A `slate serve --backend sim` of its own (so its memory is the coordinator's alone):
/// the process, its socket and the directory holding its state.
struct Serve {
    base: PathBuf,
    child: std::process::Child,
    socket: PathBuf,
}

impl Serve {
    fn start(name: &str, scripts: &Value) -> Self {
        use std::io::BufRead;
        let base = std::env::temp_dir().join(format!("slate-abuse-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        for d in ["work", "agent", "run"] {
            std::fs::create_dir_all(base.join(d)).unwrap();
        }
        let path = base.join("scripts.json");
        std::fs::write(&path, scripts.to_string()).unwrap();
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_slate"))
            .args([
                "serve",
                "--backend",
                "sim",
                "--model",
                "fake/model",
                "--scenario",
            ])
            .arg(&path)
            .current_dir(base.join("work"))
            .env("PI_CODING_AGENT_DIR", base.join("agent"))
            .env("XDG_RUNTIME_DIR", base.join("run"))
            .env_remove("SLATE_SOCKET")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let socket = lines
            .find_map(|l| l.ok()?.strip_prefix("socket ").map(PathBuf::from))
            .unwrap();
        Self {
            base,
            child,
            socket,
        }
    }

    fn vm_rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

/// Was: 4 connections × 400 `status` without reading grew the coordinator from 10 MB to
/// 759 MB. Now output waiting for a peer is bounded in bytes and such a peer is cut off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_do_not_read_are_cut_off_and_memory_stays_flat() {
    const CLIENTS: usize = 4;
    const REQUESTS: usize = 400;
    let think = json!({"steps": [{"think": 120_000}, {"request": {
        "ms": 10, "text": "late", "inputTokens": 1, "outputTokens": 1}}]});
    let serve = Serve::start("noread", &json!({"default": think, "scripts": []}));
    let driver = connect(&serve.socket).await;
    // A fleet whose status is tens of kilobytes: 400 answers are megabytes per client.
    let padding = "padding ".repeat(40);
    for i in 0..48 {
        delegate(&driver, &format!("Survey module {i}, {padding}")).await;
    }
    let one = serde_json::to_vec(&call(&driver, "status", json!({})).await.unwrap())
        .unwrap()
        .len();
    assert!(one > 20_000, "a status answer is {one} bytes");
    let before = serve.vm_rss_kib();

    let mut slow = Vec::new();
    for _ in 0..CLIENTS {
        let mut raw = Raw::connect(&serve.socket).await;
        let mut burst = Vec::new();
        for n in 0..REQUESTS {
            burst.extend_from_slice(
                format!("{{\"id\":{},\"method\":\"status\"}}\n", n + 1).as_bytes(),
            );
        }
        // The server may cut the connection while the burst is still going out.
        let _ = raw.writer.write_all(&burst).await;
        slow.push(raw);
    }
    let mut peak = before;
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut cut = vec![false; CLIENTS];
    while cut.iter().any(|c| !c) {
        assert!(
            Instant::now() < deadline,
            "slow clients not cut off: {cut:?}"
        );
        peak = peak.max(serve.vm_rss_kib());
        // Without reading: the server closing its end shows as POLLHUP on ours.
        for (i, raw) in slow.iter().enumerate() {
            cut[i] = cut[i] || hung_up(&raw.writer);
        }
        // The coordinator answers others meanwhile.
        assert!(
            call(&driver, "status", json!({"summary": true}))
                .await
                .is_ok()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // What each got before it was cut: far from all 400 answers.
    for raw in &mut slow {
        let mut answers = 0;
        let mut line = String::new();
        while matches!(raw.reader.read_line(&mut line).await, Ok(n) if n > 0) {
            answers += 1;
            line.clear();
        }
        assert!(answers < REQUESTS, "{answers} answers: never cut off");
    }
    let after = serve.vm_rss_kib();
    let grown_mib = peak.saturating_sub(before) / 1024;
    eprintln!(
        "status answer {one} bytes; coordinator RSS before {} MiB, peak {} MiB (+{grown_mib} MiB), after {} MiB",
        before / 1024,
        peak / 1024,
        after / 1024
    );
    assert!(grown_mib < 50, "RSS grew by {grown_mib} MiB");
}

/// Was: a request over 1 MiB made `slate delegate` hang forever (`line-too-long` came back
/// with `id: null`, the client waited for its own id).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_request_fails_cleanly_within_a_second_naming_the_cap() {
    let f = start("oversize", 30_000, 4, ServerConfig::default());
    let cap = MAX_REQUEST_LINE.to_string();

    // The client knows the cap and refuses before sending.
    let client = connect(&f.socket).await;
    let huge = "x".repeat(1_100_000);
    let started = Instant::now();
    let error = call(
        &client,
        "delegate",
        json!({"request": {"assignment": huge, "profile": "scout"}}),
    )
    .await
    .unwrap_err();
    assert!(started.elapsed() < HANG);
    let refused = error.remote().unwrap();
    assert_eq!(refused.code, codes::LINE_TOO_LONG);
    assert!(refused.message.contains(&cap), "{}", refused.message);

    // A raw peer writing `id` first gets the refusal under its own id.
    let mut raw = Raw::connect(&f.socket).await;
    let mut line =
        br#"{"id": 77, "method": "delegate", "params": {"request": {"assignment": ""#.to_vec();
    line.extend(std::iter::repeat_n(b'y', 1_100_000));
    line.extend_from_slice(b"\"}}}\n");
    let started = Instant::now();
    raw.send_bytes(&line).await;
    let reply = raw.recv().await.unwrap();
    assert!(started.elapsed() < HANG);
    assert_eq!(reply["id"], 77, "{reply}");
    assert_eq!(reply["error"]["code"], codes::LINE_TOO_LONG);
    assert!(reply["error"]["message"].as_str().unwrap().contains(&cap));
    // A text id too.
    let mut line = br#"{"id":"big-1","method":"status","params":{"pad":""#.to_vec();
    line.extend(std::iter::repeat_n(b'z', 1_100_000));
    line.extend_from_slice(b"\"}}\n");
    raw.send_bytes(&line).await;
    assert_eq!(raw.recv().await.unwrap()["id"], "big-1");
    // The connection goes on.
    raw.send(&json!({"id": 78, "method": "agents"})).await;
    assert_eq!(raw.recv().await.unwrap()["id"], 78);
    assert!(f.rt.query(|c| c.list().is_empty()).await.unwrap());
}

/// A client's call never hangs on an error without an id: it is the answer to the calls
/// waiting at that moment.
#[tokio::test]
async fn an_error_without_an_id_answers_the_waiting_call() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("fake.sock");
    let listener = tokio::net::UnixListener::bind(&socket).unwrap();
    tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let (read, mut write) = stream.into_split();
        let mut lines = BufReader::new(read).lines();
        let hello = lines.next_line().await.unwrap().unwrap();
        assert!(hello.contains("\"hello\""));
        let answer = json!({"id": 1, "result": {"protocol": 2, "server": "fake", "parentId": "00000000-0000-4000-8000-000000000001", "cwd": "/", "pid": 1, "actor": {"kind": "operator"}}});
        write
            .write_all(format!("{answer}\n").as_bytes())
            .await
            .unwrap();
        let _request = lines.next_line().await.unwrap().unwrap();
        let error = json!({"id": null, "error": {"code": "line-too-long", "message": "line: a request line is at most 1048576 bytes"}});
        write
            .write_all(format!("{error}\n").as_bytes())
            .await
            .unwrap();
        // Keep the connection open: only the error may end the call.
        tokio::time::sleep(Duration::from_secs(5)).await;
    });
    let client = connect(&socket).await;
    let error = call(&client, "status", json!({})).await.unwrap_err();
    assert_eq!(error.remote().unwrap().code, codes::LINE_TOO_LONG);
}

/// Was: a 10 MB inline assignment was accepted and copied 8 times into `events.jsonl`.
/// Now it is refused naming the cap (the request line's, before it is even sent; the inline
/// assignment's for one under the line cap) and nothing is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ten_megabyte_inline_assignment_is_refused_and_nothing_is_written() {
    let f = start("assignment", 30_000, 4, ServerConfig::default());
    let events = f.delegation_dir.join("events.jsonl");
    let size = || std::fs::metadata(&events).map_or(0, |m| m.len());
    let before = size();
    let client = connect(&f.socket).await;

    let ten_mb = "a".repeat(10 * 1024 * 1024);
    let error = call(
        &client,
        "delegate",
        json!({"request": {"assignment": ten_mb, "profile": "scout"}, "background": true}),
    )
    .await
    .unwrap_err();
    let error = error.remote().unwrap();
    assert_eq!(error.code, codes::LINE_TOO_LONG);
    assert!(
        error.message.contains(&MAX_REQUEST_LINE.to_string()),
        "{}",
        error.message
    );

    // Under the line cap but over the inline-assignment cap (the task-file bound).
    let cap = ASSIGNMENT_BYTES.to_string();
    for request in [
        json!({"assignment": "b".repeat(ASSIGNMENT_BYTES + 1), "profile": "scout"}),
        json!({"tasks": [{"assignment": "ok", "profile": "scout"},
            {"assignment": "c".repeat(600_000), "profile": "scout"}], "background": true}),
        json!({"agent": "scout", "task": "d".repeat(ASSIGNMENT_BYTES + 1)}),
    ] {
        let error = call(
            &client,
            "delegate",
            json!({"request": request, "background": true}),
        )
        .await
        .unwrap_err();
        let error = error.remote().unwrap();
        assert_eq!(error.code, codes::INVALID_REQUEST, "{error}");
        assert!(error.message.contains(&cap), "{}", error.message);
        assert!(error.message.contains("assignment") || error.message.contains("task"));
        assert!(error.message.len() < 2_000, "the text is not echoed back");
    }
    // Exactly at the cap is accepted.
    let at_cap = "e".repeat(ASSIGNMENT_BYTES);
    let target = delegate(&client, &at_cap).await;
    // (Resume, followup and revive assignments are bounded the same by the core: rules.)
    drop(target);
    let list = f.rt.query(slate::core::Coordinator::list).await.unwrap();
    assert_eq!(list.len(), 1, "only the at-cap task was admitted");
    let written = size() - before;
    assert!(written < 8 * 60_000, "events.jsonl grew by {written} bytes");
}
