//! The two ends of `slate mcp`'s stdio under rmcp's transport (rmcp takes any
//! `(AsyncRead, AsyncWrite)` pair): [`Requests`] in front of stdin, [`Answers`] and the one
//! [`write_out`] task in front of stdout, sharing one bounded [`Output`] queue.
//!
//! Why not rmcp's own handling (rmcp 3.11, `transport::async_rw`):
//!
//! * A line that is not JSON is dropped with a debug log and no answer (rust-sdk issue 938:
//!   an answer could start an error storm with a peer that echoes it). JSON-RPC 2.0 asks for
//!   -32700 with id null, and a host debugging its framing needs to see it, so [`Requests`]
//!   answers it itself and never hands the line on. The storm needs a peer that feeds our
//!   answers back as requests; a parse error answer is one line per bad line, never more.
//! * A `tools/call` whose `arguments` is not an object fails rmcp's decoding and lands in its
//!   catch-all request, answered -32601 (method not found); the handler's
//!   `on_custom_request` (src/cli/mcp.rs) gets those and answers -32602 naming the field. A
//!   `null` there decodes as "no arguments" (`Option<JsonObject>`), which the handler cannot
//!   tell from an absent member, so [`Requests`] answers that one.
//! * rmcp reads requests as fast as they come and runs each in its own task, which waits for
//!   the writer: a host that never reads stdout leaves one task per request holding its
//!   answer (690 MB for 16,000 unread `tools/list` answers). Here the two bounds of a control
//!   socket connection (`src/control/connection.rs`) apply: at most [`MAX_IN_FLIGHT`]
//!   requests unanswered (past it no further request is handed to rmcp until one is
//!   answered: back-pressure), and every answer goes into [`Output`] at once, where past
//!   [`MAX_UNREAD_OUTPUT`] bytes the host has not read the session ends: the process's memory
//!   is bounded, not left to the host's patience.
//!
//! Every byte on stdout is written by [`write_out`], a whole line at a time, so an answer
//! from [`Requests`] never lands inside one of rmcp's lines.

use std::collections::{HashSet, VecDeque};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker, ready};

use rmcp::model::{ClientJsonRpcMessage, ClientNotification, JsonRpcMessage, RequestId};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt as _, ReadBuf};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Bytes of output the host may leave unread before the session ends: the control socket's
/// bound for a connection ([`crate::control::protocol::MAX_OUTPUT_BYTES`]). A single larger
/// line is still queued when nothing else waits.
pub const MAX_UNREAD_OUTPUT: usize = crate::control::protocol::MAX_OUTPUT_BYTES;

/// Requests handed to rmcp and not yet answered (nor cancelled by the host), at most: the
/// control socket's `max_in_flight` for one connection, times four, since each long call of
/// a host holds one (and the coordinator takes at most 64 connections and 8 reserved).
pub const MAX_IN_FLIGHT: usize = 256;

/// The longest request line read (rmcp's own cap, which drops a longer line unanswered):
/// [`Requests`] holds at most this much of one line before handing the rest on unread.
const MAX_LINE: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

/// Bytes read from stdin at a time.
const READ_CHUNK: usize = 64 * 1024;

/// JSON-RPC 2.0's codes for a line that is not JSON and for params that do not fit.
pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_PARAMS: i64 = -32602;

/// Whole lines waiting for stdout, bounded in bytes, and the requests not yet answered.
pub struct Output {
    queue: Mutex<Queue>,
    in_flight: Mutex<InFlight>,
    /// Wakes [`write_out`] for a new line or the end.
    wake: Notify,
    /// Fired once, when a line did not fit: the host is not reading.
    overflow: CancellationToken,
    cap: usize,
}

#[derive(Default)]
struct InFlight {
    ids: HashSet<RequestId>,
    /// [`Requests`], waiting for room.
    waiting: Option<Waker>,
}

#[derive(Default)]
struct Queue {
    lines: VecDeque<Vec<u8>>,
    /// Bytes queued and not yet written (a line leaves the count once written).
    unwritten: usize,
    /// No more lines: [`write_out`] ends when the queue is empty.
    closed: bool,
    /// stdout failed (the host closed it): lines are dropped.
    broken: bool,
}

