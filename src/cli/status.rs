//! `slate status` / `subagent-status`: the fleet table, or one generation with its history
//! and presence. When the selected coordinator (`--parent ID`) has exited, its event log is
//! read instead and marked as read-only history.

use serde::Serialize;

use crate::cli::fleet::{fleet_table, locate, report, status_view, summary_table, target};
use crate::cli::{ExitCode, Printer};
use crate::control::Method as _;
use crate::control::client::CONNECT_TIMEOUT;
use crate::control::methods::{StatusParams, StatusResult, Target, method};
use crate::control::oneshot;
use crate::control::summary::{FleetSummary, SummaryRow};
use crate::control::table::FleetTable;
use crate::text::SafeText;

/// `status --json` of an exited coordinator: its last summary rows from `events.jsonl`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct HistoryOutput<'a> {
    read_only_history: bool,
    parent_id: uuid::Uuid,
    event_log: &'a std::path::Path,
    children: Vec<SummaryRow<'a>>,
}
use crate::store::event_log::read_history;

/// One call, on the connection discovery made, without an async runtime
/// ([`crate::control::oneshot`]): this command runs once per poll of a script.
pub fn run(printer: &Printer, words: &[String], parent: Option<&str>) -> ExitCode {
    let target = if words.is_empty() {
        None
    } else {
        match target(words) {
            Ok(r) => Some(r),
            Err(e) => {
                printer.error_code("usage", &e, None);
                return ExitCode::Usage;
            }
        }
    };
    let located = match locate(parent.map(str::to_owned)) {
        Ok(located) => located,
        Err((ExitCode::NoCoordinator, _)) if let Some(parent) = parent => {
            return from_history(printer, parent, target);
        }
        Err((code, message)) => {
            printer.error_code(code.name(), &SafeText::line(&message).into_string(), None);
            return code;
        }
    };
    if let Some(r) = target {
        let params = StatusParams {
            target: Some(Target(r)),
            ..StatusParams::default()
        };
        return match oneshot::call::<method::Status>(located.stream, &params, CONNECT_TIMEOUT) {
            Ok(result) if printer.json() => {
                printer.value(&result);
                ExitCode::Ok
            }
            Ok(StatusResult::Generation(view)) => {
                printer.out(&status_view(&view));
                ExitCode::Ok
            }
            Ok(_) => {
                printer.error_code(
                    "protocol",
                    "status: the coordinator answered a target with a fleet",
                    None,
                );
                ExitCode::Usage
            }
            Err(e) => report(printer, &e),
        };
    }
    // `--json` prints the summary answer: its text is read once into typed rows that borrow
    // from it, then written as it is (it is the rows' document). The table reads the table
    // answer, the same rows in a third of the bytes.
    let params = StatusParams {
        target: None,
        summary: printer.json(),
        table: !printer.json(),
    };
    let raw = match oneshot::call_raw::<method::Status>(located.stream, &params, CONNECT_TIMEOUT) {
        Ok(raw) => raw,
        Err(e) => return report(printer, &e),
    };
    if printer.json() {
        return match raw.decode::<FleetSummary<'_>>(method::Status::NAME) {
            Ok(fleet) => {
                printer.value_read_from(raw.get(), &fleet);
                ExitCode::Ok
            }
            Err(e) => report(printer, &e),
        };
    }
    match raw.decode::<FleetTable<'_>>(method::Status::NAME) {
        Ok(table) => {
            printer.out(&fleet_table(table.parent_id, &table.rows));
            ExitCode::Ok
        }
        Err(e) => report(printer, &e),
    }
}

/// The exited coordinator's `events.jsonl`, as read-only history.
fn from_history(
    printer: &Printer,
    parent: &str,
    target: Option<crate::core::ChildRef>,
) -> ExitCode {
    let Ok(parent_id) = parent.parse::<uuid::Uuid>() else {
        printer.error(&format!("--parent {parent:?}: not a full UUID"));
        return ExitCode::Usage;
    };
    let located = std::env::current_dir().ok().and_then(|cwd| {
        let loaded = crate::config::load(&cwd, Some(false)).ok()?;
        let session =
            crate::store::paths::parent_session_dir(None, &loaded.agent_dir, &loaded.cwd).ok()?;
        Some(crate::store::paths::event_log_path(
            &crate::store::paths::delegation_dir(&session, parent_id),
        ))
    });
    let Some(log) = located.filter(|p| p.exists()) else {
        printer.error(&format!(
            "no coordinator {parent_id} is running and no event log of it exists for this directory; start one with `slate serve`"
        ));
        return ExitCode::NoCoordinator;
    };
    let history = match read_history(&log) {
        Ok(h) => h,
        Err(e) => {
            printer.error(&e.to_string());
            return ExitCode::Usage;
        }
    };
    let selected: Vec<&crate::core::ChildSnapshot> = history
        .snapshots
        .iter()
        .filter(|s| target.is_none_or(|r| s.id == r.id))
        .collect();
    if let Some(r) = target
        && !history.snapshots.iter().any(|s| s.child_ref() == r)
    {
        printer.error(&format!(
            "target: no identity {r} in the history of {parent_id}"
        ));
        return ExitCode::Refused;
    }
    let children: Vec<SummaryRow<'_>> = selected.iter().map(|s| SummaryRow::of(s)).collect();
    if printer.json() {
        printer.value(&HistoryOutput {
            read_only_history: true,
            parent_id,
            event_log: &log,
            children,
        });
    } else {
        printer.out(&format!(
            "read-only history of exited coordinator {parent_id} ({})\n{}",
            log.display(),
            summary_table(parent_id, &children)
        ));
    }
    ExitCode::Ok
}
