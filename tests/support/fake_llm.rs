//! A fake OpenAI-compatible `/v1/chat/completions` streaming server for tests against real pi.
//!
//! A port of `shared/pi/fake_llm.py` (the server the traces in `shared/pi/traces` were recorded
//! with) to std-only Rust: same scenarios, same bytes on the wire. It listens only on
//! `127.0.0.1`, on a port the OS picks; each test starts its own. Include it with
//! `#[path = "support/fake_llm.rs"] mod fake_llm;`.
//!
//! The behaviour is chosen by the first `SCENARIO:<KEYWORD>` in the text of the **last** message
//! whose role is `user` (pi puts the prompt, steer or follow-up text there):
//!
//! | keyword | answer |
//! |---|---|
//! | `TEXT` | `Hello from the fake LLM.` in 5 chunks, then usage |
//! | `BASH`, `TOOL` | 1st request: tool call `bash {"command": "echo hi-from-bash-tool"}`; once a tool result follows the user message: `The tool returned: <output>.` |
//! | `READ` | the same with `read {"path": "hello.txt"}` |
//! | `SLEEPTOOL` | the same with `bash {"command": "sleep 3; echo slept"}` (a slow tool) |
//! | `SHELL` | the same with `bash {"command": <the rest of the line after the first `COMMAND:` in the user text>}` (Rust only) |
//! | `SLOW` | 40 chunks `word<i> `, 0.25 s apart (~10 s); `SLOW<n>`: 4 chunks a second for `n` seconds (Rust only) |
//! | `SLOWTOOL` | ~3 s of slow text, then a bash tool call; then `Slow tool finished.` |
//! | `USAGE` | text with the usage of NOTES "Usage and cost": prompt 1500 (cached 1000), completion 300 (reasoning 120) |
//! | `THINK` | `reasoning_content` deltas, then text |
//! | `ERR500` / `ERR429` / `ERR400` | that HTTP status every time (429 with `Retry-After: 1`); pi retries 500 and 429, not 400 |
//! | `FLAKY<n>` | HTTP 500 for the first `n` requests with this exact user text, then `Recovered after <n> failures.` |
//! | `DROP` | a few chunks, then the connection closes without `finish_reason` |
//! | `LENGTH` | text ending with `finish_reason: "length"` |
//! | `LOOP`, `LOOP<n>` | a bash tool call (`echo loop-<k>`) on every request until `n` (default 20) tool results follow the user message, then `Loop done after <n> tool calls.` (Rust only; for request/tool limits) |
//! | `CALLS` | the tool calls named by the user text's lines `CALL: <tool> <JSON object>`, one per request and in order: the request after `k` tool results makes call `k + 1`, its arguments the JSON exactly as written (except that `$SELF` becomes the first `UUID@generation` in the system prompt and `$FOUND` the first one after `FOUND:` in the newest tool result); after the last, `Calls done.` then one line `[<i>] <text>` per tool result it saw (`i` from 1). A bad `CALL:` line is answered `CALLS: bad CALL line <n>: <why>.` (Rust only; for extension tests) |
//! | `BATCH` | the same `CALL:` lines, all as one answer (a parallel batch: one assistant message with every call, ids `call_fake_<seq>_<i>`); once a tool result follows the user message, `Batch done.` then one line `[<i>] <text>` per tool result (Rust only; for batch limits) |
//! | none | `ACK: <first 60 chars of the user text>` |
//! | request without `tools` | `SUMMARY: fake summary of <n> chars.` (pi's compaction/summary calls) |
//!
//! Whatever the scenario, a request for the model id **`fake-down`** that carries a tool result
//! (a `tool` message anywhere in the history) is answered with HTTP 500 (Rust only): a route
//! that works until a tool completed and then fails, for recovery tests.
//!
//! Also `GET /_health`, `GET /v1/models` and `POST /_reset` (clears the `FLAKY` counters), as in
//! the Python server.
//!
//! Every chat-completions request is recorded ([`FakeLlm::requests`]) with its parsed body.
//! Each connection serves one request and is closed after the answer (HTTP/1.0, like the Python
//! server), so an SSE body ends when the connection closes. Dropping the server stops it: slow
//! streams are cut, every thread is joined, nothing is left running. Every loop is bounded: the
//! longest stream lasts the `SLOW<n>` it was asked for (capped at 10 minutes), and reads and
//! writes time out.
#![allow(dead_code)]

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::Value;

/// Default delay between chunks (the Python server's 0.02 s).
const CHUNK_DELAY: Duration = Duration::from_millis(20);
/// Delay between chunks of the slow scenarios.
const SLOW_DELAY: Duration = Duration::from_millis(250);
/// `LOOP` without a number: this many tool calls, then a text answer.
const LOOP_DEFAULT: u64 = 20;
/// Upper bounds that keep every stream finite.
const LOOP_MAX: u64 = 1000;
const SLOW_MAX_SECS: u64 = 600;
/// Request limits: a request head larger than this, or a body larger than this, is refused.
const MAX_HEAD: usize = 64 * 1024;
const MAX_BODY: usize = 64 * 1024 * 1024;
/// Socket timeouts, so that no connection thread can block for long.
const IO_TIMEOUT: Duration = Duration::from_secs(10);
/// How often the acceptor and sleeping streams look at the stop flag.
const POLL: Duration = Duration::from_millis(5);

