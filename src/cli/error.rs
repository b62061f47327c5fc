//! Why a command failed, and the one place that turns a command's result into the process's
//! exit code (ripgrep's `main` → `try_main`): commands return `Result<ExitCode, Error>`, and
//! [`exit`] reports the error (text on stderr, or the one JSON error object on stdout) and
//! picks its documented code (`docs/cli.md`). A closed stdout ends the command quietly.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::io;

use serde_json::Value;

use crate::cli::{ExitCode, Printer};
use crate::control::ClientError;
use crate::core::Refusal;
use crate::policy::Problem;
use crate::text::SafeText;

/// A command's failure; each kind has one exit code and one `--json` code.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad arguments or input (a malformed target, invalid JSON, a flag of another form):
    /// exit 2, `usage`.
    #[error("{0}")]
    Usage(String),
    /// Problems found in a configuration or a request, each naming its file and field:
    /// exit 2, `invalid-config` (exit 1, `failed`, when the policy refused the request).
    #[error("{headline}")]
    Problems {
        headline: String,
        problems: Vec<Problem>,
        refused: bool,
    },
    /// The coordinator's rules refused a request of an embedded run: exit 1, the rule's code.
    #[error("refused [{code}]: {0}", code = .0.code())]
    Refused(Refusal),
    /// A control-socket failure: its code from [`ExitCode::of_client_error`] (a refusal 1,
    /// a request this build got wrong 2, no coordinator 3, busy 4).
    #[error(transparent)]
    Client(#[from] ClientError),
    /// No coordinator serves what was asked (or it went away): exit 3, `no-coordinator`.
    #[error("{0}")]
    NoCoordinator(String),
    /// The coordinator's answer does not fit this build's types: exit 2, `protocol`.
    #[error("{0}")]
    Protocol(String),
    /// Something this process needs is not usable (a terminal, the async runtime, signal
    /// handlers, the runtime directory or socket, pi itself): exit 2, `environment`.
    #[error("{0}")]
    Environment(String),
    /// A failure with no more specific rule (a timeout, a detached foreground call):
    /// exit 1, `failed`.
    #[error("{0}")]
    Failed(String),
    /// Writing the output failed; a closed stdout (`EPIPE`) is not reported.
    #[error("could not write the output: {0}")]
    Output(#[source] io::Error),
}

impl Error {
    /// The exit code and the stable `--json` code of this failure.
    pub fn codes(&self) -> (ExitCode, &str) {
        match self {
            Self::Usage(_) => (ExitCode::Usage, "usage"),
            Self::Problems { refused: false, .. } => (ExitCode::Usage, "invalid-config"),
            Self::Refused(refusal) => (ExitCode::Refused, refusal.code()),
            Self::Client(error) => ExitCode::of_client_error(error),
            Self::NoCoordinator(_) => (ExitCode::NoCoordinator, "no-coordinator"),
            Self::Protocol(_) => (ExitCode::Usage, "protocol"),
            Self::Environment(_) => (ExitCode::Usage, "environment"),
            Self::Problems { refused: true, .. } | Self::Failed(_) | Self::Output(_) => {
                (ExitCode::Refused, "failed")
            }
        }
    }

    /// Problems of an invalid configuration or request (exit 2).
    pub fn problems(headline: impl Into<String>, problems: Vec<Problem>) -> Self {
        Self::Problems {
            headline: headline.into(),
            problems,
            refused: false,
        }
    }

    fn is_closed_stdout(&self) -> bool {
        matches!(self, Self::Output(e) if e.kind() == io::ErrorKind::BrokenPipe)
    }

    /// The structured detail shown as `data` with `--json`.
    fn data(&self) -> Option<Value> {
        match self {
            Self::Problems { problems, .. } if !problems.is_empty() => {
                serde_json::to_value(problems).ok()
            }
            Self::Client(error) => error.remote().and_then(|remote| remote.data.clone()),
            _ => None,
        }
    }

    /// The `--json` message: the coordinator's own words for its errors.
    fn message(&self) -> String {
        match self {
            Self::Client(error) => match error.remote() {
                Some(remote) => remote.message.clone(),
                None => error.to_string(),
            },
            other => other.to_string(),
        }
    }

    /// The text shown after `error: ` on stderr. It may quote untrusted input (a path, an
    /// assignment), shown exactly: every control and bidi character escaped visibly
    /// ([`SafeText::escaped_line`]), nothing removed.
    fn text(&self) -> String {
        match self {
            Self::Problems {
                headline, problems, ..
            } => {
                let count = match problems.len() {
                    0 => return SafeText::escaped_line(headline).into_string(),
                    1 => "1 problem".to_owned(),
                    n => format!("{n} problems"),
                };
                let mut text = format!("{} ({count}):", SafeText::escaped_line(headline));
                for p in problems {
                    let _ = write!(text, "\n  - {}", SafeText::escaped_line(&p.to_string()));
                }
                text
            }
            Self::Client(error) => match error.remote() {
                Some(remote) => {
                    let mut text = format!(
                        "refused [{}]: {}",
                        SafeText::escaped_line(&remote.code),
                        SafeText::escaped_lines(&remote.message)
                    );
                    if let Some(data) = &remote.data {
                        data_text(data, &mut text);
                    }
                    text
                }
                None => SafeText::escaped_line(&error.to_string()).into_string(),
            },
            other => SafeText::escaped_lines(&other.to_string()).into_string(),
        }
    }
}

/// A refusal's `data` as text, after its message: each member of an object on its own line,
/// `  key: value` (a string as it reads, unquoted; anything else as compact JSON), escaped
/// like the message. An array `data` is the list of problems an `invalid-request` message
/// already spells out one per line: it is not repeated.
fn data_text(data: &Value, text: &mut String) {
    let Value::Object(members) = data else {
        return;
    };
    for (key, value) in members {
        let value = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let _ = write!(
            text,
            "\n  {}: {}",
            SafeText::escaped_line(key),
            SafeText::escaped_line(&value)
        );
    }
}

impl From<io::Error> for Error {
    fn from(error: io::Error) -> Self {
        Self::Output(error)
    }
}

/// The one exit of `slate` and `subagent-status`: a command's own code, or its failure
/// reported and mapped to its code. A closed stdout ends quietly with code 0, as the reader
/// that closed it asked for no more (ripgrep does the same).
pub fn exit(printer: &Printer, result: Result<ExitCode, Error>) -> std::process::ExitCode {
    let code = match result {
        Ok(code) => code,
        Err(error) if error.is_closed_stdout() => ExitCode::Ok,
        Err(error) => {
            let (code, name) = error.codes();
            if printer.json() {
                printer.error_json(name, &error.message(), error.data().as_ref());
            } else {
                printer.error_text(&error.text());
            }
            code
        }
    };
    std::process::ExitCode::from(code as u8)
}

/// Parses the process's arguments into `C` (`slate`'s or `subagent-status`'s). `--help` and
/// `--version` print as clap prints them; any other parse failure is a usage error (exit 2):
/// clap's own text on stderr, or, when `--json` is on the command line, the one JSON error
/// object on stdout, like every other `--json` failure.
pub fn parse_args<C: clap::Parser>(
    args: impl IntoIterator<Item = OsString>,
) -> Result<C, std::process::ExitCode> {
    let args: Vec<OsString> = args.into_iter().collect();
    C::try_parse_from(&args).map_err(|error| {
        use clap::error::ErrorKind;
        let informational = matches!(
            error.kind(),
            ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
        );
        if informational || !asks_for_json(&args) {
            error.exit()
        }
        // The same error without clap's styles, so its text is exactly what it says: a
        // quoted argument keeps every byte (the JSON writer escapes controls and bidi),
        // where stripping styles from the styled text would also strip the argument's own
        // escape sequences.
        let plain = C::command()
            .styles(clap::builder::Styles::plain())
            .try_get_matches_from(&args)
            .err()
            .unwrap_or(error);
        let (message, data) = usage_error_parts(&plain);
        Printer::new(true).error_json("usage", &message, data.as_ref());
        std::process::ExitCode::from(ExitCode::Usage as u8)
    })
}

/// Whether `--json` is on the command line, before or after the subcommand: clap did not
/// finish parsing, so the raw words are read. A word after `--` is an operand, never the flag;
/// `--json` given as a flag's value (`--cwd --json`) is read by clap as the flag, as here.
fn asks_for_json(args: &[OsString]) -> bool {
    args.iter()
        .skip(1)
        .take_while(|arg| *arg != "--")
        .any(|arg| arg == "--json")
}

/// A clap error as the JSON error's `message` (clap's own sentence and tips, without the
/// `error: ` label, the usage line and the `--help` hint) and `data` (`{"usage": …}`, the
/// command line clap expected, when it names one).
fn usage_error_parts(error: &clap::Error) -> (String, Option<Value>) {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let usage = match error.get(ContextKind::Usage) {
        Some(ContextValue::StyledStr(usage)) => Some(usage.ansi().to_string()),
        _ => None,
    };
    // Rendered with plain styles (see `parse_args`): the text as it is, nothing stripped.
    let rendered = error.render().ansi().to_string();
    if error.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        // clap's "error" here is the command's whole help (`slate pi`): said in clap's words
        // for a missing subcommand instead, with the help's usage line.
        let usage = rendered
            .lines()
            .find_map(|line| line.strip_prefix("Usage: "))
            .map(str::to_owned);
        // The command's words: those before the first `[OPTIONS]` or `<COMMAND>`.
        let command = usage.as_deref().unwrap_or("").split(' ');
        let command: Vec<&str> = command
            .take_while(|word| !word.starts_with(['[', '<']))
            .collect();
        let command = command.join(" ");
        return (
            format!("'{command}' requires a subcommand but one was not provided"),
            usage.map(|u| usage_data(&u)),
        );
    }
    let mut message = rendered.strip_prefix("error: ").unwrap_or(&rendered);
    // The usage paragraph and the hint follow the sentence: cut at the last usage line.
    let cut = usage
        .as_deref()
        .and_then(|u| message.rfind(u.trim_end()))
        .or_else(|| message.rfind("\n\nFor more information"));
    if let Some(cut) = cut {
        message = &message[..cut];
    }
    (message.trim_end().to_owned(), usage.map(|u| usage_data(&u)))
}

