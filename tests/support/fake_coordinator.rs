//! A stand-in for Slate's control socket, for tests of the pi extension against real pi before
//! (and independently of) the coordinator's own `guard` / `submit` / `delegate` handling.
//!
//! It speaks the framing of `docs/protocol.md` (one JSON object per line) on a Unix socket in a
//! directory the test owns: `hello` is answered as the server does for a worker's capability
//! (and refused, with the server's wording, for any other). The tool layer is Slate's own:
//! `tools` answers `slate::tools::tools_for` of the fake's caller, and `callTool` runs
//! `slate::tools::call` as that caller, whose control requests (`submit`, `delegate`, `wait`,
//! ...) go to the test's [`Answerer`] like any other request. Every request is logged
//! ([`FakeCoordinator::log`]), those the tool layer made on the connection of their `callTool`. Include it with
//! `#[path = "support/fake_coordinator.rs"] mod fake_coordinator;`. Dropping it stops the
//! acceptor, cuts every connection and joins every thread.
#![allow(dead_code)]

use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use slate::control::methods::{DelegateParams, DelegateResult};
use slate::control::protocol::Payload;
use slate::control::{BoxFuture, ControlError, Request};
use slate::tools::{Backend, CallToolParams, Caller, Grants, ToolsResult, Watch, tools_for};

const POLL: Duration = Duration::from_millis(5);

/// A request the fake received (after `hello`, and `hello` itself).
#[derive(Clone, Debug)]
pub struct Logged {
    /// Connection number, from 1 in accept order.
    pub connection: u64,
    pub method: String,
    pub params: Value,
    pub at: Instant,
}

/// What the test answers: `Ok(result)` or `Err((code, message))`.
pub type Answer = Result<Value, (String, String)>;
/// Decides the answer to a request (never `hello`): `(method, params, how many requests of
/// this method came before)`.
pub type Answerer = dyn Fn(&str, &Value, usize) -> Answer + Send + Sync;

pub struct FakeCoordinator {
    path: PathBuf,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

struct Shared {
    stop: AtomicBool,
    capability: String,
    caller: Caller,
    answerer: Box<Answerer>,
    log: Mutex<Vec<Logged>>,
    next_connection: AtomicU64,
    connections: Mutex<Vec<(UnixStream, JoinHandle<()>)>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `guard` allows, `submit` accepts; anything else is refused as unknown.
pub fn allow_all(method: &str, _params: &Value, _before: usize) -> Answer {
    match method {
        "guard" => Ok(json!({"allow": true})),
        "submit" => Ok(submitted()),
        other => Err(("unknown-method".into(), format!("{other}: not faked"))),
    }
}

/// A `submit` answer that accepts the value.
pub fn submitted() -> Value {
    json!({"status": "submitted", "attempts": 1, "errors": [], "message": "Result accepted."})
}

/// A child granted every Slate tool (for tests that do not care which it has).
pub const ALL_GRANTED: Caller = Caller::Child(Grants {
    submit: true,
    delegate: true,
    coordinate: true,
});

impl FakeCoordinator {
    /// Listen on `<dir>/coordinator.sock` for workers presenting `capability`, each a child
    /// granted every Slate tool.
    pub fn start(
        dir: &Path,
        capability: &str,
        answerer: impl Fn(&str, &Value, usize) -> Answer + Send + Sync + 'static,
    ) -> io::Result<Self> {
        Self::start_as(dir, capability, ALL_GRANTED, answerer)
    }