/// One chat-completions request pi made, in arrival order.
#[derive(Clone, Debug)]
pub struct LoggedRequest {
    /// 1-based arrival number (the `<seq>` in the answer id `chatcmpl-fake-<seq>`).
    pub seq: u64,
    /// When the request was fully read.
    pub at: Instant,
    pub method: String,
    pub path: String,
    /// Header names lowercased, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The parsed JSON body.
    pub body: Value,
    /// Text of the last `user` message (text parts joined with `\n`).
    pub last_user_text: String,
    /// Number of `tool` messages after that user message.
    pub tool_results_after_user: usize,
    /// The scenario keyword found in `last_user_text` (empty if none).
    pub scenario: String,
}

impl LoggedRequest {
    /// The value of header `name` (case-insensitive), if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The request's `messages` array (empty if absent).
    pub fn messages(&self) -> &[Value] {
        self.body
            .get("messages")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }

    /// Whether the request carried tools (pi's summary/compaction calls do not).
    pub fn has_tools(&self) -> bool {
        self.body
            .get("tools")
            .and_then(Value::as_array)
            .is_some_and(|t| !t.is_empty())
    }
}

/// The running server. Dropping it stops it and joins all its threads.
pub struct FakeLlm {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

struct Shared {
    stop: AtomicBool,
    seq: AtomicU64,
    /// TCP connections accepted (whether or not a request came on them).
    accepted: AtomicU64,
    requests: Mutex<Vec<LoggedRequest>>,
    flaky: Mutex<HashMap<String, u64>>,
    connections: Mutex<Vec<Connection>>,
}

struct Connection {
    stream: TcpStream,
    thread: JoinHandle<()>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl FakeLlm {
    /// Start a server on `127.0.0.1:<free port>`.
    pub fn start() -> io::Result<Self> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            seq: AtomicU64::new(0),
            accepted: AtomicU64::new(0),
            requests: Mutex::new(Vec::new()),
            flaky: Mutex::new(HashMap::new()),
            connections: Mutex::new(Vec::new()),
        });
        let acceptor = {
            let shared = Arc::clone(&shared);
            thread::Builder::new()
                .name("fake-llm-accept".into())
                .spawn(move || accept_loop(&listener, &shared))?
        };
        Ok(Self {
            addr,
            shared,
            acceptor: Some(acceptor),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://127.0.0.1:<port>/v1`, the provider `baseUrl` for pi's `models.json`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Every chat-completions request so far, in arrival order.
    pub fn requests(&self) -> Vec<LoggedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// Number of chat-completions requests so far.
    pub fn request_count(&self) -> usize {
        lock(&self.shared.requests).len()
    }

    /// TCP connections accepted so far: 0 means not a byte reached the server.
    pub fn accepted_connections(&self) -> u64 {
        self.shared.accepted.load(Ordering::SeqCst)
    }

    /// Wait until at least `n` requests arrived; false on timeout.
    pub fn wait_for_requests(&self, n: usize, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if self.request_count() >= n {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            thread::sleep(POLL);
        }
    }

    /// The request log as JSON lines (seq, path, headers, scenario, body), for failure output.
    pub fn requests_jsonl(&self) -> String {
        let mut out = String::new();
        for r in self.requests() {
            let line = serde_json::json!({
                "seq": r.seq,
                "path": r.path,
                "user-agent": r.header("user-agent"),
                "last_user_text": r.last_user_text,
                "tool_results_after_user": r.tool_results_after_user,
                "body": r.body,
            });
            out.push_str(&line.to_string());
            out.push('\n');
        }
        out
    }
}

impl Drop for FakeLlm {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        // The acceptor is gone, so the list is final: cut every connection, then join its thread.
        let connections = std::mem::take(&mut *lock(&self.shared.connections));
        for c in &connections {
            let _ = c.stream.shutdown(Shutdown::Both);
        }
        for c in connections {
            let _ = c.thread.join();
        }
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    while !shared.stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((stream, _)) => {
                shared.accepted.fetch_add(1, Ordering::SeqCst);
                if let Err(e) = spawn_connection(stream, shared) {
                    eprintln!("[fake-llm] cannot serve a connection: {e}");
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => thread::sleep(POLL),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                eprintln!("[fake-llm] accept failed: {e}");
                thread::sleep(POLL);
            }
        }
    }
}

fn spawn_connection(stream: TcpStream, shared: &Arc<Shared>) -> io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    stream.set_nodelay(true)?;
    let handle = stream.try_clone()?;
    let thread = {
        let shared = Arc::clone(shared);
        thread::Builder::new()
            .name("fake-llm-conn".into())
            .spawn(move || {
                let mut conn = Conn {
                    stream,
                    shared: &shared,
                };
                if let Err(e) = conn.serve()
                    && !matches!(
                        e.kind(),
                        io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset
                    )
                {
                    eprintln!("[fake-llm] connection error: {e}");
                }
                let _ = conn.stream.shutdown(Shutdown::Both);
            })?
    };
    let mut connections = lock(&shared.connections);
    connections.retain(|c| !c.thread.is_finished());
    connections.push(Connection {
        stream: handle,
        thread,
    });
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Wire format: the Python server's JSON (json.dumps: ", " and ": " separators, ASCII only).

/// `serde_json` formatter that writes what Python's `json.dumps(obj)` writes.
struct PythonJson;

impl serde_json::ser::Formatter for PythonJson {
    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if first { Ok(()) } else { w.write_all(b", ") }
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if first { Ok(()) } else { w.write_all(b", ") }
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }

    /// `ensure_ascii`: everything outside `' '..='~'` that serde did not escape becomes `\uXXXX`.
    fn write_string_fragment<W: ?Sized + Write>(&mut self, w: &mut W, s: &str) -> io::Result<()> {
        let mut start = 0;
        for (i, c) in s.char_indices() {
            if (' '..='~').contains(&c) {
                continue;
            }
            w.write_all(&s.as_bytes()[start..i])?;
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                write!(w, "\\u{u:04x}")?;
            }
            start = i + c.len_utf8();
        }
        w.write_all(&s.as_bytes()[start..])
    }
}

/// `json.dumps(value)`.
fn py_json<T: Serialize>(value: &T) -> String {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, PythonJson);
    if let Err(e) = value.serialize(&mut ser) {
        // Only our own plain structs are serialized here; this cannot fail.
        return format!("\"serialization failed: {e}\"");
    }
    // The formatter writes ASCII only.
    String::from_utf8_lossy(&out).into_owned()
}

#[derive(Serialize)]
struct Chunk<'a> {
    id: &'a str,
    object: &'static str,
    created: u64,
    model: &'a str,
    choices: Vec<Choice>,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<Usage>,
}

#[derive(Serialize)]
struct Choice {
    index: u32,
    delta: Delta,
    finish_reason: Option<&'static str>,
}

#[derive(Default, Serialize)]
struct Delta {
    #[serde(skip_serializing_if = "Option::is_none")]
    role: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Serialize)]
struct ToolCallDelta {
    index: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    kind: Option<&'static str>,
    function: FunctionDelta,
}

#[derive(Serialize)]
struct FunctionDelta {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    arguments: String,
}

#[derive(Clone, Serialize)]
struct Usage {
    prompt_tokens: u64,
    completion_tokens: u64,
    total_tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_tokens_details: Option<PromptDetails>,
    #[serde(skip_serializing_if = "Option::is_none")]
    completion_tokens_details: Option<CompletionDetails>,
}

impl Usage {
    fn plain(prompt: u64, completion: u64) -> Self {
        Self {
            prompt_tokens: prompt,
            completion_tokens: completion,
            total_tokens: prompt + completion,
            prompt_tokens_details: None,
            completion_tokens_details: None,
        }
    }
}

#[derive(Clone, Serialize)]
struct PromptDetails {
    cached_tokens: u64,
}

#[derive(Clone, Serialize)]
struct CompletionDetails {
    reasoning_tokens: u64,
}

#[derive(Serialize)]
struct ModelList {
    object: &'static str,
    data: Vec<ModelEntry>,
}

#[derive(Serialize)]
struct ModelEntry {
    id: &'static str,
    object: &'static str,
    owned_by: &'static str,
}

#[derive(Serialize)]
struct ErrorBody {
    error: ErrorDetail,
}

#[derive(Serialize)]
struct ErrorDetail {
    message: String,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    kind: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<&'static str>,
}

impl ErrorBody {
    fn new(message: impl Into<String>, kind: Option<&'static str>) -> Self {
        Self {
            error: ErrorDetail {
                message: message.into(),
                kind,
                code: None,
            },
        }
    }
}

/// The tool call arguments as Python builds them: `json.dumps({key: value})`.
#[derive(Serialize)]
struct ToolArgs {
    #[serde(skip_serializing_if = "Option::is_none")]
    command: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<String>,
}

impl ToolArgs {
    fn command(c: impl Into<String>) -> Self {
        Self {
            command: Some(c.into()),
            path: None,
        }
    }

    fn path(p: impl Into<String>) -> Self {
        Self {
            command: None,
            path: Some(p.into()),
        }
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

// ---------------------------------------------------------------------------------------------
// Requests.

struct Request {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

/// Read one HTTP/1.x request with a `Content-Length` body (what pi's HTTP client sends).
fn read_request(stream: &TcpStream) -> io::Result<Option<Request>> {
    let mut reader = BufReader::new(stream.take(MAX_HEAD as u64));
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None); // connected and closed without a request
    }
    let mut parts = line.split_whitespace();
    let (Some(method), Some(path)) = (parts.next(), parts.next()) else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "bad request line",
        ));
    };
    let (method, path) = (method.to_owned(), path.to_owned());
    let mut headers = Vec::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "truncated request head",
            ));
        }
        let l = line.trim_end_matches(['\r', '\n']);
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    let length = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .map_or(Ok(0), |(_, v)| v.parse::<usize>())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad content-length"))?;
    if length > MAX_BODY {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "body too large"));
    }
    // Whatever the head reader buffered already belongs to the body.
    let mut body = reader.buffer().to_vec();
    let mut rest = reader.into_inner().into_inner();
    if body.len() < length {
        let mut tail = vec![0; length - body.len()];
        rest.read_exact(&mut tail)?;
        body.extend_from_slice(&tail);
    }
    body.truncate(length);
    Ok(Some(Request {
        method,
        path,
        headers,
        body,
    }))
}

