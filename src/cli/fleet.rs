//! Fleet commands against a running coordinator (`slate serve`) over its control socket.

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::Value;

use crate::cli::{Error, ExitCode, Printer};
use crate::control::methods::{StatusParams, method};
use crate::control::summary::{FleetSummary, SummaryRow};
use crate::control::table::TableRow;
use crate::control::{Client, DiscoveryError, Located, Method, RuntimeDir, Selector, discovery};
use crate::core::{ChildRef, ChildSnapshot, Status, StatusView};
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
    // Strict: a repeated member name or a byte order mark is refused, not read silently.
    crate::json::strict::from_str(&text)
        .map_err(|e| format!("{}: invalid JSON: {e}", path.display()))
}

/// Parse `UUID@GEN` or `UUID GEN` (exactly; never a prefix or "latest").
pub fn target(words: &[String]) -> Result<ChildRef, String> {
    match words {
        [one] => one.parse::<ChildRef>().map_err(|e| {
            let hint = if looks_like_handle(one) {
                "; a handle is for reading only, give the full UUID@generation \
                 (`slate status` lists them; in pi, Tab completes a handle to one)"
            } else {
                ""
            };
            format!("target {one:?}: {e}{hint}")
        }),
        [id, generation] => format!("{id}@{generation}")
            .parse::<ChildRef>()
            .map_err(|e| format!("target {id:?} {generation:?}: {e}")),
        _ => Err("give the target as UUID@GENERATION or UUID GENERATION".to_owned()),
    }
}

/// `0b6a1f3e` or `0b6a1f3e@2`: the shape of [`ChildRef::handle`].
fn looks_like_handle(word: &str) -> bool {
    let (digits, generation) = word.split_once('@').unwrap_or((word, "1"));
    digits.len() == crate::core::ids::HANDLE_DIGITS
        && digits.bytes().all(|b| b.is_ascii_hexdigit())
        && !generation.is_empty()
        && generation.bytes().all(|b| b.is_ascii_digit())
}

/// Find the selected coordinator, connected.
pub fn locate(parent: Option<String>) -> Result<Located, Error> {
    let cwd = std::env::current_dir()
        .map_err(|e| Error::Environment(format!("the current directory cannot be read: {e}")))?;
    discovery::locate_connected(&RuntimeDir::from_env(), &Selector::from_env(parent), &cwd).map_err(
        |e| match e {
            e if e.is_unreachable() => Error::NoCoordinator(e.to_string()),
            DiscoveryError::InvalidParent(_) => Error::Usage(e.to_string()),
            e => Error::Environment(e.to_string()),
        },
    )
}

/// Connect to the selected coordinator and say `hello`.
pub async fn connect(parent: Option<String>) -> Result<Client, Error> {
    let located = locate(parent)?;
    Ok(Client::connect_located(located).await?)
}

/// Run a long-lived command (a coordinator, a view) on a two-thread runtime: workers,
/// the control server and the UI make progress together.
pub fn block_on_multi<F: std::future::Future<Output = Result<ExitCode, Error>>>(
    body: impl FnOnce() -> F,
) -> Result<ExitCode, Error> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::Environment(format!("cannot start the async runtime: {e}")))?
        .block_on(body())
}

/// Run an async command body on a small runtime.
pub fn block_on<T>(body: impl std::future::Future<Output = Result<T, Error>>) -> Result<T, Error> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Environment(format!("cannot start the async runtime: {e}")))?
        .block_on(body)
}

/// A control method with a printed result: its typed result as JSON, or `human(result)`.
pub async fn simple<M: Method>(
    printer: &Printer,
    parent: Option<String>,
    params: M::Params,
    human: impl Fn(&M::Result) -> String,
) -> Result<ExitCode, Error> {
    let client = connect(parent).await?;
    let result = client.request::<M>(&params).await?;
    if printer.json() {
        printer.value(&result)?;
    } else {
        printer.out(&human(&result))?;
    }
    Ok(ExitCode::Ok)
}

/// One snapshot as a line: the fleet table's columns, through the same row writer.
pub fn snapshot_line(snapshot: &ChildSnapshot) -> String {
    let mut out = String::new();
    let row = SummaryRow::of(snapshot);
    let cells = TableRow::of(&row, row.parent_id);
    crate::control::table::row_line(&mut out, &cells.cells(), crate::runtime::now_ms());
    out
}

/// The fleet table of summary rows (read-only history, `wait --all`).
pub fn summary_table(parent_id: uuid::Uuid, children: &[SummaryRow<'_>]) -> String {
    summary_table_at(parent_id, children, crate::runtime::now_ms())
}

/// [`summary_table`] with unfinished rows counted up to `now` (a stopped coordinator's rows
/// count to when it stopped, not on).
pub fn summary_table_at(parent_id: uuid::Uuid, children: &[SummaryRow<'_>], now: u64) -> String {
    let rows: Vec<TableRow<'_>> = children
        .iter()
        .map(|row| TableRow::of(row, parent_id))
        .collect();
    let mut out = Vec::with_capacity(160 * (rows.len() + 1));
    // Writing into memory cannot fail.
    let _ = crate::control::table::write_fleet_table_at(&mut out, parent_id, &rows, now);
    String::from_utf8(out).unwrap_or_default()
}

/// `status` with a target: the snapshot, its generations and presence.
pub fn status_view(view: &StatusView) -> String {
    let mut out = String::new();
    let s = &view.snapshot;
    let _ = writeln!(out, "{}", snapshot_line(s));
    let fields = [
        ("cwd", Some(s.cwd.clone())),
        ("process", s.telemetry.launch.map(|l| l.words().to_owned())),
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
pub async fn wait_all(
    printer: &Printer,
    parent: Option<String>,
    timeout: Duration,
) -> Result<ExitCode, Error> {
    let client = connect(parent).await?;
    // Subscribe first so no change between the read and the wait is missed.
    let mut events = client.subscribe().await?;
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let params = StatusParams {
            summary: true,
            ..StatusParams::default()
        };
        let raw = client.request_raw::<method::Status>(&params).await?;
        let fleet: FleetSummary<'_> = raw.decode(method::Status::NAME)?;
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
                return Err(Error::NoCoordinator(
                    "wait --all: the coordinator went away".to_owned(),
                ));
            }
            Err(_) => {
                return Err(Error::Failed(
                    "wait --all: timed out before every assignment drained".to_owned(),
                ));
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

fn wait_all_summary(printer: &Printer, fleet: &FleetSummary<'_>) -> Result<ExitCode, Error> {
    let count = |status: Status| fleet.children.iter().filter(|c| c.status == status).count();
    if printer.json() {
        printer.value(&WaitAllOutput {
            total: fleet.children.len(),
            settled: count(Status::Settled),
            paused: count(Status::Paused),
            failed: count(Status::Failed),
            cancelled: count(Status::Cancelled),
        })?;
    } else {
        printer.out(&summary_table(fleet.parent_id, &fleet.children))?;
    }
    if count(Status::Failed) + count(Status::Cancelled) == 0 {
        Ok(ExitCode::Ok)
    } else {
        Ok(ExitCode::Refused)
    }
}
