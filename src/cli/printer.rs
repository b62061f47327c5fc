//! One place that owns stdout and stderr: human text or `--json`, quiet on a broken pipe.
//!
//! Every JSON document the CLI writes goes through [`write_json`]: compact, one line, serialized
//! straight into a locked, buffered stdout as it is produced (no intermediate tree, no string).

use std::io::{self, Write};

use serde::Serialize;
use serde_json::Value;

pub struct Printer {
    json: bool,
}

/// The one error shape of every `--json` command: `{"error": {"code", "message", "data"?}}`.
#[derive(Serialize)]
pub struct ErrorOutput<'a> {
    pub error: ErrorBody<'a>,
}

#[derive(Serialize)]
pub struct ErrorBody<'a> {
    /// Stable: a coordinator rule (`stale-generation`, …) or a CLI code (`usage`,
    /// `no-coordinator`, `busy`, `invalid-config`, `failed`).
    pub code: &'a str,
    pub message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<&'a Value>,
}

/// Serializes `value` as one line of compact JSON into `out`. The single JSON writer of the CLI.
pub fn write_json<W: Write, T: Serialize + ?Sized>(out: W, value: &T) -> io::Result<()> {
    let mut out = io::BufWriter::with_capacity(64 * 1024, out);
    crate::json::to_writer(&mut out, value)?;
    out.write_all(b"\n")?;
    out.flush()
}

impl Printer {
    pub fn new(json: bool) -> Self {
        Self { json }
    }

    pub fn json(&self) -> bool {
        self.json
    }

    /// Write text lines to stdout. A closed pipe ends output quietly.
    pub fn out(&self, text: &str) {
        let mut stdout = io::stdout().lock();
        let _ = stdout.write_all(text.as_bytes());
        let _ = stdout.flush();
    }

    /// Serialize `value` as JSON to stdout (see [`write_json`]). A closed pipe ends output
    /// quietly; a value that cannot be serialized is reported as an error.
    pub fn value<T: Serialize + ?Sized>(&self, value: &T) {
        if let Err(e) = write_json(io::stdout().lock(), value)
            && e.kind() != io::ErrorKind::BrokenPipe
        {
            self.error(&format!("could not write the output: {e}"));
        }
    }

    /// Writes `value`, which was just read from the compact JSON `text` by this build's own
    /// types (so the text is that value's document): the text as it is when it needs no
    /// escape ([`crate::json::is_safe`]), else `value` serialized as [`Printer::value`] does.
    /// Used for large answers, which are then not written twice.
    pub fn value_read_from<T: Serialize + ?Sized>(&self, text: &str, value: &T) {
        if !crate::json::is_safe(text) || text.contains('\n') {
            return self.value(value);
        }
        let mut stdout = io::stdout().lock();
        let written = stdout
            .write_all(text.as_bytes())
            .and_then(|()| stdout.write_all(b"\n"))
            .and_then(|()| stdout.flush());
        if let Err(e) = written
            && e.kind() != io::ErrorKind::BrokenPipe
        {
            self.error(&format!("could not write the output: {e}"));
        }
    }

    /// A progress line on stderr (human mode only; callers skip it with `--json`).
    pub fn err_line(&self, text: &str) {
        let mut stderr = io::stderr().lock();
        let _ = writeln!(stderr, "{text}");
    }

    /// An error line on stderr (text), or the JSON error object on stdout with `--json`, with
    /// the generic code `failed`.
    pub fn error(&self, message: &str) {
        self.error_code("failed", message, None);
    }

    /// An error with its stable code (and structured detail, shown with `--json`).
    pub fn error_code(&self, code: &str, message: &str, data: Option<&Value>) {
        if self.json {
            self.value(&ErrorOutput {
                error: ErrorBody {
                    code,
                    message,
                    data,
                },
            });
        } else {
            let mut stderr = io::stderr().lock();
            let _ = writeln!(stderr, "error: {message}");
        }
    }
}
