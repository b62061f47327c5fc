//! One call without an async runtime: `hello` and one typed request written together on a
//! blocking socket, both answers read, the connection closed.
//!
//! For commands that ask one thing and exit (`subagent-status`, `slate status`): a tokio
//! runtime with a reader and a writer task costs more than such a call, and waiting for the
//! `hello` answer before sending the request costs a round trip. The server reads the two
//! lines in order, so the request is served as the connection `hello` just set up; if `hello`
//! is refused, that refusal is the answer (the request is then refused as `hello-required`).
//! The lines are framed and read exactly as [`super::Client`] reads them
//! ([`super::client::ServerLine`]).

use std::io::{self, BufRead as _, Write as _};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use super::client::{ClientError, RawResult, ServerLine};
use super::methods::{self, HelloParams, HelloResult, Method, SUPPORTED_PROTOCOLS};
use super::protocol::{ControlError, MAX_REQUEST_LINE, MAX_SERVER_LINE};

/// Bytes read from the socket at a time (the line cap is separate): every page of this
/// buffer is touched, so it is kept small; a read is cheaper than a fresh page.
const READ_CHUNK: usize = 16 * 1024;
/// Bytes reserved for the request's answer line.
const ANSWER_ROOM: usize = 1024 * 1024;

/// The ids of the two requests of a one-shot connection.
const HELLO_ID: u64 = 1;
const REQUEST_ID: u64 = 2;

/// Says `hello` (as the operator: no capability) and sends one request of method `M` on
/// `stream`, a fresh connection, then returns the request's result as text (a caller reads
/// it into `M::Result` or a narrower, borrowing type). `timeout` bounds writing both lines and
/// waiting for the `hello` answer, as [`super::Client::connect`] bounds its handshake; the
/// request itself then takes as long as it takes.
pub fn call_raw<M: Method>(
    mut stream: UnixStream,
    params: &M::Params,
    timeout: Duration,
) -> Result<RawResult, ClientError> {
    let hello = HelloParams {
        protocols: SUPPORTED_PROTOCOLS.to_vec(),
        client: Some(methods::ClientInfo::named(format!(
            "slate {}",
            env!("CARGO_PKG_VERSION")
        ))),
        capability: None,
    };
    let mut lines = methods::encode_request::<methods::method::Hello>(HELLO_ID, &hello)
        .map_err(|e| ClientError::Protocol(e.to_string()))?;
    let request = methods::encode_request::<M>(REQUEST_ID, params)
        .map_err(|e| ClientError::Protocol(e.to_string()))?;
    let bytes = request.len() - 1;
    if bytes > MAX_REQUEST_LINE {
        return Err(ClientError::Refused(ControlError::request_too_large(
            bytes,
            MAX_REQUEST_LINE,
        )));
    }
    lines.extend_from_slice(&request);
    stream
        .set_write_timeout(Some(timeout))
        .and_then(|()| stream.set_read_timeout(Some(timeout)))
        .map_err(ClientError::Io)?;
    let written = stream.write_all(&lines);
    let mut reader = io::BufReader::with_capacity(READ_CHUNK, stream);
    if let Err(error) = written {
        // A server over its connection limit writes one `busy` line and closes, possibly
        // before our lines went out (then the write fails with a broken pipe): its reason,
        // still readable, beats the write's error.
        return Err(match refusal_after_close(&mut reader, timeout) {
            Some(reason) => ClientError::Remote(reason),
            None => io_error(error, timeout),
        });
    }
    let mut hello_answered = false;
    // An error the server sent without an id (`busy`): the reason if the connection ends.
    let mut connection_error = None;
    loop {
        // The request's answer may be a large one (a 1,000-row status is 166–394 KB).
        let room = if hello_answered {
            ANSWER_ROOM
        } else {
            READ_CHUNK
        };
        // A server that refused the connection (`busy`) closes it with our lines unread,
        // which the kernel reports as a reset after its line: the refusal is the answer.
        let line = match next_line(&mut reader, timeout, room) {
            Ok(line) => line,
            Err(error) => return Err(connection_error.map_or(error, ClientError::Remote)),
        };
        let Some(line) = line else {
            return Err(connection_error.map_or(ClientError::Closed, ClientError::Remote));
        };
        let Some(ServerLine::Response { id, answer }) = ServerLine::read(&line) else {
            // A notification (never subscribed) or a line this build cannot read.
            continue;
        };
        match id {
            Some(HELLO_ID) => {
                let result = answer.map_err(ClientError::Remote)?;
                let raw = result.map_or("null", |r| &line[r]);
                serde_json::from_str::<HelloResult>(raw).map_err(|e| {
                    ClientError::Protocol(format!("{} result: {e}", methods::method::Hello::NAME))
                })?;
                hello_answered = true;
                // From here on the request takes as long as it needs.
                reader
                    .get_ref()
                    .set_read_timeout(None)
                    .map_err(ClientError::Io)?;
            }
            Some(REQUEST_ID) if hello_answered => {
                let result = answer.map_err(ClientError::Remote)?;
                return Ok(RawResult::from_line(line, result));
            }
            // Answered before `hello` was: only a refusal can come first.
            Some(REQUEST_ID) => {
                return Err(answer
                    .err()
                    .map_or(ClientError::Closed, ClientError::Remote));
            }
            Some(_) => {}
            None => {
                if let Err(error) = answer {
                    connection_error = Some(error);
                }
            }
        }
    }
}