impl Output {
    pub fn new(cap: usize) -> Arc<Self> {
        Arc::new(Self {
            queue: Mutex::new(Queue::default()),
            in_flight: Mutex::new(InFlight::default()),
            wake: Notify::new(),
            overflow: CancellationToken::new(),
            cap,
        })
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues one whole line (escaped, ending in `\n`); `false` when it did not fit, which
    /// ends the session ([`Self::overflowed`]).
    fn push(&self, line: Vec<u8>) -> bool {
        if self.overflow.is_cancelled() {
            return false;
        }
        let mut queue = self.queue();
        if queue.broken || queue.closed {
            return true;
        }
        if queue.unwritten != 0 && queue.unwritten + line.len() > self.cap {
            drop(queue);
            self.overflow.cancel();
            return false;
        }
        queue.unwritten += line.len();
        queue.lines.push_back(line);
        drop(queue);
        self.wake.notify_one();
        true
    }

    /// Queues one JSON-RPC message of this module's own (escaped like every other line).
    fn push_message(&self, message: &Value) -> bool {
        let mut line = Vec::new();
        push_escaped(&mut line, &message.to_string());
        line.push(b'\n');
        self.push(line)
    }

    fn in_flight(&self) -> std::sync::MutexGuard<'_, InFlight> {
        self.in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts request `id` in if there is room; otherwise `waker` is woken when there is.
    fn admit(&self, id: &RequestId, waker: &Waker) -> bool {
        let mut in_flight = self.in_flight();
        if in_flight.ids.len() >= MAX_IN_FLIGHT && !in_flight.ids.contains(id) {
            in_flight.waiting = Some(waker.clone());
            return false;
        }
        in_flight.ids.insert(id.clone());
        true
    }

    /// Request `id` was answered, or the host cancelled it (rmcp then sends no answer).
    fn settled(&self, id: &RequestId) {
        let mut in_flight = self.in_flight();
        if in_flight.ids.remove(id)
            && let Some(waker) = in_flight.waiting.take()
        {
            waker.wake();
        }
    }

    /// Fired when the host left more than the cap unread.
    pub fn overflowed(&self) -> CancellationToken {
        self.overflow.clone()
    }

    /// No more lines; [`write_out`] writes what is queued and ends.
    pub fn close(&self) {
        self.queue().closed = true;
        self.wake.notify_one();
    }
}

/// The one writer of stdout: each queued line whole, in order, flushed when the queue is
/// empty. Ends once [`Output::close`]d and written, or when stdout fails (the lines queued
/// after that are dropped).
pub async fn write_out(output: Arc<Output>, mut stdout: impl AsyncWrite + Unpin) {
    loop {
        let line = {
            let mut queue = output.queue();
            match queue.lines.pop_front() {
                Some(line) => Some(line),
                None if queue.closed => return,
                None => None,
            }
        };
        let Some(line) = line else {
            if stdout.flush().await.is_err() {
                break;
            }
            output.wake.notified().await;
            continue;
        };
        if stdout.write_all(&line).await.is_err() {
            break;
        }
        output.queue().unwritten -= line.len();
    }
    let mut queue = output.queue();
    queue.broken = true;
    queue.lines.clear();
    queue.unwritten = 0;
}

// ---- stdout: rmcp's writer --------------------------------------------------------------

/// The `AsyncWrite` rmcp writes to: each complete line, with every DEL, C1 and bidi control
/// ([`crate::json::needs_escape`] above U+007E) written as `\uXXXX`, goes to [`Output`] at
/// once. The stream is JSON-RPC, whose structure is ASCII, so such a character only ever
/// stands inside a JSON string, where the escape decodes to the same text (C0 controls, the
/// newline that ends each message among them, are left to JSON, which escapes them inside
/// strings itself). Fails once the host left more than the cap unread.
pub struct Answers {
    output: Arc<Output>,
    /// The escaped start of a line not yet ended.
    line: Vec<u8>,
    /// The start of a UTF-8 sequence split across writes.
    partial: Vec<u8>,
}

impl Answers {
    pub fn new(output: Arc<Output>) -> Self {
        Self {
            output,
            line: Vec::new(),
            partial: Vec::new(),
        }
    }

