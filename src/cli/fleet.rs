//! Fleet commands against a running coordinator (`slate serve`) over its control socket.

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::Value;

use crate::cli::{ExitCode, Printer};
use crate::control::methods::{StatusParams, method};
use crate::control::summary::{FleetSummary, SummaryRow};
use crate::control::table::{Cells, TableRow};
use crate::control::{Client, ClientError, Located, Method, RuntimeDir, Selector, discovery};
use crate::core::{ChildRef, ChildSnapshot, Presence, Status, StatusView};
use crate::text::{SafeText, fit};

/// Read a JSON document from a file, or standard input for `-`.
pub fn read_json(path: &std::path::Path) -> Result<Value, String> {
    let text = if path == std::path::Path::new("-") {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
            .map_err(|e| format!("standard input: {e}"))?;
        text
    } else {
        std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?
    };
    serde_json::from_str(&text).map_err(|e| format!("{}: invalid JSON: {e}", path.display()))
}

/// Parse `UUID@GEN` or `UUID GEN` (exactly; never a prefix or "latest").
pub fn target(words: &[String]) -> Result<ChildRef, String> {
    match words {
        [one] => one
            .parse::<ChildRef>()
            .map_err(|e| format!("target {one:?}: {e}")),
        [id, generation] => format!("{id}@{generation}")
            .parse::<ChildRef>()
            .map_err(|e| format!("target {id:?} {generation:?}: {e}")),
        _ => Err("give the target as UUID@GENERATION or UUID GENERATION".to_owned()),
    }
}

/// Find the selected coordinator, connected; on failure the exit code and the message to show.
pub fn locate(parent: Option<String>) -> Result<Located, (ExitCode, String)> {
    let cwd = std::env::current_dir().map_err(|e| {
        (
            ExitCode::Usage,
            format!("the current directory cannot be read: {e}"),
        )
    })?;
    discovery::locate_connected(&RuntimeDir::from_env(), &Selector::from_env(parent), &cwd).map_err(
        |e| {
            let code = if e.is_unreachable() {
                ExitCode::NoCoordinator
            } else {
                ExitCode::Usage
            };
            (code, e.to_string())
        },
    )
}

/// Connect to the selected coordinator; on failure the exit code and the message to show.
pub async fn try_connect(parent: Option<String>) -> Result<Client, (ExitCode, String)> {
    let located = locate(parent)?;
    Client::connect_located(located)
        .await
        .map_err(|e| (ExitCode::of_client_error(&e).0, e.to_string()))
}

/// Connect to the selected coordinator, or explain how to start one (exit 3).
pub async fn connect(printer: &Printer, parent: Option<String>) -> Result<Client, ExitCode> {
    try_connect(parent).await.map_err(|(code, message)| {
        printer.error_code(code.name(), &SafeText::line(&message).into_string(), None);
        code
    })
}

/// One typed call; a failure is reported (text or the JSON error object) and mapped to its
/// exit code.
pub async fn request<M: Method>(
    printer: &Printer,
    client: &Client,
    params: &M::Params,
) -> Result<M::Result, ExitCode> {
    client
        .request::<M>(params)
        .await
        .map_err(|e| report(printer, &e))
}

/// Prints a failed call (`refused [code]: message`, or the JSON error object) and returns
/// its exit code ([`ExitCode::of_client_error`]).
pub fn report(printer: &Printer, error: &ClientError) -> ExitCode {
    let (exit, code) = ExitCode::of_client_error(error);
    let Some(remote) = error.remote() else {
        printer.error_code(
            code,
            &SafeText::line(&error.to_string()).into_string(),
            None,
        );
        return exit;
    };
    if printer.json() {
        printer.error_code(&remote.code, &remote.message, remote.data.as_ref());
    } else {
        let mut text = format!(
            "refused [{}]: {}",
            remote.code,
            SafeText::lines(&remote.message)
        );
        if let Some(data) = &remote.data {
            let _ = write!(text, "\n{}", SafeText::lines(&data.to_string()));
        }
        printer.error(&text);
    }
    exit
}

/// Run a long-lived command (a coordinator, a view) on a two-thread runtime: workers,
/// the control server and the UI make progress together.
pub fn block_on_multi<F: std::future::Future<Output = ExitCode>>(
    printer: &Printer,
    body: impl FnOnce() -> F,
) -> ExitCode {
    match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt.block_on(body()),
        Err(e) => {
            printer.error(&format!("cannot start the async runtime: {e}"));
            ExitCode::Usage
        }
    }
}

/// Run an async command body on a small runtime.
pub fn block_on(printer: &Printer, body: impl std::future::Future<Output = ExitCode>) -> ExitCode {
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt.block_on(body),
        Err(e) => {
            printer.error(&format!("cannot start the async runtime: {e}"));
            ExitCode::Usage
        }
    }
}