/// [`call_raw`], read into the method's own result type.
pub fn call<M: Method>(
    stream: UnixStream,
    params: &M::Params,
    timeout: Duration,
) -> Result<M::Result, ClientError> {
    call_raw::<M>(stream, params, timeout)?.decode::<M::Result>(M::NAME)
}

/// The first error without an id the server sent before it closed (`busy`), if any: what
/// is left to read once writing to the connection failed.
fn refusal_after_close(
    reader: &mut io::BufReader<UnixStream>,
    timeout: Duration,
) -> Option<ControlError> {
    while let Ok(Some(line)) = next_line(reader, timeout, READ_CHUNK) {
        if let Some(ServerLine::Response {
            id: None,
            answer: Err(error),
        }) = ServerLine::read(&line)
        {
            return Some(error);
        }
    }
    None
}

fn io_error(error: io::Error, timeout: Duration) -> ClientError {
    match error.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => ClientError::Timeout(timeout),
        _ => ClientError::Io(error),
    }
}

/// The next line of at most [`MAX_SERVER_LINE`] bytes (without its newline; a trailing `\r`
/// removed); `None` at end of stream. Blank lines and lines that are not UTF-8 are skipped.
/// The line starts with `room` bytes reserved: reserved memory is only paid for (a page
/// fault each 4 KiB, the largest cost of reading a large answer) as it is filled, while
/// growing into it would copy the line at every doubling, into fresh pages each time.
fn next_line(
    reader: &mut io::BufReader<UnixStream>,
    timeout: Duration,
    room: usize,
) -> Result<Option<String>, ClientError> {
    loop {
        let mut line = Vec::with_capacity(room);
        let limit = u64::try_from(MAX_SERVER_LINE + 1).unwrap_or(u64::MAX);
        let read = io::Read::take(&mut *reader, limit)
            .read_until(b'\n', &mut line)
            .map_err(|e| io_error(e, timeout))?;
        if read == 0 {
            return Ok(None);
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        } else if line.len() > MAX_SERVER_LINE {
            return Err(ClientError::Protocol(format!(
                "a line from the coordinator is longer than {MAX_SERVER_LINE} bytes"
            )));
        }
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        if line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
            continue;
        }
        if let Ok(line) = String::from_utf8(line) {
            return Ok(Some(line));
        }
    }
}