    /// Escapes `bytes` onto `line`, and queues each line it completes.
    fn take(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        escape(&mut self.partial, &mut self.line, bytes);
        while let Some(end) = self.line.iter().position(|b| *b == b'\n') {
            let rest = self.line.split_off(end + 1);
            let line = std::mem::replace(&mut self.line, rest);
            if let Ok(Reply {
                id: Some(id),
                method: None,
            }) = serde_json::from_slice::<Reply>(&line)
            {
                self.output.settled(&id);
            }
            if !self.output.push(line) {
                return Err(not_reading());
            }
        }
        Ok(())
    }
}

/// What an outgoing line says about the requests in flight: an answer has an id and no
/// method.
#[derive(Deserialize)]
struct Reply {
    #[serde(default)]
    id: Option<RequestId>,
    #[serde(default)]
    method: Option<IgnoredAny>,
}

fn not_reading() -> std::io::Error {
    std::io::Error::other(format!(
        "the MCP host left more than {MAX_UNREAD_OUTPUT} bytes of output unread"
    ))
}

impl AsyncWrite for Answers {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        Poll::Ready(this.take(buf).map(|()| buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        if self.output.overflow.is_cancelled() {
            return Poll::Ready(Err(not_reading()));
        }
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.poll_flush(cx)
    }
}

/// Appends `bytes` to `out`, escaped; an incomplete UTF-8 sequence at the end waits in
/// `partial` for the next bytes.
fn escape(partial: &mut Vec<u8>, out: &mut Vec<u8>, bytes: &[u8]) {
    partial.extend_from_slice(bytes);
    let data = std::mem::take(partial);
    let mut rest: &[u8] = &data;
    loop {
        match std::str::from_utf8(rest) {
            Ok(text) => {
                push_escaped(out, text);
                break;
            }
            Err(e) => {
                let (valid, after) = rest.split_at(e.valid_up_to());
                push_escaped(out, std::str::from_utf8(valid).unwrap_or_default());
                // Invalid bytes (serde_json never writes them) are passed through; an
                // incomplete sequence at the end is kept for the next write.
                let Some(n) = e.error_len() else {
                    *partial = after.to_vec();
                    break;
                };
                out.extend_from_slice(&after[..n]);
                rest = &after[n..];
            }
        }
    }
}

fn push_escaped(out: &mut Vec<u8>, text: &str) {
    for c in text.chars() {
        if c > '\u{7e}' && crate::json::needs_escape(c) {
            // Writing to a Vec cannot fail.
            let _ = crate::json::write_u_escape(out, c);
        } else {
            let mut buf = [0_u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        }
    }
}

// ---- stdin: the requests rmcp reads -----------------------------------------------------

/// The `AsyncRead` rmcp reads: stdin's lines, each looked at once. A line that is not JSON
/// is answered -32700 (id null) and a `tools/call` with `"arguments": null` -32602, both
/// through [`Output`], and neither is handed on; every other line goes to rmcp byte for byte,
/// one line per read, a request only while fewer than [`MAX_IN_FLIGHT`] are unanswered.
/// A line longer than rmcp's cap is handed on unread (rmcp drops it).
pub struct Requests<R> {
    inner: R,
    output: Arc<Output>,
    /// The start of the next line.
    line: Vec<u8>,
    /// Lines for rmcp, in order.
    ready: VecDeque<Ready>,
    /// The current line passed [`MAX_LINE`]: its bytes go on unread up to its newline.
    passing: bool,
    chunk: Vec<u8>,
}

/// A line (or a piece of one too long to read) for rmcp.
struct Ready {
    bytes: Vec<u8>,
    /// How much of it rmcp has read.
    at: usize,
    /// What handing it on means for the requests in flight.
    kind: Kind,
}

enum Kind {
    Other,
    /// A request rmcp will answer: it waits for room.
    Request(RequestId),
    /// The host's `notifications/cancelled` for a request: rmcp sends no answer for it.
    Cancels(RequestId),
}

impl<R> Requests<R> {
    pub fn new(inner: R, output: Arc<Output>) -> Self {
        Self {
            inner,
            output,
            line: Vec::new(),
            ready: VecDeque::new(),
            passing: false,
            chunk: vec![0; READ_CHUNK],
        }
    }

    fn hand_on(&mut self, bytes: Vec<u8>, kind: Kind) {
        self.ready.push_back(Ready { bytes, at: 0, kind });
    }

    /// Sorts bytes just read into lines for rmcp and lines answered here.
    fn sort(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            let end = data.iter().position(|b| *b == b'\n');
            let (part, rest) = data.split_at(end.map_or(data.len(), |i| i + 1));
            data = rest;
            if self.passing {
                self.hand_on(part.to_vec(), Kind::Other);
                self.passing = end.is_none();
                continue;
            }
            self.line.extend_from_slice(part);
            if end.is_some() {
                let line = std::mem::take(&mut self.line);
                if let Some(answer) = early_answer(&line) {
                    // A host that does not read gets nothing more: the session is ending.
                    let _ = self.output.push_message(&answer);
                } else {
                    let kind = kind(&line);
                    self.hand_on(line, kind);
                }
            } else if self.line.len() > MAX_LINE {
                let line = std::mem::take(&mut self.line);
                self.hand_on(line, Kind::Other);
                self.passing = true;
            }
        }
    }
}

/// A line as rmcp will read it (its own message type), for the requests in flight.
fn kind(line: &[u8]) -> Kind {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    match serde_json::from_slice::<ClientJsonRpcMessage>(line) {
        Ok(JsonRpcMessage::Request(request)) => Kind::Request(request.id),
        Ok(JsonRpcMessage::Notification(note)) => match note.notification {
            ClientNotification::CancelledNotification(cancelled) => cancelled
                .params
                .request_id
                .map_or(Kind::Other, Kind::Cancels),
            _ => Kind::Other,
        },
        _ => Kind::Other,
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Requests<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        loop {
            if let Some(next) = this.ready.front_mut() {
                match std::mem::replace(&mut next.kind, Kind::Other) {
                    Kind::Request(id) if !this.output.admit(&id, cx.waker()) => {
                        next.kind = Kind::Request(id);
                        return Poll::Pending;
                    }
                    Kind::Cancels(id) => this.output.settled(&id),
                    _ => {}
                }
                let n = buf.remaining().min(next.bytes.len() - next.at);
                buf.put_slice(&next.bytes[next.at..next.at + n]);
                next.at += n;
                if next.at == next.bytes.len() {
                    this.ready.pop_front();
                }
                return Poll::Ready(Ok(()));
            }
            let mut chunk = ReadBuf::new(&mut this.chunk);
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut chunk))?;
            let read = chunk.filled().len();
            if read == 0 {
                // End of file: an unended last line goes on as it is (rmcp drops it).
                if this.line.is_empty() {
                    return Poll::Ready(Ok(()));
                }
                let line = std::mem::take(&mut this.line);
                this.hand_on(line, Kind::Other);
                continue;
            }
            let data = std::mem::take(&mut this.chunk);
            this.sort(&data[..read]);
            this.chunk = data;
        }
    }
}

