//! `slate watch --lines`: the fleet widget for a host that draws it itself (pi's widget above
//! its editor, a component whose `render(width)` runs every frame), with no terminal.
//!
//! One JSON line `{"width": N, "lines": ["…", …]}` on stdout each time the widget's rows
//! change: the same rows from the same renderer as `slate watch` ([`styled_lines`]: the
//! inline widget's [`FleetView`](crate::ui::fleet::FleetView) rendered into a buffer and read
//! back with its colours as SGR), each line at most `width` display columns, `{"lines": []}`
//! while the registry is empty. The host asks for its size on stdin, one JSON line
//! `{"width": N}` or `{"width": N, "rows": R}` (the terminal's height, which bounds the rows:
//! a third of it, 3 to 12); each request is answered at once with a document at that size
//! (even if it equals the last one), and later documents keep that size. `--width` is the
//! size before the first request. A stdin line that is not a request ends the command with a
//! usage error; the end of stdin changes nothing.
//!
//! The first document is written at once; after that nothing is written while nothing
//! changes: a notification that leaves the rows as they were writes nothing, and the 1 s tick
//! (which moves a running row's elapsed time) runs only while a shown row is still counting,
//! one second after the last document. The command ends with exit 0 when the coordinator
//! shuts down or its connection closes, and quietly when stdout is closed.
//!
//! A coordinator that stops answering without shutting down (killed, crashed) is not shown
//! as alive: the last document then starts with a line saying it died and since when, its
//! rows are the last known ones with their elapsed time stopped at that moment, and the
//! document carries `"coordinator": {"state": "died", "lastSignOfLife": MS}` (the host keeps
//! it shown). With `--parent ID` of a coordinator that is already gone, that document is
//! made from its event log and is the only one.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::cli::fleet::{block_on, connect};
use crate::cli::watch::{Applied, apply, read_fleet};
use crate::cli::{Error, ExitCode, Printer};
use crate::store::event_log::{CoordinatorEnd, read_history};
use crate::text::SafeText;
use crate::ui::fleet::{Fleet, FleetView, styled_lines};

/// At most this many rows (as the inline viewport).
pub const MAX_ROWS: u16 = 12;
/// At least this many rows when the host's height is small.
pub const MIN_ROWS: u16 = 3;
/// `--width` when not given.
pub const DEFAULT_WIDTH: u16 = 100;
/// The widest request accepted.
pub const MAX_WIDTH: u16 = 1000;

/// The rows for a host `rows` lines high: a third of it, [`MIN_ROWS`] to [`MAX_ROWS`].
pub fn row_budget(rows: Option<u16>) -> u16 {
    rows.map_or(MAX_ROWS, |r| (r / 3).clamp(MIN_ROWS, MAX_ROWS))
}

/// One stdin line: the host's size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SizeRequest {
    pub width: u16,
    #[serde(default)]
    pub rows: Option<u16>,
}

impl SizeRequest {
    /// Reads one request line; the error says what a request is.
    pub fn parse(line: &str) -> Result<Self, String> {
        let request: Self = serde_json::from_str(line).map_err(|e| {
            format!(
                "slate watch --lines: a stdin line must be {{\"width\": 1..{MAX_WIDTH}}} \
                 (optionally with \"rows\"): {e}"
            )
        })?;
        if request.width == 0 || request.width > MAX_WIDTH {
            return Err(format!(
                "slate watch --lines: width {} is not within 1..{MAX_WIDTH}",
                request.width
            ));
        }
        Ok(request)
    }
}

/// One document of the stream.
#[derive(Debug, Serialize)]
pub struct WidgetLines<'a> {
    /// The display columns every line fits.
    pub width: u16,
    pub lines: &'a [String],
    /// Set on the last document when the coordinator is gone: how it stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coordinator: Option<CoordinatorEnd>,
}

/// The widget of a coordinator that is gone: a first line saying so, then its last known
/// rows with elapsed times frozen at [`CoordinatorEnd::at`].
pub fn gone_lines(fleet: &Fleet, end: CoordinatorEnd, width: u16, rows: u16) -> Vec<String> {
    let at = crate::store::session::iso_timestamp(end.at());
    let clock = at.get(11..19).unwrap_or(&at);
    let banner = match end {
        CoordinatorEnd::Died { .. } => {
            format!("⚠ coordinator died · no answer since {clock} UTC · last known states")
        }
        CoordinatorEnd::ShutDown { .. } => {
            format!("coordinator shut down at {clock} UTC · final states")
        }
    };
    let banner = crate::text::fit(&banner, usize::from(width));
    let mut lines = vec![if crate::ui::theme::colour() {
        format!("\x1b[33m{banner}\x1b[0m")
    } else {
        banner
    }];
    lines.extend(styled_lines(
        fleet,
        end.at(),
        width,
        rows.saturating_sub(1).max(1),
    ));
    lines
}

