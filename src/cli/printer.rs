//! One place that owns stdout and stderr: human text or `--json`. Write failures go back to
//! the command (and from there to the one exit, quiet on a broken pipe).
//!
//! Every JSON document the CLI writes goes through [`write_json`]: compact, one line, serialized
//! straight into a locked, buffered stdout as it is produced (no intermediate tree, no string).

use std::io::{self, IoSlice, Write};

use serde::Serialize;
use serde_json::Value;

use crate::control::client::RawResult;

pub struct Printer {
    json: bool,
}

/// The one error shape of every `--json` command: `{"error": {"code", "message", "data"?}}`.
#[derive(Serialize)]
pub struct ErrorOutput<'a> {
    pub error: ErrorBody<'a>,
}

#[derive(Serialize, schemars::JsonSchema)]
#[schemars(rename = "CliError")]
pub struct ErrorBody<'a> {
    /// Stable: a coordinator rule (`stale-generation`, …) or a CLI code (`usage`,
    /// `invalid-config`, `protocol`, `environment`, `no-coordinator`, `busy`, `failed`).
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

    /// Write text lines to stdout. A failed write (a closed pipe included) is the caller's
    /// to return: [`crate::cli::error::exit`] ends quietly on a closed stdout.
    pub fn out(&self, text: &str) -> io::Result<()> {
        let mut stdout = io::stdout().lock();
        stdout.write_all(text.as_bytes())?;
        stdout.flush()
    }

    /// Lets `write` write text to stdout as it is produced (a large table is never held
    /// whole), then flushes.
    pub fn write_with(
        &self,
        write: impl FnOnce(&mut io::StdoutLock<'static>) -> io::Result<()>,
    ) -> io::Result<()> {
        let mut stdout = io::stdout().lock();
        write(&mut stdout)?;
        stdout.flush()
    }

    /// Serialize `value` as JSON to stdout (see [`write_json`]).
    pub fn value<T: Serialize + ?Sized>(&self, value: &T) -> io::Result<()> {
        write_json(io::stdout().lock(), value)
    }

    /// Writes the result `raw`, a document the coordinator wrote from its own types, as it
    /// is when it needs no escape ([`crate::json::is_safe`]): it is not read and checked
    /// again. Otherwise `read` reads it into this build's types (a mismatch is the error) and
    /// that value is serialized as [`Printer::value`] does, escaped. Used for large answers.
    pub fn raw_result<T: Serialize, E: From<io::Error>>(
        &self,
        raw: &RawResult,
        read: impl FnOnce() -> Result<T, E>,
    ) -> Result<(), E> {
        let text = raw.get();
        if !crate::json::is_safe(text) {
            return Ok(self.value(&read()?)?);
        }
        // Text and newline in one vectored write: stdout's line buffer then finds the
        // newline at once instead of scanning the whole document for one.
        let mut stdout = io::stdout().lock();
        let mut pieces = [IoSlice::new(text.as_bytes()), IoSlice::new(b"\n")];
        let mut pieces = &mut pieces[..];
        while !pieces.is_empty() {
            match stdout.write_vectored(pieces) {
                Ok(0) => return Err(io::Error::from(io::ErrorKind::WriteZero).into()),
                Ok(n) => IoSlice::advance_slices(&mut pieces, n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(stdout.flush()?)
    }

    /// A progress line on stderr (human mode only; callers skip it with `--json`).
    pub fn err_line(&self, text: &str) {
        let mut stderr = io::stderr().lock();
        let _ = writeln!(stderr, "{text}");
    }

    /// The JSON error object on stdout (only [`crate::cli::error::exit`] reports errors).
    pub(super) fn error_json(&self, code: &str, message: &str, data: Option<&Value>) {
        let _ = self.value(&ErrorOutput {
            error: ErrorBody {
                code,
                message,
                data,
            },
        });
    }

    /// `error: TEXT` on stderr (only [`crate::cli::error::exit`] reports errors).
    #[allow(clippy::unused_self, reason = "stderr is the Printer's, like stdout")]
    pub(super) fn error_text(&self, text: &str) {
        let mut stderr = io::stderr().lock();
        let _ = writeln!(stderr, "error: {text}");
    }
}
