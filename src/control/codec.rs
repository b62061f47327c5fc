//! Newline-delimited framing with a size cap.
//!
//! The reader never holds more than `max` bytes of one line: once a line passes the cap it is
//! reported as `line-too-long` at once and the rest of it is discarded up to the next newline,
//! after which reading goes on normally. A line that is not UTF-8 is a `parse-error`. Both are
//! errors of that one line; the stream stays usable.
//!
//! Hand-rolled on purpose: `tokio_util::codec::LinesCodec::new_with_max_length` also caps a
//! line, but it reports only "max line length exceeded" after the fact, keeps no head of the
//! line (so the refusal could not carry the request's `"id"`), and maps invalid UTF-8 to an
//! error that ends the stream instead of refusing that one line.

use std::io;

use serde::Serialize;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};
use tokio::sync::mpsc;

use super::protocol::{ControlError, RequestId};

/// Bytes read from the socket at a time (the line cap is separate).
const READ_CHUNK: usize = 16 * 1024;
/// Bytes collected before a write when several messages are queued at once.
const WRITE_BUFFER: usize = 64 * 1024;
/// Bytes of a too-long line kept to find its leading `"id"`.
const HEAD: usize = 256;

/// Reads lines of at most `max` bytes (not counting the newline).
pub struct LineReader<R> {
    inner: BufReader<R>,
    line: Vec<u8>,
    max: usize,
    /// The current line already passed the cap and was reported; drop bytes until `\n`.
    discarding: bool,
    /// The id read from the start of the last line refused as too long.
    refused_id: Option<RequestId>,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    pub fn new(reader: R, max: usize) -> Self {
        Self {
            inner: BufReader::with_capacity(READ_CHUNK, reader),
            line: Vec::new(),
            max,
            discarding: false,
            refused_id: None,
        }
    }

    /// The reader underneath (e.g. to ask the socket whether its peer is gone).
    pub fn get_ref(&self) -> &R {
        self.inner.get_ref()
    }

    /// The request id found at the start of the line last refused as `line-too-long`, if
    /// it began `{"id": <integer or plain string>` (our clients write `id` first), so the
    /// refusal can be answered to that request.
    pub fn take_refused_id(&mut self) -> Option<RequestId> {
        self.refused_id.take()
    }

    /// The next line: `Ok(None)` at end of stream, `Ok(Some(Err(_)))` for a line that was
    /// refused (too long, not UTF-8). A final line without a newline still counts. Lines that
    /// are empty or hold only spaces, tabs and `\r` are skipped. One trailing `\r` is removed.
    ///
    /// Cancel-safe: all state lives in `self`, and the only await is `fill_buf`, after which
    /// the buffered bytes are consumed without awaiting again.
    pub async fn next_line(&mut self) -> io::Result<Option<Result<String, ControlError>>> {
        loop {
            let available = self.inner.fill_buf().await?;
            if available.is_empty() {
                // End of stream: a pending unterminated line is the last one.
                if self.discarding {
                    self.discarding = false;
                    continue;
                }
                if self.line.is_empty() {
                    return Ok(None);
                }
                let line = std::mem::take(&mut self.line);
                match finish(line) {
                    Some(done) => return Ok(Some(done)),
                    None => continue,
                }
            }
            let newline = memchr::memchr(b'\n', available);
            let take = newline.unwrap_or(available.len());
            let mut report_too_long = false;
            if !self.discarding {
                if self.line.len() + take > self.max {
                    let mut head = std::mem::take(&mut self.line);
                    head.truncate(HEAD);
                    let more = HEAD.saturating_sub(head.len()).min(take);
                    head.extend_from_slice(&available[..more]);
                    self.refused_id = leading_id(&head);
                    report_too_long = true;
                    // Without the newline in sight, the rest of the line still has to go.
                    self.discarding = newline.is_none();
                } else {
                    self.line.extend_from_slice(&available[..take]);
                }
            }
            let line_complete = newline.is_some();
            self.inner.consume(newline.map_or(take, |i| i + 1));
            if report_too_long {
                return Ok(Some(Err(ControlError::line_too_long(self.max))));
            }
            if line_complete {
                if self.discarding {
                    // The tail of a line reported earlier.
                    self.discarding = false;
                    continue;
                }
                let line = std::mem::take(&mut self.line);
                if let Some(done) = finish(line) {
                    return Ok(Some(done));
                }
            }
        }
    }
}