fn print_gone(
    printer: &Printer,
    fleet: &Fleet,
    end: CoordinatorEnd,
    size: SizeRequest,
) -> Result<ExitCode, Error> {
    let lines = gone_lines(fleet, end, size.width, row_budget(size.rows));
    printer.value(&WidgetLines {
        width: size.width,
        lines: &lines,
        coordinator: Some(end),
    })?;
    Ok(ExitCode::Ok)
}

/// `--parent ID` of a coordinator that no longer answers: one document from its event log.
fn from_history(
    printer: &Printer,
    parent: &str,
    width: u16,
    why: String,
) -> Result<ExitCode, Error> {
    let log = parent
        .parse::<uuid::Uuid>()
        .ok()
        .and_then(crate::cli::status::history_log)
        .ok_or(Error::NoCoordinator(why))?;
    let history = read_history(&log).map_err(|e| Error::Environment(e.to_string()))?;
    let mut fleet = Fleet::new();
    fleet.replace(history.snapshots.clone());
    print_gone(
        printer,
        &fleet,
        history.end(),
        SizeRequest { width, rows: None },
    )
}

/// The host's size requests, read on a thread (stdin blocks); the channel closes at the end
/// of stdin.
fn size_requests() -> tokio::sync::mpsc::UnboundedReceiver<Result<SizeRequest, String>> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        use std::io::BufRead as _;
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if line.trim().is_empty() {
                continue;
            }
            if tx.send(SizeRequest::parse(&line)).is_err() {
                break;
            }
        }
    });
    rx
}

/// `slate watch --lines`.
#[allow(clippy::too_many_lines, reason = "one loop owns the state")]
pub fn run(printer: &Printer, parent: Option<String>, width: u16) -> Result<ExitCode, Error> {
    block_on(async move {
        let client = match connect(parent.clone()).await {
            Ok(client) => client,
            Err(Error::NoCoordinator(why)) if let Some(parent) = &parent => {
                return from_history(printer, parent, width, why);
            }
            Err(e) => return Err(e),
        };
        let unreachable = |e: String| Error::NoCoordinator(e);
        // Subscribed before the first read, so no change in between is missed.
        let mut events = client
            .subscribe()
            .await
            .map_err(|e| unreachable(SafeText::line(&e.to_string()).into_string()))?;
        let mut fleet = Fleet::new();
        fleet.replace(read_fleet(&client).await.map_err(unreachable)?);
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut requests = size_requests();
        let mut reading = true;
        let mut size = SizeRequest { width, rows: None };
        let mut shown: Option<Vec<String>> = None;
        // A request is answered even when its document equals the last one.
        let mut asked = false;
        loop {
            let now = crate::runtime::now_ms();
            let rows = row_budget(size.rows);
            let lines = styled_lines(&fleet, now, size.width, rows);
            if asked || shown.as_ref() != Some(&lines) {
                printer.value(&WidgetLines {
                    width: size.width,
                    lines: &lines,
                    coordinator: None,
                })?;
                shown = Some(lines);
                asked = false;
                // The next tick a full second after this document, whatever caused it: the
                // elapsed time never moves twice within a second.
                tick.reset();
            }
            let ticking = FleetView::new(&fleet, now).ticking(rows);
            let first = tokio::select! {
                note = events.next() => Some(note),
                _ = tick.tick(), if ticking => None,
                request = requests.recv(), if reading => {
                    match request {
                        Some(Ok(request)) => {
                            // Only the newest of the requests already waiting matters.
                            size = request;
                            while let Ok(next) = requests.try_recv() {
                                size = next.map_err(Error::Usage)?;
                            }
                            asked = true;
                        }
                        Some(Err(message)) => return Err(Error::Usage(message)),
                        None => reading = false,
                    }
                    continue;
                }
            };
            // Drain everything already pending, then render once.
            let mut notes = Vec::new();
            if let Some(note) = first {
                notes.push(note);
            }
            while let Ok(note) = tokio::time::timeout(Duration::ZERO, events.next()).await {
                let closed = note.is_none();
                notes.push(note);
                if closed {
                    break;
                }
            }
            let mut refresh = false;
            for note in notes {
                let Some(note) = note else {
                    // The connection closed without a shutdown: the coordinator died now.
                    let end = CoordinatorEnd::Died {
                        last_sign_of_life: crate::runtime::now_ms(),
                    };
                    return print_gone(printer, &fleet, end, size);
                };
                match apply(&mut fleet, &note) {
                    Applied::Changed | Applied::Ignored => {}
                    Applied::Refresh => refresh = true,
                    Applied::Shutdown => return Ok(ExitCode::Ok),
                }
            }
            if refresh {
                match read_fleet(&client).await {
                    Ok(all) => fleet.replace(all),
                    Err(message) => {
                        // Lagged, and then the read failed: gone (exit 0) if the connection
                        // closes now, otherwise a real failure.
                        let closing = tokio::time::timeout(Duration::from_secs(1), async {
                            while events.next().await.is_some() {}
                        });
                        // (Whether it shut down or died is unknown here: its notice was
                        // among the ones missed.)
                        return match closing.await {
                            Ok(()) => Ok(ExitCode::Ok),
                            Err(_) => Err(Error::Failed(message)),
                        };
                    }
                }
            }
        }
    })
}