/// Python's `text_of`: a string, or the `text` parts of a content array joined with `\n`.
fn text_of(content: Option<&Value>) -> String {
    match content {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
            .map(|p| p.get("text").and_then(Value::as_str).unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n"),
        Some(other) => other.to_string(),
    }
}

/// (last user text, number of tool results after it).
fn analyse(messages: &[Value]) -> (String, usize) {
    let role = |m: &Value| m.get("role").and_then(Value::as_str).map(str::to_owned);
    let Some(last_user) = messages
        .iter()
        .rposition(|m| role(m).as_deref() == Some("user"))
    else {
        return (String::new(), 0);
    };
    let text = text_of(messages[last_user].get("content"));
    let tools = messages[last_user + 1..]
        .iter()
        .filter(|m| role(m).as_deref() == Some("tool"))
        .count();
    (text, tools)
}

/// `re.search(r"SCENARIO:([A-Z0-9]+)", text)`.
fn scenario_of(text: &str) -> String {
    let mut rest = text;
    while let Some(i) = rest.find("SCENARIO:") {
        rest = &rest[i + "SCENARIO:".len()..];
        let kw: String = rest
            .chars()
            .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
            .collect();
        if !kw.is_empty() {
            return kw;
        }
    }
    String::new()
}

/// `keyword` followed by a decimal number (the whole rest), e.g. `LOOP5` → 5.
fn numbered(scenario: &str, keyword: &str) -> Option<u64> {
    let digits = scenario.strip_prefix(keyword)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// One `CALL: <tool> <JSON object>` line of a `CALLS` scenario.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedCall {
    pub name: String,
    /// The JSON text as written (checked to be an object).
    pub args_json: String,
}

/// The `CALL:` lines of `text`, in order (`Err` names the first bad one, from 1).
pub fn parse_calls(text: &str) -> Result<Vec<PlannedCall>, String> {
    let mut calls = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.trim_start().strip_prefix("CALL:") else {
            continue;
        };
        let n = calls.len() + 1;
        let rest = rest.trim();
        let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        if name.is_empty() {
            return Err(format!("bad CALL line {n}: no tool name"));
        }
        let args = args.trim();
        match serde_json::from_str::<Value>(args) {
            Ok(Value::Object(_)) => calls.push(PlannedCall {
                name: name.to_owned(),
                args_json: args.to_owned(),
            }),
            Ok(_) => {
                return Err(format!(
                    "bad CALL line {n}: the arguments are not a JSON object"
                ));
            }
            Err(e) => return Err(format!("bad CALL line {n}: {e}")),
        }
    }
    if calls.is_empty() {
        return Err("bad CALL line 1: the user text has no CALL: line".to_owned());
    }
    Ok(calls)
}

/// A `CALLS` argument text with its placeholders filled in from the conversation, so a test
/// can make the model use identities only known at run time: `$SELF` becomes the first
/// `UUID@generation` of the system prompt (Slate's "You are the Slate subagent …"), `$FOUND`
/// the first one after `FOUND:` in the newest tool result (e.g. a message the test sent). A
/// placeholder with nothing to fill stays as is.
fn substitute_refs(args_json: &str, messages: &[Value]) -> String {
    let system = messages
        .iter()
        .find(|m| {
            m.get("role")
                .and_then(Value::as_str)
                .is_some_and(|r| r == "system" || r == "developer")
        })
        .map(|m| text_of(m.get("content")));
    let mut out = args_json.to_owned();
    if out.contains("$SELF")
        && let Some(me) = system.and_then(|t| find_child_ref(&t))
    {
        out = out.replace("$SELF", &me);
    }
    if out.contains("$FOUND") {
        let newest = messages
            .iter()
            .rev()
            .find(|m| m.get("role").and_then(Value::as_str) == Some("tool"))
            .map(|m| text_of(m.get("content")));
        let found = newest.and_then(|t| {
            let (_, after) = t.split_once("FOUND:")?;
            find_child_ref(after)
        });
        if let Some(found) = found {
            out = out.replace("$FOUND", &found);
        }
    }
    out
}

/// The first `<36-character UUID>@<generation>` in `text`.
fn find_child_ref(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let is_uuid = |s: &[u8]| {
        s.len() == 36
            && s.iter().enumerate().all(|(i, &b)| match i {
                8 | 13 | 18 | 23 => b == b'-',
                _ => b.is_ascii_hexdigit(),
            })
    };
    (0..bytes.len().saturating_sub(37)).find_map(|start| {
        let uuid = bytes.get(start..start + 36)?;
        if !is_uuid(uuid) || bytes.get(start + 36) != Some(&b'@') {
            return None;
        }
        let digits = bytes[start + 37..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        (digits > 0).then(|| text[start..start + 37 + digits].to_owned())
    })
}

/// The text of every `tool` message after the last `user` message, in order.
fn tool_results_after_user(messages: &[Value]) -> Vec<String> {
    let role = |m: &Value| m.get("role").and_then(Value::as_str) == Some("user");
    let start = messages.iter().rposition(role).map_or(0, |i| i + 1);
    messages[start..]
        .iter()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("tool"))
        .map(|m| text_of(m.get("content")))
        .collect()
}

/// `s` in about three pieces, cut between characters (ASCII: as the Python server cuts).
fn thirds(s: &str) -> Vec<&str> {
    let k = (s.len() / 3).max(1);
    let mut pieces = Vec::new();
    let mut rest = s;
    while !rest.is_empty() {
        let mut cut = k.min(rest.len());
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        let (piece, tail) = rest.split_at(cut);
        pieces.push(piece);
        rest = tail;
    }
    pieces
}

/// Python's `s.strip().replace("\n", " ")[:n]`.
fn snippet(s: &str, n: usize) -> String {
    s.trim().replace('\n', " ").chars().take(n).collect()
}

