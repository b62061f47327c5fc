//! `slate man`: the manual pages, rendered from the clap definitions by `clap_mangen`, plus the
//! sections clap does not know (exit status, environment, files, examples).
//!
//! `clap_mangen`'s page for `slate` lists every subcommand as a `slate-NAME(1)` page of its own, so
//! `--dir` writes all of them (one per visible subcommand, nested ones as `slate-pi-install.1`),
//! and the bare command prints only the top page to stdout. The exit codes come from
//! [`ExitCode::ALL`], their one home.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use clap::CommandFactory as _;
use roff::{Roff, bold, italic, roman};

use super::{Cli, Error, ExitCode, Printer};

/// Environment variables Slate itself reads (pi's own stay pi's; `docs/cli.md` has the detail).
const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "SLATE_PI",
        "The pi command workers run (one path, or a program and its arguments); else `pi` on PATH.",
    ),
    (
        "SLATE_SOCKET",
        "A coordinator's control socket, chosen over discovery by directory.",
    ),
    (
        "XDG_RUNTIME_DIR",
        "Where control sockets and their metadata live (slate/ below it); else /tmp/slate-UID/.",
    ),
    (
        "XDG_DATA_HOME",
        "Where `slate pi install` writes the embedded pi extension (slate/slate/ below it); else ~/.local/share.",
    ),
    (
        "PI_CODING_AGENT_DIR",
        "pi's agent directory: settings, models, delegation.json and sessions; else ~/.pi/agent.",
    ),
    (
        "NO_COLOR",
        "When set and not empty, terminal output has no colour.",
    ),
];

const FILES: &[(&str, &str)] = &[
    (
        "$XDG_RUNTIME_DIR/slate/PARENT.sock, PARENT.json",
        "A serving coordinator's control socket (0600) and its metadata.",
    ),
    (
        "AGENT_DIR/delegation.json, PROJECT/.pi/delegation.json",
        "Operator and (trusted) project delegation policy: profiles, limits, concurrency.",
    ),
    (
        "SESSION_DIR/delegation/PARENT/events.jsonl",
        "A coordinator's append-only registry events.",
    ),
    (
        "SESSION_DIR/delegation/PARENT/TASK/result.txt, structured.json",
        "A generation's published artifacts (0600), with its transcripts/ beside them.",
    ),
];

const EXAMPLES: &[(&str, &str)] = &[
    (
        "slate demo",
        "The Subagent Hub on a simulated fleet: no pi, no network.",
    ),
    (
        "slate serve & slate delegate --profile scout 'map the tests'",
        "A coordinator for this directory, and one task admitted to it.",
    ),
    ("slate status --json", "The fleet as one JSON document."),
    (
        "slate pi install",
        "Slate's extension in the user's pi: root tools, slash commands and the fleet widget.",
    ),
    (
        "slate man --dir ~/.local/share/man/man1",
        "Every page, `slate.1` and one `slate-NAME.1` per subcommand.",
    ),
];

/// The command as the pages describe it (no `help` subcommand: it has no page).
fn command() -> clap::Command {
    let mut command = Cli::command().disable_help_subcommand(true);
    command.build();
    command
}

/// `slate man [--dir DIR]`.
pub fn run(printer: &Printer, dir: Option<&Path>) -> Result<ExitCode, Error> {
    let Some(dir) = dir else {
        printer.out(&String::from_utf8_lossy(&tidy(&top_page()?)))?;
        return Ok(ExitCode::Ok);
    };
    std::fs::create_dir_all(dir).map_err(|e| {
        Error::Environment(format!(
            "cannot create {}: {e}",
            crate::text::SafeText::line(&dir.display().to_string())
        ))
    })?;
    let mut written = Vec::new();
    write_page(dir, "slate.1", &top_page()?, &mut written)?;
    for sub in command().get_subcommands().filter(|s| !s.is_hide_set()) {
        subcommand_pages(dir, "slate", sub, &mut written)?;
    }
    for path in &written {
        printer.out(&format!(
            "written {}\n",
            crate::text::SafeText::line(&path.display().to_string())
        ))?;
    }
    Ok(ExitCode::Ok)
}

