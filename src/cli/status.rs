//! `slate status` / `subagent-status`: the fleet table, or one generation with its history
//! and presence. When the selected coordinator (`--parent ID`) has exited, its event log is
//! read instead and marked as read-only history.

use serde_json::{Value, json};

use crate::cli::fleet::{block_on, call, fleet_table, report, status_view, target, try_connect};
use crate::cli::{ExitCode, Printer};
use crate::control::summary::{FleetSummary, SummaryRow};
use crate::store::event_log::read_history;

pub fn run(printer: &Printer, words: &[String], parent: Option<String>) -> ExitCode {
    let target = if words.is_empty() {
        None
    } else {
        match target(words) {
            Ok(r) => Some(r),
            Err(e) => {
                printer.error(&e);
                return ExitCode::Usage;
            }
        }
    };
    block_on(printer, async move {
        // The human table needs only summary rows; `--json` gets full snapshots.
        let params = target.map_or_else(
            || json!({"summary": !printer.json()}),
            |r| json!({"target": r.to_string()}),
        );
        let client = match try_connect(parent.clone()).await {
            Ok(client) => client,
            Err((ExitCode::NoCoordinator, _)) if parent.is_some() => {
                return from_history(printer, parent.as_deref().unwrap_or_default(), target);
            }
            Err((code, message)) => {
                printer.error(&crate::text::SafeText::line(&message).into_string());
                return code;
            }
        };
        if target.is_some() || printer.json() {
            return match call(printer, &client, "status", params).await {
                Ok(v) if printer.json() => {
                    printer.value(&v);
                    ExitCode::Ok
                }
                Ok(v) => {
                    printer.out(&status_view(&v));
                    ExitCode::Ok
                }
                Err(code) => code,
            };
        }
        // The table reads summary rows straight from the answer's text.
        let raw = match client.call_raw("status", params).await {
            Ok(raw) => raw,
            Err(e) => return report(printer, &e),
        };
        match serde_json::from_str::<FleetSummary<'_>>(raw.get()) {
            Ok(fleet) => {
                printer.out(&fleet_table(&fleet));
                ExitCode::Ok
            }
            Err(e) => {
                printer.error(&format!(
                    "status: the coordinator sent an invalid answer: {e}"
                ));
                ExitCode::Usage
            }
        }
    })
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
    if printer.json() {
        printer.value(&json!({"readOnlyHistory": true, "parentId": parent_id, "eventLog": log, "children": selected, "agents": []}));
    } else {
        let fleet = FleetSummary {
            parent_id,
            children: selected.iter().map(|s| SummaryRow::of(s)).collect(),
            stats: Value::Null,
            policy: Value::Null,
        };
        printer.out(&format!(
            "read-only history of exited coordinator {parent_id} ({})\n{}",
            log.display(),
            fleet_table(&fleet)
        ));
    }
    ExitCode::Ok
}