// ---------------------------------------------------------------------------------------------
// Responses.

struct Conn<'a> {
    stream: TcpStream,
    shared: &'a Shared,
}

/// Stream options of `stream_text`.
struct TextOpts {
    delay: Duration,
    finish: &'static str,
    usage: Option<Usage>,
    reasoning: Vec<String>,
}

impl Default for TextOpts {
    fn default() -> Self {
        Self {
            delay: CHUNK_DELAY,
            finish: "stop",
            usage: None,
            reasoning: Vec::new(),
        }
    }
}

fn strings<S: AsRef<str>>(pieces: &[S]) -> Vec<String> {
    pieces.iter().map(|p| p.as_ref().to_owned()).collect()
}

impl Conn<'_> {
    fn serve(&mut self) -> io::Result<()> {
        let Some(req) = read_request(&self.stream)? else {
            return Ok(());
        };
        let path = req.path.trim_end_matches('/');
        match req.method.as_str() {
            "GET" if req.path == "/_health" => {
                self.send_json(200, &serde_json::json!({"ok": true}), &[])
            }
            "GET" if path.ends_with("/models") => {
                let model = |id| ModelEntry {
                    id,
                    object: "model",
                    owned_by: "fake",
                };
                let list = ModelList {
                    object: "list",
                    data: vec![model("fake-model"), model("fake-reasoner")],
                };
                self.send_json(200, &list, &[])
            }
            "GET" => self.send_json(404, &ErrorBody::new("not found", None), &[]),
            "POST" if req.path == "/_reset" => {
                lock(&self.shared.flaky).clear();
                self.send_json(200, &serde_json::json!({"ok": true}), &[])
            }
            "POST" if !path.ends_with("/chat/completions") => {
                let msg = format!("unknown path {}", req.path);
                self.send_json(404, &ErrorBody::new(msg, None), &[])
            }
            "POST" => self.chat(req),
            _ => self.send_json(501, &ErrorBody::new("unsupported method", None), &[]),
        }
    }

    fn stopping(&self) -> bool {
        self.shared.stop.load(Ordering::SeqCst)
    }

    /// Sleep `d`, in small steps; false if the server is stopping meanwhile.
    fn pause(&self, d: Duration) -> bool {
        let end = Instant::now() + d;
        loop {
            if self.stopping() {
                return false;
            }
            let now = Instant::now();
            if now >= end {
                return true;
            }
            thread::sleep((end - now).min(POLL));
        }
    }

    fn send_json<T: Serialize>(
        &mut self,
        status: u16,
        body: &T,
        extra: &[(&str, &str)],
    ) -> io::Result<()> {
        let body = py_json(body);
        let mut head = format!(
            "HTTP/1.0 {status} {}\r\nServer: fake-llm/1.0\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
            reason(status),
            body.len()
        );
        for (k, v) in extra {
            let _ = write!(head, "{k}: {v}\r\n");
        }
        head.push_str("\r\n");
        self.stream.write_all(head.as_bytes())?;
        self.stream.write_all(body.as_bytes())?;
        self.stream.flush()
    }

    fn start_sse(&mut self) -> io::Result<()> {
        self.stream.write_all(
            b"HTTP/1.0 200 OK\r\nServer: fake-llm/1.0\r\nContent-Type: text/event-stream\r\n\
              Cache-Control: no-cache\r\nConnection: close\r\n\r\n",
        )?;
        self.stream.flush()
    }

    /// One SSE event; an error (client gone, server stopping) ends the stream.
    fn sse(&mut self, data: &str) -> io::Result<()> {
        if self.stopping() {
            return Err(io::Error::new(
                io::ErrorKind::Interrupted,
                "server stopping",
            ));
        }
        self.stream
            .write_all(format!("data: {data}\n\n").as_bytes())?;
        self.stream.flush()
    }

    fn chunk(
        &mut self,
        id: &str,
        model: &str,
        delta: Delta,
        finish: Option<&'static str>,
    ) -> io::Result<()> {
        let c = Chunk {
            id,
            object: "chat.completion.chunk",
            created: unix_now(),
            model,
            choices: vec![Choice {
                index: 0,
                delta,
                finish_reason: finish,
            }],
            usage: None,
        };
        self.sse(&py_json(&c))
    }

    /// The final usage chunk: `choices: []` plus `usage`.
    fn usage_chunk(&mut self, id: &str, model: &str, usage: Usage) -> io::Result<()> {
        let c = Chunk {
            id,
            object: "chat.completion.chunk",
            created: unix_now(),
            model,
            choices: Vec::new(),
            usage: Some(usage),
        };
        self.sse(&py_json(&c))
    }

    fn content(&mut self, id: &str, model: &str, text: &str) -> io::Result<()> {
        let delta = Delta {
            content: Some(text.to_owned()),
            ..Delta::default()
        };
        self.chunk(id, model, delta, None)
    }

    fn role(&mut self, id: &str, model: &str) -> io::Result<()> {
        let delta = Delta {
            role: Some("assistant"),
            content: Some(String::new()),
            ..Delta::default()
        };
        self.chunk(id, model, delta, None)
    }

    fn wait(&self, d: Duration) -> io::Result<()> {
        if self.pause(d) {
            Ok(())
        } else {
            Err(io::Error::new(
                io::ErrorKind::Interrupted,
                "server stopping",
            ))
        }
    }

    fn stream_text(
        &mut self,
        id: &str,
        model: &str,
        pieces: &[String],
        prompt_tokens: u64,
        opts: TextOpts,
    ) -> io::Result<()> {
        self.start_sse()?;
        self.role(id, model)?;
        for r in &opts.reasoning {
            let delta = Delta {
                reasoning_content: Some(r.clone()),
                ..Delta::default()
            };
            self.chunk(id, model, delta, None)?;
            self.wait(opts.delay)?;
        }
        for p in pieces {
            self.content(id, model, p)?;
            self.wait(opts.delay)?;
        }
        self.chunk(id, model, Delta::default(), Some(opts.finish))?;
        let completion = (pieces.len() + opts.reasoning.len()) as u64;
        let usage = opts
            .usage
            .unwrap_or_else(|| Usage::plain(prompt_tokens, completion));
        self.usage_chunk(id, model, usage)?;
        self.sse("[DONE]")
    }

    fn stream_tool_call(
        &mut self,
        id: &str,
        model: &str,
        call: &ToolCall<'_>,
        prompt_tokens: u64,
        preamble: &[String],
        delay: Duration,
    ) -> io::Result<()> {
        self.stream_tool_calls(
            id,
            model,
            std::slice::from_ref(call),
            prompt_tokens,
            preamble,
            delay,
        )
    }

    /// One answer with `calls` as its tool calls (indices 0, 1, …, each streamed whole before
    /// the next, as the `OpenAI` API streams a parallel batch).
    fn stream_tool_calls(
        &mut self,
        id: &str,
        model: &str,
        calls: &[ToolCall<'_>],
        prompt_tokens: u64,
        preamble: &[String],
        delay: Duration,
    ) -> io::Result<()> {
        self.start_sse()?;
        self.role(id, model)?;
        for p in preamble {
            self.content(id, model, p)?;
            self.wait(delay)?;
        }
        for (index, call) in (0u32..).zip(calls) {
            let first = Delta {
                tool_calls: Some(vec![ToolCallDelta {
                    index,
                    id: Some(call.call_id.to_owned()),
                    kind: Some("function"),
                    function: FunctionDelta {
                        name: Some(call.name.to_owned()),
                        arguments: String::new(),
                    },
                }]),
                ..Delta::default()
            };
            self.chunk(id, model, first, None)?;
            // The argument JSON in about three deltas (split between characters).
            for piece in thirds(call.args_json) {
                let d = Delta {
                    tool_calls: Some(vec![ToolCallDelta {
                        index,
                        id: None,
                        kind: None,
                        function: FunctionDelta {
                            name: None,
                            arguments: piece.to_owned(),
                        },
                    }]),
                    ..Delta::default()
                };
                self.chunk(id, model, d, None)?;
                self.wait(delay)?;
            }
        }
        self.chunk(id, model, Delta::default(), Some("tool_calls"))?;
        let completion = 20 * calls.len().max(1) as u64;
        self.usage_chunk(id, model, Usage::plain(prompt_tokens, completion))?;
        self.sse("[DONE]")
    }

    fn chat(&mut self, req: Request) -> io::Result<()> {
        let raw: &[u8] = if req.body.is_empty() {
            b"{}"
        } else {
            &req.body
        };
        let Ok(body) = serde_json::from_slice::<Value>(raw) else {
            return self.send_json(400, &ErrorBody::new("bad json", None), &[]);
        };
        let seq = self.shared.seq.fetch_add(1, Ordering::SeqCst) + 1;
        let messages = body
            .get("messages")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let (user_text, n_tool) = analyse(&messages);
        let ctx = Ctx {
            seq,
            id: format!("chatcmpl-fake-{seq}"),
            model: body
                .get("model")
                .and_then(Value::as_str)
                .unwrap_or("fake-model")
                .to_owned(),
            prompt_tokens: 100 + 10 * messages.len() as u64,
            scenario: scenario_of(&user_text),
            user_text,
            n_tool,
            messages,
        };
        let logged = LoggedRequest {
            seq,
            at: Instant::now(),
            method: req.method,
            path: req.path,
            headers: req.headers,
            body,
            last_user_text: ctx.user_text.clone(),
            tool_results_after_user: n_tool,
            scenario: ctx.scenario.clone(),
        };
        let has_tools = logged.has_tools();
        lock(&self.shared.requests).push(logged);
        let has_tool_result = ctx
            .messages
            .iter()
            .any(|m| m.get("role").and_then(Value::as_str) == Some("tool"));
        if ctx.model == "fake-down" && has_tool_result {
            let e = ErrorBody::new("fake route down", Some("server_error"));
            self.send_json(500, &e, &[])
        } else if has_tools {
            self.dispatch(&ctx)
        } else {
            // pi's compaction / branch-summary calls carry no tools: always a plain summary.
            let n = ctx.user_text.chars().count();
            let pieces = strings(&["SUMMARY: ", "fake summary of ", &format!("{n} chars.")]);
            self.text(&ctx, &pieces, TextOpts::default())
        }
    }

    fn dispatch(&mut self, ctx: &Ctx) -> io::Result<()> {
        let scen = ctx.scenario.as_str();
        match scen {
            "ERR500" => {
                let e = ErrorBody::new("fake internal server error", Some("server_error"));
                self.send_json(500, &e, &[])
            }
            "ERR429" => {
                let mut e = ErrorBody::new("fake rate limit exceeded", Some("rate_limit_error"));
                e.error.code = Some("rate_limit_exceeded");
                self.send_json(429, &e, &[("Retry-After", "1")])
            }
            "ERR400" => {
                let e = ErrorBody::new(
                    "fake bad request: unsupported parameter",
                    Some("invalid_request_error"),
                );
                self.send_json(400, &e, &[])
            }
            _ if scen.starts_with("FLAKY")
                && scen[5..].starts_with(|c: char| c.is_ascii_digit()) =>
            {
                let digits: String = scen[5..].chars().take_while(char::is_ascii_digit).collect();
                self.flaky(ctx, digits.parse().unwrap_or(u64::MAX))
            }
            "BASH" | "TOOL" | "READ" | "SLEEPTOOL" | "SHELL" => self.tool_then_text(ctx),
            "SLOWTOOL" => {
                if ctx.n_tool == 0 {
                    let preamble: Vec<String> = (0..12).map(|i| format!("thinking-{i} ")).collect();
                    let args = ToolArgs::command("echo slow-tool-done");
                    return self.tool_call(ctx, "bash", &args, &preamble, SLOW_DELAY);
                }
                self.text(
                    ctx,
                    &strings(&["Slow tool ", "finished."]),
                    TextOpts::default(),
                )
            }
            "SLOW" => self.slow(ctx, 40),
            _ if numbered(scen, "SLOW").is_some() => {
                let secs = numbered(scen, "SLOW").unwrap_or(0).min(SLOW_MAX_SECS);
                self.slow(ctx, secs * 4)
            }
            "USAGE" => {
                let usage = Usage {
                    prompt_tokens: 1500,
                    completion_tokens: 300,
                    total_tokens: 1800,
                    prompt_tokens_details: Some(PromptDetails {
                        cached_tokens: 1000,
                    }),
                    completion_tokens_details: Some(CompletionDetails {
                        reasoning_tokens: 120,
                    }),
                };
                let opts = TextOpts {
                    usage: Some(usage),
                    ..TextOpts::default()
                };
                self.text(ctx, &strings(&["Usage ", "numbers ", "attached."]), opts)
            }
            "THINK" => {
                let opts = TextOpts {
                    reasoning: strings(&["Let me ", "consider ", "this carefully."]),
                    ..TextOpts::default()
                };
                self.text(ctx, &strings(&["Thought ", "about ", "it."]), opts)
            }
            "DROP" => {
                self.start_sse()?;
                self.role(&ctx.id, &ctx.model)?;
                for piece in ["This ", "stream ", "will ", "break"] {
                    self.content(&ctx.id, &ctx.model, piece)?;
                    self.wait(Duration::from_millis(50))?;
                }
                Ok(()) // the caller closes the connection: no finish_reason, no [DONE]
            }
            "LENGTH" => {
                let opts = TextOpts {
                    finish: "length",
                    ..TextOpts::default()
                };
                let pieces = strings(&["Truncated ", "answer ", "because ", "of "]);
                self.text(ctx, &pieces, opts)
            }
            "TEXT" => {
                let pieces = strings(&["Hello ", "from ", "the ", "fake ", "LLM."]);
                self.text(ctx, &pieces, TextOpts::default())
            }
            "LOOP" => self.tool_loop(ctx, LOOP_DEFAULT),
            "CALLS" => self.calls(ctx),
            "BATCH" => self.batch(ctx),
            _ if numbered(scen, "LOOP").is_some() => {
                self.tool_loop(ctx, numbered(scen, "LOOP").unwrap_or(0).min(LOOP_MAX))
            }
            _ => {
                let pieces = strings(&["ACK: ", &snippet(&ctx.user_text, 60)]);
                self.text(ctx, &pieces, TextOpts::default())
            }
        }
    }

    fn text(&mut self, ctx: &Ctx, pieces: &[String], opts: TextOpts) -> io::Result<()> {
        self.stream_text(&ctx.id, &ctx.model, pieces, ctx.prompt_tokens, opts)
    }

    fn tool_call(
        &mut self,
        ctx: &Ctx,
        name: &str,
        args: &ToolArgs,
        preamble: &[String],
        delay: Duration,
    ) -> io::Result<()> {
        self.tool_call_json(ctx, name, &py_json(args), preamble, delay)
    }

    /// A tool call whose argument text is `args_json`, sent as it is.
    fn tool_call_json(
        &mut self,
        ctx: &Ctx,
        name: &str,
        args_json: &str,
        preamble: &[String],
        delay: Duration,
    ) -> io::Result<()> {
        let call_id = format!("call_fake_{}", ctx.seq);
        let call = ToolCall {
            call_id: &call_id,
            name,
            args_json,
        };
        self.stream_tool_call(
            &ctx.id,
            &ctx.model,
            &call,
            ctx.prompt_tokens,
            preamble,
            delay,
        )
    }

    /// `FLAKY<n>`: 500 for the first `n` requests with this user text, then a text answer.
    fn flaky(&mut self, ctx: &Ctx, n_fail: u64) -> io::Result<()> {
        let c = {
            let mut counts = lock(&self.shared.flaky);
            let c = counts.entry(ctx.user_text.clone()).or_insert(0);
            *c += 1;
            *c - 1
        };
        if c < n_fail {
            let msg = format!("fake flaky failure {}/{n_fail}", c + 1);
            return self.send_json(500, &ErrorBody::new(msg, Some("server_error")), &[]);
        }
        let pieces = strings(&["Recovered ", "after ", &format!("{n_fail} "), "failures."]);
        self.text(ctx, &pieces, TextOpts::default())
    }

    /// BASH / TOOL / READ / SLEEPTOOL: a tool call first, a text answer once a result is back.
    fn tool_then_text(&mut self, ctx: &Ctx) -> io::Result<()> {
        if ctx.n_tool == 0 {
            let (name, args) = match ctx.scenario.as_str() {
                "READ" => ("read", ToolArgs::path("hello.txt")),
                "SLEEPTOOL" => ("bash", ToolArgs::command("sleep 3; echo slept")),
                "SHELL" => {
                    let command = ctx
                        .user_text
                        .split_once("COMMAND:")
                        .map_or("", |(_, rest)| rest.lines().next().unwrap_or_default());
                    ("bash", ToolArgs::command(command.trim()))
                }
                _ => ("bash", ToolArgs::command("echo hi-from-bash-tool")),
            };
            let preamble = strings(&["Let me run a tool. "]);
            return self.tool_call(ctx, name, &args, &preamble, CHUNK_DELAY);
        }
        let last_tool = ctx
            .messages
            .iter()
            .rev()
            .find(|m| m.get("role").and_then(Value::as_str) == Some("tool"));
        let out = snippet(&text_of(last_tool.and_then(|m| m.get("content"))), 80);
        let out = if out.is_empty() {
            "(nothing)".into()
        } else {
            out
        };
        let pieces = strings(&["The tool ", "returned: ", &out, "."]);
        self.text(ctx, &pieces, TextOpts::default())
    }

    /// `chunks` text chunks `word<i> `, 0.25 s apart.
    fn slow(&mut self, ctx: &Ctx, chunks: u64) -> io::Result<()> {
        let pieces: Vec<String> = (0..chunks).map(|i| format!("word{i} ")).collect();
        let opts = TextOpts {
            delay: SLOW_DELAY,
            ..TextOpts::default()
        };
        self.text(ctx, &pieces, opts)
    }

    /// CALLS: the `k`-th request after the user message makes the `k`-th `CALL:` line's call.
    fn calls(&mut self, ctx: &Ctx) -> io::Result<()> {
        let calls = match parse_calls(&ctx.user_text) {
            Ok(calls) => calls,
            Err(why) => {
                let pieces = strings(&["CALLS: ", &why, "."]);
                return self.text(ctx, &pieces, TextOpts::default());
            }
        };
        if let Some(call) = calls.get(ctx.n_tool) {
            let args = substitute_refs(&call.args_json, &ctx.messages);
            return self.tool_call_json(ctx, &call.name, &args, &[], CHUNK_DELAY);
        }
        let mut pieces = strings(&["Calls ", "done."]);
        for (i, result) in tool_results_after_user(&ctx.messages).iter().enumerate() {
            pieces.push(format!("\n[{}] {result}", i + 1));
        }
        self.text(ctx, &pieces, TextOpts::default())
    }

    /// BATCH: every `CALL:` line's call in the first answer (one parallel batch), then text.
    fn batch(&mut self, ctx: &Ctx) -> io::Result<()> {
        let calls = match parse_calls(&ctx.user_text) {
            Ok(calls) => calls,
            Err(why) => {
                let pieces = strings(&["BATCH: ", &why, "."]);
                return self.text(ctx, &pieces, TextOpts::default());
            }
        };
        if ctx.n_tool == 0 {
            let args: Vec<String> = calls
                .iter()
                .map(|call| substitute_refs(&call.args_json, &ctx.messages))
                .collect();
            let ids: Vec<String> = (1..=calls.len())
                .map(|i| format!("call_fake_{}_{i}", ctx.seq))
                .collect();
            let batch: Vec<ToolCall<'_>> = calls
                .iter()
                .zip(&args)
                .zip(&ids)
                .map(|((call, args_json), call_id)| ToolCall {
                    call_id,
                    name: &call.name,
                    args_json,
                })
                .collect();
            return self.stream_tool_calls(
                &ctx.id,
                &ctx.model,
                &batch,
                ctx.prompt_tokens,
                &[],
                CHUNK_DELAY,
            );
        }
        let mut pieces = strings(&["Batch ", "done."]);
        for (i, result) in tool_results_after_user(&ctx.messages).iter().enumerate() {
            pieces.push(format!("\n[{}] {result}", i + 1));
        }
        self.text(ctx, &pieces, TextOpts::default())
    }

    /// LOOP: a bash tool call per request until `max` tool results follow the user message.
    fn tool_loop(&mut self, ctx: &Ctx, max: u64) -> io::Result<()> {
        let done = ctx.n_tool as u64;
        if done < max {
            let args = ToolArgs::command(format!("echo loop-{}", done + 1));
            return self.tool_call(ctx, "bash", &args, &[], CHUNK_DELAY);
        }
        let pieces = strings(&["Loop ", "done after ", &format!("{done} tool calls.")]);
        self.text(ctx, &pieces, TextOpts::default())
    }
}

/// What a chat request asked for.
struct Ctx {
    seq: u64,
    /// `chatcmpl-fake-<seq>`.
    id: String,
    model: String,
    prompt_tokens: u64,
    scenario: String,
    user_text: String,
    n_tool: usize,
    messages: Vec<Value>,
}

struct ToolCall<'a> {
    call_id: &'a str,
    name: &'a str,
    /// The arguments' JSON text.
    args_json: &'a str,
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        _ => "Unknown",
    }
}