/// One page per subcommand, nested ones named by their whole path (`slate-pi-install.1`), as
/// `clap_mangen`'s `SUBCOMMANDS` section names them.
fn subcommand_pages(
    dir: &Path,
    prefix: &str,
    command: &clap::Command,
    written: &mut Vec<PathBuf>,
) -> Result<(), Error> {
    let name = format!("{prefix}-{}", command.get_name());
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        subcommand_pages(dir, &name, sub, written)?;
    }
    // The built command already carries `slate-pi-install` as its display name, which
    // clap_mangen uses for the page's title and NAME.
    let page = command.clone().disable_help_subcommand(true);
    let mut out = Vec::new();
    dated(clap_mangen::Man::new(page))
        .render(&mut out)
        .map_err(|e| render_error(&e))?;
    write_page(dir, &format!("{name}.1"), &out, written)
}

fn write_page(
    dir: &Path,
    file: &str,
    page: &[u8],
    written: &mut Vec<PathBuf>,
) -> Result<(), Error> {
    let path = dir.join(file);
    let page = tidy(page);
    std::fs::File::create(&path)
        .and_then(|mut f| f.write_all(&page))
        .map_err(|e| {
            Error::Environment(format!(
                "cannot write {}: {e}",
                crate::text::SafeText::line(&path.display().to_string())
            ))
        })?;
    written.push(path);
    Ok(())
}

/// Without blank lines (roff reads one as `.sp`) and without a `.br` right after another:
/// `clap_mangen` puts both around a value list, which `mandoc -T lint` warns about.
fn tidy(page: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(page.len());
    let mut last: &[u8] = b"";
    for line in page.split_inclusive(|&b| b == b'\n') {
        if line == b"\n" || (line == b".br\n" && last == b".br\n") {
            continue;
        }
        out.extend_from_slice(line);
        last = line;
    }
    out
}

fn render_error(e: &std::io::Error) -> Error {
    Error::Environment(format!("cannot render the man page: {e}"))
}

/// The title line's date and source, which `clap_mangen` leaves empty (mandoc then reads the
/// source as the date): `SOURCE_DATE_EPOCH` when a packager sets it, else today (UTC).
fn dated(man: clap_mangen::Man) -> clap_mangen::Man {
    let now = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
        .and_then(|s| jiff::Timestamp::from_second(s).ok())
        .unwrap_or_else(jiff::Timestamp::now);
    man.date(now.strftime("%Y-%m-%d").to_string())
        .source(concat!("slate ", env!("CARGO_PKG_VERSION")))
        .manual("Slate Manual")
}

/// `slate.1`: `clap_mangen`'s sections, then exit status, environment, files and examples, then
/// the version.
fn top_page() -> Result<Vec<u8>, Error> {
    let man = dated(clap_mangen::Man::new(command()));
    let mut out = Vec::new();
    man.render_title(&mut out).map_err(|e| render_error(&e))?;
    man.render_name_section(&mut out)
        .map_err(|e| render_error(&e))?;
    man.render_synopsis_section(&mut out)
        .map_err(|e| render_error(&e))?;
    man.render_description_section(&mut out)
        .map_err(|e| render_error(&e))?;
    man.render_options_section(&mut out)
        .map_err(|e| render_error(&e))?;
    man.render_subcommands_section(&mut out)
        .map_err(|e| render_error(&e))?;
    out.extend(extra_sections().render().into_bytes());
    man.render_version_section(&mut out)
        .map_err(|e| render_error(&e))?;
    Ok(out)
}

fn extra_sections() -> Roff {
    let mut roff = Roff::default();
    roff.control("SH", ["EXIT STATUS"]);
    for code in ExitCode::ALL {
        roff.control("TP", [] as [&str; 0]);
        roff.text([bold((code as u8).to_string())]);
        roff.text([roman(code.meaning())]);
    }
    roff.control("SH", ["ENVIRONMENT"]);
    for (name, meaning) in ENVIRONMENT {
        roff.control("TP", [] as [&str; 0]);
        roff.text([bold(*name)]);
        roff.text([roman(*meaning)]);
    }
    roff.control("SH", ["FILES"]);
    for (path, meaning) in FILES {
        roff.control("TP", [] as [&str; 0]);
        roff.text([italic(*path)]);
        roff.text([roman(*meaning)]);
    }
    roff.control("SH", ["EXAMPLES"]);
    for (line, meaning) in EXAMPLES {
        roff.control("TP", [] as [&str; 0]);
        roff.text([bold(*line)]);
        roff.text([roman(*meaning)]);
    }
    roff
}
