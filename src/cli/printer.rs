//! One place that owns stdout and stderr: human text or `--json`, quiet on a broken pipe.

use std::io::{self, Write};

use serde::Serialize;

pub struct Printer {
    json: bool,
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

    /// Serialize `value` as pretty JSON to stdout.
    pub fn value<T: Serialize>(&self, value: &T) {
        match crate::json::to_string_pretty(value) {
            Ok(text) => self.out(&format!("{text}\n")),
            Err(e) => self.error(&format!("could not serialize output: {e}")),
        }
    }

    /// A progress line on stderr (human mode only; callers skip it with `--json`).
    pub fn err_line(&self, text: &str) {
        let mut stderr = io::stderr().lock();
        let _ = writeln!(stderr, "{text}");
    }

    /// An error line on stderr (text), or a JSON error object on stdout with `--json`.
    pub fn error(&self, message: &str) {
        if self.json {
            let body = serde_json::json!({ "error": message });
            self.out(&format!(
                "{}\n",
                crate::json::to_string(&body).unwrap_or_default()
            ));
        } else {
            let mut stderr = io::stderr().lock();
            let _ = writeln!(stderr, "error: {message}");
        }
    }
}
