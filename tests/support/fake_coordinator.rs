//! A stand-in for Slate's control socket, for tests of the pi extension against real pi before
//! (and independently of) the coordinator's own `guard` / `submit` handling.
//!
//! It speaks the framing of `docs/protocol.md` (one JSON object per line) on a Unix socket in a
//! directory the test owns: `hello` is answered as the server does for a worker's capability
//! (and refused, with the server's wording, for any other), every later request goes to the
//! test's [`Answerer`] and is logged ([`FakeCoordinator::log`]). Include it with
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

impl FakeCoordinator {
    /// Listen on `<dir>/coordinator.sock` for workers presenting `capability`.
    pub fn start(
        dir: &Path,
        capability: &str,
        answerer: impl Fn(&str, &Value, usize) -> Answer + Send + Sync + 'static,
    ) -> io::Result<Self> {
        let path = dir.join("coordinator.sock");
        let listener = UnixListener::bind(&path)?;
        listener.set_nonblocking(true)?;
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            capability: capability.to_owned(),
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
        let before = {
            let mut log = lock(&shared.log);
            let before = log.iter().filter(|l| l.method == method).count();
            log.push(Logged {
                connection,
                method: method.clone(),
                params: params.clone(),
                at: Instant::now(),
            });
            before
        };
        let answer = if hello_done {
            (shared.answerer)(&method, &params, before)
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
