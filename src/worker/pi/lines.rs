//! pi's stdout as bounded lines: a worker's output is untrusted input.
//!
//! Like the control socket's reader (`control::codec`), this never holds more than
//! [`LINE_MAX`] bytes of one line: once a line passes the cap it is reported at once as
//! [`Line::TooLong`] with its first [`HEAD`] bytes, and the rest of it is discarded up to the
//! next newline without being kept, after which reading goes on. 300 MB without a newline cost
//! Slate 300 MB before this (issue 14, item 3); now they cost at most the cap.
//!
//! **The cap.** No record pi 1.6 writes for a Slate worker comes near 16 MiB:
//! - model output is bounded by the model's `maxTokens` (≤ 128k tokens, about 0.5 MB, twice
//!   that JSON-escaped) and streams as small `message_update` deltas;
//! - every builtin tool result is truncated by pi to 50 KB / 2000 lines
//!   (`core/tools/truncate.js`, `DEFAULT_MAX_BYTES`), and `tool_execution_update` carries at
//!   most that much accumulated output;
//! - an image pi reads is resized to at most 4.5 MB of base64 (`utils/image-resize-core.js`),
//!   so one `message_end` of a tool result holding an image stays below 5 MB;
//! - the traces of `shared/pi/traces` have no line over 10 KB.
//!
//! Only pi's run summaries, `turn_end` (a turn's message and tool results) and `agent_end`
//! (every message of the run), repeat a whole turn or run and can pass the cap, e.g. after
//! several images. Slate takes nothing from them (each message already arrived in its own
//! `message_end`), so [`Line::TooLong::summary`] tells the driver that losing one costs
//! nothing; any other over-long line lost a record Slate needs.
//!
//! Hand-rolled for the reasons `control::codec` gives (tokio-util's `LinesCodec` keeps no head
//! of an over-long line and ends the stream on invalid UTF-8), and because a line here is lent
//! out borrowed from the reader's buffer: no copy per record of a chatty worker.

use std::io;

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// The longest stdout line of a pi worker Slate reads, in bytes without the newline (see the
/// module docs for why no legitimate record comes near it).
pub const LINE_MAX: usize = 16 * 1024 * 1024;
/// Bytes of an over-long line kept as evidence.
pub const HEAD: usize = 256;
/// Bytes read from the pipe at a time (the line cap is separate).
const READ_CHUNK: usize = 64 * 1024;
/// A line buffer that grew past this is released after its line, not kept for the next one.
const KEEP_CAPACITY: usize = 1024 * 1024;

/// One line of a worker's stdout.
#[derive(Debug, PartialEq, Eq)]
pub enum Line<'a> {
    /// A complete line, without its `\n` (a final line without one counts too).
    Record(&'a [u8]),
    /// A line passed the cap: its first [`HEAD`] bytes. The rest is being discarded.
    TooLong { head: Vec<u8> },
}

/// Whether the start of an over-long line names one of pi's run summaries (`turn_end`,
/// `agent_end`), whose loss costs Slate nothing. pi writes `type` first
/// (`{"type":"agent_end","messages":[…`).
pub fn summary(head: &[u8]) -> bool {
    let head = head.trim_ascii_start();
    [
        b"{\"type\":\"agent_end\"".as_slice(),
        b"{\"type\":\"turn_end\"".as_slice(),
    ]
    .iter()
    .any(|prefix| head.starts_with(prefix))
}

/// Reads lines of at most `max` bytes (see the module docs).
pub struct BoundedLines<R> {
    inner: BufReader<R>,
    line: Vec<u8>,
    max: usize,
    /// The current line already passed the cap and was reported; drop bytes until `\n`.
    discarding: bool,
    /// `line` holds the line returned last: clear it before reading on.
    returned: bool,
}

impl<R: AsyncRead + Unpin> BoundedLines<R> {
    pub fn new(reader: R, max: usize) -> Self {
        Self {
            inner: BufReader::with_capacity(READ_CHUNK, reader),
            line: Vec::new(),
            max,
            discarding: false,
            returned: false,
        }
    }

    /// Bytes this reader holds on to (its line buffer and its read buffer), for tests.
    pub fn held(&self) -> usize {
        self.line.capacity() + self.inner.buffer().len()
    }