fn usage_data(usage: &str) -> Value {
    let line = usage.trim();
    let line = line.strip_prefix("Usage: ").unwrap_or(line);
    serde_json::json!({ "usage": line })
}

#[cfg(test)]
mod tests {
    use super::{Error, ExitCode};
    use crate::control::{ClientError, ControlError};
    use crate::core::Refusal;

    /// The exit-code table of `docs/cli.md`, row by row.
    #[test]
    fn every_failure_has_its_documented_exit_code_and_json_code() {
        let remote = |code: &str| Error::Client(ClientError::Remote(ControlError::new(code, "m")));
        let unreachable = Error::Client(ClientError::Connect {
            path: "/nowhere".into(),
            source: std::io::ErrorKind::NotFound.into(),
        });
        let problems = |refused| Error::Problems {
            headline: "h".to_owned(),
            problems: Vec::new(),
            refused,
        };
        let cases = [
            (Error::Usage("u".to_owned()), ExitCode::Usage, "usage"),
            (problems(false), ExitCode::Usage, "invalid-config"),
            (problems(true), ExitCode::Refused, "failed"),
            (
                Error::Refused(Refusal::RootSelfMessage),
                ExitCode::Refused,
                "root-self-message",
            ),
            (
                remote("stale-generation"),
                ExitCode::Refused,
                "stale-generation",
            ),
            (
                remote("invalid-request"),
                ExitCode::Usage,
                "invalid-request",
            ),
            (remote("busy"), ExitCode::Busy, "busy"),
            (unreachable, ExitCode::NoCoordinator, "no-coordinator"),
            (
                Error::Client(ClientError::Protocol("p".to_owned())),
                ExitCode::Usage,
                "protocol",
            ),
            (
                Error::NoCoordinator("n".to_owned()),
                ExitCode::NoCoordinator,
                "no-coordinator",
            ),
            (Error::Protocol("p".to_owned()), ExitCode::Usage, "protocol"),
            (
                Error::Environment("e".to_owned()),
                ExitCode::Usage,
                "environment",
            ),
            (Error::Failed("f".to_owned()), ExitCode::Refused, "failed"),
        ];
        for (error, exit, code) in cases {
            assert_eq!(error.codes(), (exit, code), "{error:?}");
        }
        assert!(Error::Output(std::io::ErrorKind::BrokenPipe.into()).is_closed_stdout());
        assert!(!Error::Output(std::io::ErrorKind::Other.into()).is_closed_stdout());
    }
}