    /// [`Self::start`], the workers being `caller` (their tools and what they may call).
    pub fn start_as(
        dir: &Path,
        capability: &str,
        caller: Caller,
        answerer: impl Fn(&str, &Value, usize) -> Answer + Send + Sync + 'static,
    ) -> io::Result<Self> {
        let path = dir.join("coordinator.sock");
        let listener = UnixListener::bind(&path)?;
        listener.set_nonblocking(true)?;
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            capability: capability.to_owned(),
            caller,
            answerer: Box::new(answerer),
            log: Mutex::new(Vec::new()),
            next_connection: AtomicU64::new(1),
            connections: Mutex::new(Vec::new()),
        });
        let acceptor = {
            let shared = Arc::clone(&shared);
            thread::Builder::new()
                .name("fake-coordinator-accept".into())
                .spawn(move || accept_loop(&listener, &shared))?
        };
        Ok(Self {
            path,
            shared,
            acceptor: Some(acceptor),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every request so far, `hello` included, in arrival order.
    pub fn log(&self) -> Vec<Logged> {
        lock(&self.shared.log).clone()
    }

    /// The params of every request of `method`, in order.
    pub fn params_of(&self, method: &str) -> Vec<Value> {
        self.log()
            .into_iter()
            .filter(|l| l.method == method)
            .map(|l| l.params)
            .collect()
    }
}

impl Drop for FakeCoordinator {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        let connections = std::mem::take(&mut *lock(&self.shared.connections));
        for (stream, _) in &connections {
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
        for (_, thread) in connections {
            let _ = thread.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

fn accept_loop(listener: &UnixListener, shared: &Arc<Shared>) {
    while !shared.stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((stream, _)) => {
                if let Err(e) = spawn_connection(stream, shared) {
                    eprintln!("[fake-coordinator] cannot serve a connection: {e}");
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => thread::sleep(POLL),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                eprintln!("[fake-coordinator] accept failed: {e}");
                thread::sleep(POLL);
            }
        }
    }
}

fn spawn_connection(stream: UnixStream, shared: &Arc<Shared>) -> io::Result<()> {
    stream.set_nonblocking(false)?;
    let handle = stream.try_clone()?;
    let number = shared.next_connection.fetch_add(1, Ordering::SeqCst);
    let thread = {
        let shared = Arc::clone(shared);
        thread::Builder::new()
            .name("fake-coordinator-conn".into())
            .spawn(move || {
                if let Err(e) = serve(stream, number, &shared)
                    && !shared.stop.load(Ordering::SeqCst)
                {
                    eprintln!("[fake-coordinator] connection {number}: {e}");
                }
            })?
    };
    let mut connections = lock(&shared.connections);
    connections.retain(|(_, t)| !t.is_finished());
    connections.push((handle, thread));
    Ok(())
}

fn serve(stream: UnixStream, connection: u64, shared: &Shared) -> io::Result<()> {
    let mut writer = stream.try_clone()?;
    let mut hello_done = false;
    for line in BufReader::new(stream).lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let request: Value = serde_json::from_str(&line).map_err(io::Error::other)?;
        let id = request.get("id").cloned().unwrap_or(Value::Null);
        let method = request
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let params = request.get("params").cloned().unwrap_or(json!({}));
        let before = shared.record(connection, &method, &params);
        let answer = if hello_done {
            match method.as_str() {
                "tools" => Ok(json!(ToolsResult {
                    tools: tools_for(shared.caller).to_vec()
                })),
                "callTool" => call_tool(shared, connection, params),
                _ => (shared.answerer)(&method, &params, before),
            }
        } else if method != "hello" {
            Err((
                "hello-required".into(),
                format!("{method}: send hello first"),
            ))
        } else if params.get("capability").and_then(Value::as_str) == Some(&shared.capability) {
            hello_done = true;
            Ok(json!({
                "protocol": 2, "server": "slate 0.1.0",
                "parentId": "6f1c0000-0000-4000-8000-000000000000", "cwd": "/",
                "pid": std::process::id(),
                "actor": {"kind": "child", "target": "0b6a0000-0000-4000-8000-000000000000@1"},
            }))
        } else {
            Err((
                "capability-refused".into(),
                "hello.capability: not the capability of a live worker generation of this coordinator".into(),
            ))
        };
        let reply = match answer {
            Ok(result) => json!({"id": id, "result": result}),
            Err((code, message)) => json!({"id": id, "error": {"code": code, "message": message}}),
        };
        writer.write_all(format!("{reply}\n").as_bytes())?;
        writer.flush()?;
    }
    Ok(())
}

impl Shared {
    /// Logs a request; how many of `method` came before.
    fn record(&self, connection: u64, method: &str, params: &Value) -> usize {
        let mut log = lock(&self.log);
        let before = log.iter().filter(|l| l.method == method).count();
        log.push(Logged {
            connection,
            method: method.to_owned(),
            params: params.clone(),
            at: Instant::now(),
        });
        before
    }

    /// One request the tool layer makes, logged and answered by the test.
    fn answer(&self, connection: u64, method: &str, params: &Value) -> Result<Value, ControlError> {
        let before = self.record(connection, method, params);
        (self.answerer)(method, params, before)
            .map_err(|(code, message)| ControlError::new(code, message))
    }
}

/// Slate's tool layer as the fake's caller, its requests going to the test.
struct FakeBackend<'a> {
    shared: &'a Shared,
    connection: u64,
}

impl Backend for FakeBackend<'_> {
    fn caller(&self) -> BoxFuture<'_, Result<Caller, ControlError>> {
        Box::pin(async move { Ok(self.shared.caller) })
    }

    fn request(&self, request: Request) -> BoxFuture<'_, Result<Payload, ControlError>> {
        Box::pin(async move {
            let params = request
                .params()
                .map_err(|e| ControlError::internal(&e.to_string()))?;
            self.shared
                .answer(self.connection, request.method(), &params)
                .map(Payload::Value)
        })
    }

    fn delegate<'a>(
        &'a self,
        params: DelegateParams,
        _watch: &'a Watch,
    ) -> BoxFuture<'a, Result<DelegateResult, ControlError>> {
        Box::pin(async move {
            let params =
                serde_json::to_value(params).map_err(|e| ControlError::internal(&e.to_string()))?;
            let answer = self.shared.answer(self.connection, "delegate", &params)?;
            serde_json::from_value(answer).map_err(|e| {
                ControlError::internal(&format!(
                    "the test's delegate answer is not a DelegateResult: {e}"
                ))
            })
        })
    }

    fn cwd(&self) -> PathBuf {
        PathBuf::from("/")
    }
}

/// `callTool`: Slate's own tool layer, answering exactly as the coordinator's would.
fn call_tool(shared: &Shared, connection: u64, params: Value) -> Answer {
    let params: CallToolParams = serde_json::from_value(params)
        .map_err(|e| ("invalid-request".to_owned(), format!("callTool: {e}")))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ("internal".to_owned(), e.to_string()))?;
    let backend = FakeBackend { shared, connection };
    let answer = runtime.block_on(slate::tools::call(&backend, &params, &Watch::default()));
    match answer {
        Ok(answer) => Ok(json!(answer)),
        Err(e) => Err((e.code, e.message)),
    }
}