    /// The next line, `Ok(None)` at the end of the stream.
    ///
    /// Cancel-safe: all state lives in `self`, and the only await is `fill_buf`, after which
    /// the buffered bytes are consumed without awaiting again.
    pub async fn next_line(&mut self) -> io::Result<Option<Line<'_>>> {
        if std::mem::take(&mut self.returned) {
            if self.line.capacity() > KEEP_CAPACITY {
                self.line = Vec::new();
            } else {
                self.line.clear();
            }
        }
        loop {
            let available = self.inner.fill_buf().await?;
            if available.is_empty() {
                self.discarding = false;
                if self.line.is_empty() {
                    return Ok(None);
                }
                self.returned = true;
                return Ok(Some(Line::Record(&self.line)));
            }
            let newline = memchr::memchr(b'\n', available);
            let take = newline.unwrap_or(available.len());
            let used = newline.map_or(take, |i| i + 1);
            if self.discarding {
                self.inner.consume(used);
                self.discarding = newline.is_none();
                continue;
            }
            if self.line.len() + take > self.max {
                let mut head = std::mem::take(&mut self.line);
                head.truncate(HEAD);
                let more = HEAD.saturating_sub(head.len()).min(take);
                head.extend_from_slice(&available[..more]);
                self.inner.consume(used);
                self.discarding = newline.is_none();
                return Ok(Some(Line::TooLong { head }));
            }
            self.line.extend_from_slice(&available[..take]);
            self.inner.consume(used);
            if newline.is_some() {
                self.returned = true;
                return Ok(Some(Line::Record(&self.line)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use tokio::io::ReadBuf;

    use super::*;

    /// `len` zero bytes without a newline, then `tail`, handed out in pieces as a pipe does.
    struct Flood {
        left: usize,
        tail: Vec<u8>,
    }

    impl AsyncRead for Flood {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            if self.left > 0 {
                let n = self.left.min(buf.remaining()).min(65_536);
                buf.put_slice(&vec![b'x'; n]);
                self.left -= n;
            } else {
                let n = self.tail.len().min(buf.remaining());
                let rest = self.tail.split_off(n);
                buf.put_slice(&self.tail);
                self.tail = rest;
            }
            Poll::Ready(Ok(()))
        }
    }

    async fn all(reader: &mut BoundedLines<impl AsyncRead + Unpin>) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(line) = reader.next_line().await.unwrap() {
            out.push(match line {
                Line::Record(bytes) => String::from_utf8_lossy(bytes).into_owned(),
                Line::TooLong { head } => format!("too long: {}", head.len()),
            });
        }
        out
    }

    /// Issue 14, item 3: 64 MiB without a newline are never held — the reader keeps at most
    /// its cap plus one read — and the next line reads normally.
    #[tokio::test]
    async fn a_stdout_line_without_a_newline_is_not_read_without_a_cap_3() {
        let max = 1024 * 1024;
        let mut reader = BoundedLines::new(
            Flood {
                left: 64 * 1024 * 1024,
                tail: b"\n{\"type\":\"agent_start\"}\n".to_vec(),
            },
            max,
        );
        let Some(Line::TooLong { head }) = reader.next_line().await.unwrap() else {
            panic!("the over-long line is reported");
        };
        assert_eq!(head, vec![b'x'; HEAD]);
        assert!(reader.held() <= max + READ_CHUNK, "{}", reader.held());
        let mut peak = reader.held();
        let mut rest = Vec::new();
        while let Some(line) = reader.next_line().await.unwrap() {
            if let Line::Record(bytes) = line {
                rest.push(bytes.to_vec());
            }
            peak = peak.max(reader.held());
        }
        assert_eq!(rest, [b"{\"type\":\"agent_start\"}".to_vec()]);
        assert!(peak <= max + READ_CHUNK, "held {peak} bytes");
    }

    #[tokio::test]
    async fn lines_up_to_the_cap_pass_and_a_final_line_without_newline_counts() {
        let text = b"abcd\nabcde\nxyz\n\nlast".to_vec();
        let mut reader = BoundedLines::new(text.as_slice(), 4);
        assert_eq!(
            all(&mut reader).await,
            ["abcd", "too long: 5", "xyz", "", "last"]
        );
    }

    #[tokio::test]
    async fn an_over_long_line_ending_the_stream_ends_it() {
        let text = vec![b'y'; 100];
        let mut reader = BoundedLines::new(text.as_slice(), 10);
        assert_eq!(all(&mut reader).await, ["too long: 100"]);
    }

    #[test]
    fn run_summaries_are_told_from_their_first_bytes() {
        assert!(summary(b"{\"type\":\"agent_end\",\"messages\":["));
        assert!(summary(b" {\"type\":\"turn_end\",\"message\""));
        assert!(!summary(b"{\"type\":\"message_end\",\"message\""));
        assert!(!summary(b"{\"type\":\"agent_endless\""));
        assert!(!summary(b"{\"id\":\"x\",\"type\":\"agent_end\""));
    }
}