/// The `id` of a request line from its first bytes: `{"id": 12,` or `{"id": "abc",` (any
/// whitespace between the tokens). A string with escapes, or cut off, is not read.
pub fn leading_id(head: &[u8]) -> Option<RequestId> {
    fn skip_ws(s: &[u8]) -> &[u8] {
        let n = s.iter().take_while(|b| b.is_ascii_whitespace()).count();
        &s[n..]
    }
    let rest = skip_ws(head).strip_prefix(b"{")?;
    let rest = skip_ws(rest).strip_prefix(b"\"id\"")?;
    let rest = skip_ws(skip_ws(rest).strip_prefix(b":")?);
    if let Some(text) = rest.strip_prefix(b"\"") {
        let end = text
            .iter()
            .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
        if text[end] != b'"' {
            return None;
        }
        return std::str::from_utf8(&text[..end])
            .ok()
            .map(|s| RequestId::Text(s.to_owned()));
    }
    let sign = usize::from(rest.first() == Some(&b'-'));
    let digits = rest[sign..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    let after = skip_ws(&rest[sign + digits..]);
    if digits == 0 || !matches!(after.first(), Some(b',' | b'}')) {
        return None;
    }
    let number = std::str::from_utf8(&rest[..sign + digits]).ok()?;
    let number = if sign == 1 {
        serde_json::Number::from(number.parse::<i64>().ok()?)
    } else {
        serde_json::Number::from(number.parse::<u64>().ok()?)
    };
    Some(RequestId::Number(number))
}

/// Turns one complete line into text; `None` for a blank line.
fn finish(mut line: Vec<u8>) -> Option<Result<String, ControlError>> {
    if line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
        return None;
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Some(String::from_utf8(line).map_err(|e| {
        ControlError::parse_error(&format!(
            "line: not valid UTF-8 (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ))
    }))
}

/// Serializes one message as one line (`serde_json` escapes every newline inside strings).
pub fn encode_line<T: Serialize>(message: &T) -> Result<Vec<u8>, serde_json::Error> {
    let mut bytes = crate::json::to_vec(message)?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// One line for a connection's writer: bytes of its own, or a result text kept to answer
/// again (`head`, then the shared text, then `}` and the newline), which is then never copied
/// into a line of its own.
#[derive(Clone, Debug)]
pub enum Line {
    Owned(Vec<u8>),
    Shared {
        head: Vec<u8>,
        body: std::sync::Arc<serde_json::value::RawValue>,
    },
}

impl Line {
    /// The end of a [`Line::Shared`].
    const SHARED_TAIL: &'static [u8] = b"}\n";

    /// Bytes on the wire, newline included.
    pub fn len(&self) -> usize {
        match self {
            Self::Owned(line) => line.len(),
            Self::Shared { head, body } => head.len() + body.get().len() + Self::SHARED_TAIL.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The line's pieces, in order.
    pub fn pieces(&self) -> [&[u8]; 3] {
        match self {
            Self::Owned(line) => [line, &[], &[]],
            Self::Shared { head, body } => [head, body.get().as_bytes(), Self::SHARED_TAIL],
        }
    }
}

/// Writes whole lines through a buffer: `queue` several, then `flush` once.
pub struct LineWriter<W: AsyncWrite> {
    inner: BufWriter<W>,
}

impl<W: AsyncWrite + Unpin> LineWriter<W> {
    pub fn new(writer: W) -> Self {
        Self {
            inner: BufWriter::with_capacity(WRITE_BUFFER, writer),
        }
    }

    /// Buffers a line produced by [`encode_line`] (written out when the buffer fills).
    pub async fn queue(&mut self, line: &[u8]) -> io::Result<()> {
        self.inner.write_all(line).await
    }

    /// [`LineWriter::queue`] for a [`Line`], piece by piece.
    pub async fn queue_line(&mut self, line: &Line) -> io::Result<()> {
        for piece in line.pieces() {
            if !piece.is_empty() {
                self.inner.write_all(piece).await?;
            }
        }
        Ok(())
    }

    pub async fn flush(&mut self) -> io::Result<()> {
        self.inner.flush().await
    }

    /// Serializes one message and writes it out at once.
    pub async fn send<T: Serialize>(&mut self, message: &T) -> io::Result<()> {
        let line = encode_line(message).map_err(io::Error::other)?;
        self.queue(&line).await?;
        self.flush().await
    }

    /// Flushes, then closes the write direction (the peer reads end of stream).
    pub async fn shutdown(&mut self) -> io::Result<()> {
        self.inner.shutdown().await
    }
}

/// A connection's only writer: whole lines come in through `lines` (so a cancelled sender can
/// never leave half a line behind), whatever is queued is written together and flushed once.
/// Ends on a write error, or when every sender is gone (then the write side is shut down).
pub async fn write_lines<W: AsyncWrite + Unpin>(writer: W, mut lines: mpsc::Receiver<Vec<u8>>) {
    let mut writer = LineWriter::new(writer);
    while let Some(line) = lines.recv().await {
        if writer.queue(&line).await.is_err() {
            return;
        }
        while let Ok(more) = lines.try_recv() {
            if writer.queue(&more).await.is_err() {
                return;
            }
        }
        if writer.flush().await.is_err() {
            return;
        }
    }
    let _ = writer.shutdown().await;
}
