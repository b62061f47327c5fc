//! `slate watch --lines [--width N]`: the fleet widget for a host that draws it itself (pi's
//! widget above its editor, `ctx.ui.setWidget`), with no terminal.
//!
//! One JSON line `{"lines": ["…", …]}` on stdout each time the widget's rows change: the same
//! rows from the same renderer as `slate watch` ([`plain_lines`]: the inline widget's
//! [`FleetView`](crate::ui::fleet::FleetView) rendered into a buffer and read back as text),
//! at most 12, `{"lines": []}` while the registry is empty. The first line is written at once;
//! after that nothing is written while nothing changes: a notification that leaves the rows
//! as they were writes nothing, and the 1 s tick (which moves a running row's elapsed time)
//! runs only while a shown row is still counting, one second after the last document. The command ends with exit 0 when the
//! coordinator shuts down or its connection closes, and quietly when stdout is closed.
//!
//! A coordinator that stops answering without shutting down (killed, crashed) is not shown
//! as alive: the last document then starts with a line saying it died and since when, its
//! rows are the last known ones with their elapsed time stopped at that moment, and the
//! document carries `"coordinator": {"state": "died", "lastSignOfLife": MS}` (the host keeps
//! it shown). With `--parent ID` of a coordinator that is already gone, that document is
//! made from its event log and is the only one.

use std::time::Duration;

use serde::Serialize;

use crate::cli::fleet::{block_on, connect};
use crate::cli::watch::{Applied, apply, read_fleet};
use crate::cli::{Error, ExitCode, Printer};
use crate::store::event_log::{CoordinatorEnd, read_history};
use crate::text::SafeText;
use crate::ui::fleet::{Fleet, FleetView, plain_lines};

/// At most this many rows (as the inline viewport).
pub const MAX_ROWS: u16 = 12;
/// `--width` when not given.
pub const DEFAULT_WIDTH: u16 = 100;

/// One document of the stream.
#[derive(Debug, Serialize)]
pub struct WidgetLines<'a> {
    pub lines: &'a [String],
    /// Set on the last document when the coordinator is gone: how it stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coordinator: Option<CoordinatorEnd>,
}

/// The widget of a coordinator that is gone: a first line saying so, then its last known
/// rows with elapsed times frozen at [`CoordinatorEnd::at`].
pub fn gone_lines(fleet: &Fleet, end: CoordinatorEnd, width: u16) -> Vec<String> {
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
    let mut lines = vec![crate::text::fit(&banner, usize::from(width))];
    lines.extend(plain_lines(fleet, end.at(), width, MAX_ROWS - 1));
    lines
}

fn print_gone(
    printer: &Printer,
    fleet: &Fleet,
    end: CoordinatorEnd,
    width: u16,
) -> Result<ExitCode, Error> {
    let lines = gone_lines(fleet, end, width);
    printer.value(&WidgetLines {
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
    print_gone(printer, &fleet, history.end(), width)
}

/// `slate watch --lines`.
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
        let mut shown: Option<Vec<String>> = None;
        loop {
            let now = crate::runtime::now_ms();
            let lines = plain_lines(&fleet, now, width, MAX_ROWS);
            if shown.as_ref() != Some(&lines) {
                printer.value(&WidgetLines {
                    lines: &lines,
                    coordinator: None,
                })?;
                shown = Some(lines);
                // The next tick a full second after this document, whatever caused it: the
                // elapsed time never moves twice within a second.
                tick.reset();
            }
            let ticking = FleetView::new(&fleet, now).ticking(MAX_ROWS);
            let first = tokio::select! {
                note = events.next() => Some(note),
                _ = tick.tick(), if ticking => None,
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
                    return print_gone(printer, &fleet, end, width);
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