/// A control method with a printed result: its typed result as JSON, or `human(result)`.
pub async fn simple<M: Method>(
    printer: &Printer,
    parent: Option<String>,
    params: M::Params,
    human: impl Fn(&M::Result) -> String,
) -> ExitCode {
    let client = match connect(printer, parent).await {
        Ok(c) => c,
        Err(code) => return code,
    };
    match request::<M>(printer, &client, &params).await {
        Ok(result) => {
            if printer.json() {
                printer.value(&result);
            } else {
                printer.out(&human(&result));
            }
            ExitCode::Ok
        }
        Err(code) => code,
    }
}

/// One snapshot as a line: the fleet table's columns, through the same row writer.
pub fn snapshot_line(snapshot: &ChildSnapshot) -> String {
    let mut out = String::new();
    let row = SummaryRow::of(snapshot);
    let cells = TableRow::of(&row, row.parent_id);
    row_line(&mut out, &cells.cells(), crate::runtime::now_ms());
    out
}

/// The fleet table of summary rows (read-only history, `wait --all`).
pub fn summary_table(parent_id: uuid::Uuid, children: &[SummaryRow<'_>]) -> String {
    let rows: Vec<TableRow<'_>> = children
        .iter()
        .map(|row| TableRow::of(row, parent_id))
        .collect();
    fleet_table(parent_id, &rows)
}

/// The fleet table (`status` without a target), from typed table rows.
pub fn fleet_table(parent_id: uuid::Uuid, rows: &[TableRow<'_>]) -> String {
    let count = |status: Status| rows.iter().filter(|r| r.5 == status).count();
    let mut out = String::with_capacity(160 * (rows.len() + 1));
    let _ = writeln!(
        out,
        "parent {} · {} current generations · running {} · queued {} · settled {} · failed {} · cancelled {} · paused {}",
        parent_id,
        rows.len(),
        count(Status::Running),
        count(Status::Queued),
        count(Status::Settled),
        count(Status::Failed),
        count(Status::Cancelled),
        count(Status::Paused),
    );
    let now = crate::runtime::now_ms();
    for c in tree_order(rows) {
        row_line(&mut out, &c, now);
        out.push_str("  [");
        out.push_str(c.presence.map_or("", Presence::as_str));
        out.push_str("]\n");
    }
    out
}

/// Rows in tree order: each child right under its parent, siblings in admission order.
/// Rows whose parent is not listed (the root's children, or a parent outside the selection)
/// are roots.
fn tree_order<'r>(rows: &'r [TableRow<'_>]) -> Vec<Cells<'r>> {
    let cells = rows.iter().map(TableRow::cells);
    // Every row a child of the root: all roots, as listed.
    if rows.iter().all(|r| r.2.is_none()) {
        return cells.collect();
    }
    let listed: std::collections::HashSet<uuid::Uuid> = rows.iter().map(|r| r.0).collect();
    let mut children: std::collections::HashMap<uuid::Uuid, Vec<Cells<'r>>> =
        std::collections::HashMap::new();
    let mut roots = Vec::new();
    for c in cells {
        match c.parent {
            Some(parent) if listed.contains(&parent) && parent != c.id => {
                children.entry(parent).or_default().push(c);
            }
            _ => roots.push(c),
        }
    }
    let mut out = Vec::with_capacity(rows.len());
    let mut stack: Vec<Cells<'r>> = roots.into_iter().rev().collect();
    while let Some(c) = stack.pop() {
        out.push(c);
        if let Some(kids) = children.remove(&c.id) {
            stack.extend(kids.into_iter().rev());
        }
    }
    out
}

/// One row, without a line end: the same columns as [`snapshot_line`].
fn row_line(out: &mut String, c: &Cells<'_>, now: u64) {
    // Written straight into `out` (no string per cell, no formatting machinery): this runs
    // for every row of the table.
    use crate::text::{push_elapsed, push_u64};
    for _ in 1..c.depth {
        out.push_str("  ");
    }
    out.push_str(
        c.id.hyphenated()
            .encode_lower(&mut uuid::Uuid::encode_buffer()),
    );
    out.push('@');
    push_u64(out, u64::from(c.generation));
    out.push(' ');
    push_padded(out, c.profile.as_str(), 14);
    out.push(' ');
    push_padded(out, c.status.as_str(), 9);
    out.push(' ');
    let start = out.len();
    crate::text::push_line_fit(out, c.assignment, 36);
    let written = crate::text::width(&out[start..]);
    pad_to(out, 36usize.saturating_sub(written));
    out.push_str(" req ");
    match c.requests {
        Some(n) => push_u64(out, u64::from(n)),
        None => out.push('—'),
    }
    out.push_str(" tok ");
    match c.tokens {
        Some(n) => push_u64(out, n),
        None => out.push('—'),
    }
    match c.cost {
        Some(cost) => {
            out.push_str(" $");
            crate::text::push_fixed4(out, cost);
            out.push(' ');
        }
        None => out.push_str(" — "),
    }
    // Admission to disposal, or to now while it lasts, right-aligned in 6 columns.
    let elapsed = c.ended_at.unwrap_or(now).saturating_sub(c.created_at);
    let mut text = String::with_capacity(8);
    push_elapsed(&mut text, elapsed);
    pad_to(out, 6usize.saturating_sub(text.len()));
    out.push_str(&text);
    if c.writer_lease {
        out.push_str(" W");
    }
    out.push_str("  ");
    crate::text::push_line_fit(out, c.activity.unwrap_or_default(), 40);
}

/// An ASCII word (a profile, a status) left-aligned in `columns`, as `{:<columns}` writes it.
fn push_padded(out: &mut String, word: &str, columns: usize) {
    out.push_str(word);
    pad_to(out, columns.saturating_sub(word.len()));
}

fn pad_to(out: &mut String, spaces: usize) {
    out.extend(std::iter::repeat_n(' ', spaces));
}

/// `status` with a target: the snapshot, its generations and presence.
pub fn status_view(view: &StatusView) -> String {
    let mut out = String::new();
    let s = &view.snapshot;
    let _ = writeln!(out, "{}", snapshot_line(s));
    let fields = [
        ("cwd", Some(s.cwd.clone())),
        ("error", s.error.clone()),
        ("result", s.result.clone()),
        ("transcript", s.transcript.clone()),
        ("limitReason", s.limit_reason.map(|r| wire_name(&r))),
        ("pauseReason", s.pause_reason.map(|r| wire_name(&r))),
    ];
    for (key, value) in fields {
        if let Some(value) = value.filter(|v| !v.is_empty()) {
            let _ = writeln!(
                out,
                "  {key}: {}",
                fit(&SafeText::line(&value).into_string(), 200)
            );
        }
    }
    let _ = writeln!(out, "  limits: {}", compact(&s.limits));
    if let Some(a) = &s.artifacts {
        let _ = writeln!(out, "  artifacts: {}", SafeText::line(&compact(a)));
    }
    let _ = writeln!(out, "generations ({}):", view.generations.len());
    for g in &view.generations {
        let _ = writeln!(out, "  {}", snapshot_line(g));
    }
    if let Some(a) = view.agents.iter().find(|a| a.id == s.id) {
        let _ = writeln!(
            out,
            "presence: {} (generation {})",
            a.presence.as_str(),
            a.generation
        );
    }
    out
}

/// A value's compact JSON (for a field shown whole in text output).
fn compact<T: serde::Serialize>(value: &T) -> String {
    crate::json::to_string(value).unwrap_or_default()
}

/// A unit enum's wire name (`"deadline"`), for text output.
fn wire_name<T: serde::Serialize>(value: &T) -> String {
    compact(value).trim_matches('"').to_owned()
}

/// `wait --all`: wait until every current assignment has a drained outcome. Event-driven:
/// the fleet is re-read when the coordinator reports a change, never on a timer.
pub async fn wait_all(printer: &Printer, parent: Option<String>, timeout: Duration) -> ExitCode {
    let client = match connect(printer, parent).await {
        Ok(c) => c,
        Err(code) => return code,
    };
    // Subscribe first so no change between the read and the wait is missed.
    let mut events = match client.subscribe().await {
        Ok(events) => events,
        Err(e) => return report(printer, &e),
    };
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let params = StatusParams {
            summary: true,
            ..StatusParams::default()
        };
        let raw = match client.request_raw::<method::Status>(&params).await {
            Ok(raw) => raw,
            Err(e) => return report(printer, &e),
        };
        let fleet: FleetSummary<'_> = match raw.decode(method::Status::NAME) {
            Ok(fleet) => fleet,
            Err(e) => return report(printer, &e),
        };
        let drained = fleet
            .children
            .iter()
            .all(|c| c.disposed || c.status == Status::Paused);
        if drained {
            return wait_all_summary(printer, &fleet);
        }
        // Sleep until something changes (or the deadline passes).
        match tokio::time::timeout_at(deadline, events.next()).await {
            Ok(Some(_)) => {
                // Coalesce a burst of changes into one re-read.
                while let Ok(Some(_)) =
                    tokio::time::timeout(Duration::from_millis(20), events.next()).await
                {
                }
            }
            Ok(None) => {
                printer.error("wait --all: the coordinator went away");
                return ExitCode::NoCoordinator;
            }
            Err(_) => {
                printer.error("wait --all: timed out before every assignment drained");
                return ExitCode::Refused;
            }
        }
    }
}

/// `wait --all --json`: how the drained fleet ended.
#[derive(Debug, serde::Serialize)]
pub struct WaitAllOutput {
    pub total: usize,
    pub settled: usize,
    pub paused: usize,
    pub failed: usize,
    pub cancelled: usize,
}

fn wait_all_summary(printer: &Printer, fleet: &FleetSummary<'_>) -> ExitCode {
    let count = |status: Status| fleet.children.iter().filter(|c| c.status == status).count();
    if printer.json() {
        printer.value(&WaitAllOutput {
            total: fleet.children.len(),
            settled: count(Status::Settled),
            paused: count(Status::Paused),
            failed: count(Status::Failed),
            cancelled: count(Status::Cancelled),
        });
    } else {
        printer.out(&summary_table(fleet.parent_id, &fleet.children));
    }
    if count(Status::Failed) + count(Status::Cancelled) == 0 {
        ExitCode::Ok
    } else {
        ExitCode::Refused
    }
}