/// What a line needs to be looked at: JSON syntax throughout, and a `tools/call`'s id and
/// `arguments` (present, even as `null`). Anything else is rmcp's to judge.
#[derive(Deserialize)]
struct Probe {
    #[serde(default)]
    method: Option<Value>,
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    params: Option<Value>,
}

/// The answer to a line rmcp would drop or misread, if it is one.
fn early_answer(line: &[u8]) -> Option<Value> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.trim_ascii().is_empty() {
        return None;
    }
    let probe = match serde_json::from_slice::<Probe>(line) {
        Ok(probe) => probe,
        Err(e) if matches!(e.classify(), serde_json::error::Category::Data) => return None,
        Err(e) => {
            return Some(json!({
                "jsonrpc": "2.0",
                "id": null,
                "error": {"code": PARSE_ERROR, "message": format!("Parse error: the line is not JSON: {e}")},
            }));
        }
    };
    let id = probe.id.filter(|id| id.is_string() || id.is_number())?;
    if probe.method.as_ref().and_then(Value::as_str) != Some("tools/call") {
        return None;
    }
    match probe.params?.as_object()?.get("arguments")? {
        Value::Null => Some(json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": INVALID_PARAMS, "message": arguments_not_an_object("null")},
        })),
        _ => None,
    }
}

