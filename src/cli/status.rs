//! `slate status` / `subagent-status`: the fleet table, or one generation with its history
//! and presence. When the selected coordinator (`--parent ID`) has exited, its event log is
//! read instead and marked as read-only history.

use serde::Serialize;

use std::fmt::Write as _;

use crate::cli::fleet::{locate, status_view, summary_table_at, target};
use crate::cli::{Error, ExitCode, Printer};
use crate::control::Method as _;
use crate::control::client::CONNECT_TIMEOUT;
use crate::control::methods::{StatusParams, StatusResult, Target, method};
use crate::control::oneshot;
use crate::control::summary::{FleetSummary, SummaryRow};
use crate::control::table::FleetText;
use crate::text::SafeText;

/// `status --json` of an exited coordinator: its last summary rows from `events.jsonl`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct HistoryOutput<'a> {
    read_only_history: bool,
    parent_id: uuid::Uuid,
    event_log: &'a std::path::Path,
    /// How it stopped: `{state: "shutDown", at}` or `{state: "died", lastSignOfLife}`.
    coordinator: CoordinatorEnd,
    children: Vec<SummaryRow<'a>>,
}
use crate::store::event_log::{CoordinatorEnd, read_history};

/// One call, on the connection discovery made, without an async runtime
/// ([`crate::control::oneshot`]): this command runs once per poll of a script. `width` fits
/// the fleet table to that many columns ([`crate::control::table::write_fitted_table_at`]).
pub fn run(
    printer: &Printer,
    words: &[String],
    parent: Option<&str>,
    width: Option<u16>,
) -> Result<ExitCode, Error> {
    let target = if words.is_empty() {
        None
    } else {
        Some(target(words).map_err(Error::Usage)?)
    };
    if width.is_some() && (printer.json() || target.is_some()) {
        return Err(Error::Usage(
            "--width: fits the fleet table; it takes neither --json nor a TARGET".to_owned(),
        ));
    }
    let located = match locate(parent.map(str::to_owned)) {
        Ok(located) => located,
        Err(Error::NoCoordinator(_)) if let Some(parent) = parent => {
            return from_history(printer, parent, target, width);
        }
        Err(e) => return Err(e),
    };
    if let Some(r) = target {
        let params = StatusParams {
            target: Some(Target(r)),
            ..StatusParams::default()
        };
        let result = oneshot::call::<method::Status>(located.stream, &params, CONNECT_TIMEOUT)?;
        match result {
            result if printer.json() => printer.value(&result)?,
            StatusResult::Generation(view) => printer.out(&status_view(&view))?,
            _ => {
                return Err(Error::Protocol(
                    "status: the coordinator answered a target with a fleet".to_owned(),
                ));
            }
        }
        return Ok(ExitCode::Ok);
    }
    // `--json` prints the summary answer: the coordinator wrote it from its typed rows, so
    // it is copied out as it is unless it needs an escape (then read into the rows and
    // written escaped). The table is the text
    // answer: the coordinator writes the lines (and keeps them while nothing changes), this
    // command copies them to stdout.
    let params = StatusParams {
        target: None,
        summary: printer.json() || width.is_some(),
        text: !printer.json() && width.is_none(),
        ..StatusParams::default()
    };
    let raw = oneshot::call_raw::<method::Status>(located.stream, &params, CONNECT_TIMEOUT)?;
    if let Some(width) = width {
        let fleet = raw.decode::<FleetSummary<'_>>(method::Status::NAME)?;
        printer.out(&fitted_table(
            fleet.parent_id,
            &fleet.children,
            crate::runtime::now_ms(),
            width,
        ))?;
    } else if printer.json() {
        printer.raw_result(&raw, || {
            raw.decode::<FleetSummary<'_>>(method::Status::NAME)
                .map_err(Error::from)
        })?;
    } else {
        let table = raw.decode::<FleetText<'_>>(method::Status::NAME)?;
        printer.write_with(|out| std::io::Write::write_all(out, table.text.as_bytes()))?;
    }
    Ok(ExitCode::Ok)
}

/// Where the event log of coordinator `parent_id` is for this directory's parent session
/// (`<sessionDir>/delegation/<parent-id>/events.jsonl`), when it exists.
pub(crate) fn history_log(parent_id: uuid::Uuid) -> Option<std::path::PathBuf> {
    let cwd = std::env::current_dir().ok()?;
    let loaded = crate::config::load(&cwd, Some(false)).ok()?;
    let session =
        crate::store::paths::parent_session_dir(None, &loaded.agent_dir, &loaded.cwd).ok()?;
    Some(crate::store::paths::event_log_path(
        &crate::store::paths::delegation_dir(&session, parent_id),
    ))
    .filter(|p| p.exists())
}

/// The fleet table of `children` fitted to `width` columns, without a final newline (the
/// printer adds it).
fn fitted_table(
    parent_id: uuid::Uuid,
    children: &[SummaryRow<'_>],
    now: u64,
    width: u16,
) -> String {
    let rows: Vec<crate::control::table::TableRow<'_>> = children
        .iter()
        .map(|row| crate::control::table::TableRow::of(row, parent_id))
        .collect();
    let mut text = String::with_capacity(usize::from(width) * (rows.len() + 2));
    crate::control::table::write_fitted_table_at(&mut text, parent_id, &rows, now, width.into());
    text.truncate(text.trim_end_matches('\n').len());
    text
}

/// The exited coordinator's `events.jsonl`, as read-only history.
fn from_history(
    printer: &Printer,
    parent: &str,
    target: Option<crate::core::ChildRef>,
    width: Option<u16>,
) -> Result<ExitCode, Error> {
    let parent_id = parent
        .parse::<uuid::Uuid>()
        .map_err(|_| Error::Usage(format!("--parent {parent:?}: not a full UUID")))?;
    let Some(log) = history_log(parent_id) else {
        return Err(Error::NoCoordinator(format!(
            "no coordinator {parent_id} is running and no event log of it exists for this directory; start one with `slate serve`"
        )));
    };
    let history = read_history(&log).map_err(|e| Error::Environment(e.to_string()))?;
    let selected: Vec<&crate::core::ChildSnapshot> = history
        .snapshots
        .iter()
        .filter(|s| target.is_none_or(|r| s.id == r.id))
        .collect();
    if let Some(r) = target
        && !history.snapshots.iter().any(|s| s.child_ref() == r)
    {
        return Err(Error::Failed(format!(
            "target: no identity {r} in the history of {parent_id}"
        )));
    }
    let children: Vec<SummaryRow<'_>> = selected.iter().map(|s| SummaryRow::of(s)).collect();
    let end = history.end();
    if printer.json() {
        printer.value(&HistoryOutput {
            read_only_history: true,
            parent_id,
            event_log: &log,
            coordinator: end,
            children,
        })?;
    } else {
        let unfinished = children.iter().filter(|r| !r.status.is_terminal()).count();
        let mut text = format!(
            "{}\nread-only history ({})\n",
            end.describe(parent_id),
            SafeText::line(&log.display().to_string())
        );
        if unfinished > 0 {
            let _ = writeln!(
                text,
                "{unfinished} generation(s) had not finished when it stopped: their status is \
                 the last one it recorded, their elapsed time counts to when it stopped"
            );
        }
        match width {
            Some(width) => text.push_str(&fitted_table(parent_id, &children, end.at(), width)),
            None => text.push_str(&summary_table_at(parent_id, &children, end.at())),
        }
        printer.out(&text)?;
    }
    Ok(ExitCode::Ok)
}