/// The -32602 message for a `tools/call` whose `arguments` is `kind` (one for every
/// non-object: this module's `null`, the handler's arrays, strings, numbers and booleans).
pub fn arguments_not_an_object(kind: &str) -> String {
    format!("tools/call: params.arguments must be an object (the tool's input), not {kind}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c1_and_bidi_controls_are_escaped_even_split_across_writes() {
        let message =
            serde_json::json!({"text": "a\u{9b}31mb\u{202e}c\u{7f}d é\n"}).to_string() + "\n";
        let output = Output::new(MAX_UNREAD_OUTPUT);
        let mut answers = Answers::new(Arc::clone(&output));
        for chunk in message.as_bytes().chunks(1) {
            answers.take(chunk).unwrap_or_default();
        }
        let lines: Vec<Vec<u8>> = output.queue().lines.iter().cloned().collect();
        assert_eq!(lines.len(), 1);
        let out = String::from_utf8(lines[0].clone()).unwrap_or_default();
        assert_eq!(out, "{\"text\":\"a\\u009b31mb\\u202ec\\u007fd é\\n\"}\n");
        let back: Value = serde_json::from_str(out.trim_end()).unwrap_or_default();
        assert_eq!(back["text"], "a\u{9b}31mb\u{202e}c\u{7f}d é\n");
    }

    #[test]
    fn a_line_past_the_cap_ends_the_session_but_one_line_always_fits_an_empty_queue() {
        let output = Output::new(10);
        assert!(output.push(vec![b'x'; 64]), "alone, a long line fits");
        assert!(!output.overflowed().is_cancelled());
        assert!(
            !output.push(b"y\n".to_vec()),
            "behind it, nothing more does"
        );
        assert!(output.overflowed().is_cancelled());
        assert_eq!(output.queue().unwritten, 64);
    }

    /// One read of `requests`: `Some(line)` handed on, `None` when it waits for room.
    fn read_one(requests: &mut Requests<&[u8]>) -> Option<String> {
        let mut buf = vec![0_u8; 1024];
        let mut read = ReadBuf::new(&mut buf);
        let mut cx = Context::from_waker(Waker::noop());
        match Pin::new(requests).poll_read(&mut cx, &mut read) {
            Poll::Ready(Ok(())) => Some(String::from_utf8_lossy(read.filled()).into_owned()),
            Poll::Ready(Err(e)) => panic!("{e}"),
            Poll::Pending => None,
        }
    }

    #[test]
    fn past_the_in_flight_bound_no_request_is_handed_on_until_one_is_settled() {
        let mut input = String::new();
        for id in 0..=MAX_IN_FLIGHT {
            input.push_str(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"}).to_string());
            input.push('\n');
        }
        input += "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":3}}\n";
        input += "{\"jsonrpc\":\"2.0\",\"id\":\"last\",\"method\":\"ping\"}\n";
        let output = Output::new(MAX_UNREAD_OUTPUT);
        let mut requests = Requests::new(input.as_bytes(), Arc::clone(&output));
        for id in 0..MAX_IN_FLIGHT {
            let line = read_one(&mut requests).unwrap_or_default();
            assert!(line.contains(&format!("\"id\":{id},")), "{line}");
        }
        assert_eq!(read_one(&mut requests), None, "no room");
        // An answer makes room for one.
        let mut answers = Answers::new(Arc::clone(&output));
        answers
            .take(b"{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{}}\n")
            .unwrap_or_default();
        let line = read_one(&mut requests).unwrap_or_default();
        assert!(line.contains(&format!("\"id\":{MAX_IN_FLIGHT},")), "{line}");
        // A notification takes no room; the host's cancellation frees its request's room
        // (rmcp sends no answer for it).
        let line = read_one(&mut requests).unwrap_or_default();
        assert!(line.contains("notifications/cancelled"), "{line}");
        let line = read_one(&mut requests).unwrap_or_default();
        assert!(line.contains("\"last\""), "{line}");
        assert_eq!(read_one(&mut requests).as_deref(), Some(""), "end of file");
        assert_eq!(output.in_flight().ids.len(), MAX_IN_FLIGHT);
        // Our own notifications settle nothing; an error answer settles its request.
        answers
            .take(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\n")
            .unwrap_or_default();
        assert_eq!(output.in_flight().ids.len(), MAX_IN_FLIGHT);
        answers
            .take(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32602,\"message\":\"x\"}}\n")
            .unwrap_or_default();
        assert_eq!(output.in_flight().ids.len(), MAX_IN_FLIGHT - 1);
    }

    #[test]
    fn only_non_json_lines_and_null_arguments_are_answered_here() {
        let parse = early_answer(b"{not json\n").unwrap_or_default();
        assert_eq!(parse["error"]["code"], PARSE_ERROR);
        assert!(parse["id"].is_null());
        let null = early_answer(
            br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":null}}"#,
        )
        .unwrap_or_default();
        assert_eq!(null["error"]["code"], INVALID_PARAMS);
        assert_eq!(null["id"], 7);
        for line in [
            &br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":[]}}"#[..],
            br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}"#,
            br#"{"jsonrpc":"2.0","method":"tools/call","params":{"arguments":null}}"#,
            br"[1, 2]",
            b"\r\n",
        ] {
            assert!(early_answer(line).is_none(), "{}", String::from_utf8_lossy(line));
        }
    }
}
