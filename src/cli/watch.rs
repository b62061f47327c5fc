//! `slate watch` and the foreground `slate delegate` widget: the fleet widget in an inline
//! viewport, fed by the coordinator's registry notifications over the control socket.
//!
//! One loop owns the state. `select!` only receives (a key, a notification, the 1 s tick,
//! or the end of the awaited call); afterwards every other pending input is drained, the
//! fleet is re-read if the subscription lagged, and the widget is drawn once. The tick runs
//! only while a visible row's elapsed time is still counting, so an idle fleet costs no
//! redraws.

use std::future::Future;
use std::io::IsTerminal as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use ratatui::crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use tokio::sync::mpsc;

use crate::cli::fleet::{block_on, connect};
use crate::cli::{Error, ExitCode};
use crate::control::methods::{Event as ControlEvent, StatusParams, StatusResult, method};
use crate::control::{Client, Notification, Subscription};
use crate::core::ChildSnapshot;
use crate::text::SafeText;
use crate::ui::fleet::{Fleet, FleetView, draw};
use crate::ui::terminal::{Mode, TerminalGuard};

/// At most this many rows for the inline viewport.
const MAX_ROWS: u16 = 12;

/// `slate watch [--parent ID]`.
pub fn run(parent: Option<String>) -> Result<ExitCode, Error> {
    if !std::io::stdout().is_terminal() {
        return Err(Error::Usage(
            "slate watch draws a live widget and needs a terminal; stdout is not one. \
             Use `slate status` (or `slate status --json`) for a one-shot fleet table"
                .to_owned(),
        ));
    }
    block_on(async move {
        let client = connect(parent).await?;
        let mut widget = Widget::attach(&client).await?;
        let end = widget
            .run_until(&client, std::future::pending::<()>(), Quit::Any)
            .await;
        drop(widget);
        match end {
            End::Quit | End::Done(()) => Ok(ExitCode::Ok),
            End::Closed => Err(Error::NoCoordinator("the coordinator went away".to_owned())),
            End::Failed(message) => Err(Error::Environment(message)),
        }
    })
}

/// Which keys end the loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quit {
    /// q, Esc or Ctrl+C (`slate watch`).
    Any,
    /// Only Ctrl+C (foreground `delegate`, where q and Esc are too easy to hit).
    Interrupt,
}

/// How the loop ended.
pub enum End<T> {
    /// The awaited future finished.
    Done(T),
    /// A quit key.
    Quit,
    /// The coordinator closed the connection or shut down.
    Closed,
    /// The terminal or the control connection failed.
    Failed(String),
}

/// An attached widget: the subscription, the fleet copy and the terminal.
pub struct Widget {
    events: Subscription,
    fleet: Fleet,
    guard: TerminalGuard,
    rows: u16,
}

impl Drop for Widget {
    fn drop(&mut self) {
        // The guard leaves the last frame in the scrollback and moves one line down; start
        // that line at the viewport's last row, column 0, so the shell prompt (or the printed
        // outcome) begins on a fresh line under the widget.
        let terminal = self.guard.terminal();
        let area = terminal.get_frame().area();
        let _ = terminal.set_cursor_position((0, area.bottom().saturating_sub(1)));
    }
}

enum Input {
    Key(Event),
    Note(Option<Notification>),
    Tick,
}

impl Widget {
    /// Subscribes first (so no change between the read and the first event is missed),
    /// reads the fleet, then takes the terminal with an inline viewport. Fails as
    /// [`Error::NoCoordinator`] when the coordinator went away, [`Error::Environment`] for the
    /// terminal.
    pub async fn attach(client: &Client) -> Result<Self, Error> {
        let unreachable = Error::NoCoordinator;
        let events = client
            .subscribe()
            .await
            .map_err(|e| unreachable(SafeText::line(&e.to_string()).into_string()))?;
        let mut fleet = Fleet::new();
        fleet.replace(read_fleet(client).await.map_err(unreachable)?);
        fleet.baseline();
        let height = ratatui::crossterm::terminal::size().map_or(24, |(_, h)| h);
        let rows = (height / 2).clamp(1, MAX_ROWS);
        let guard = TerminalGuard::enter(Mode::Inline(rows))
            .map_err(|e| Error::Environment(format!("cannot take the terminal: {e}")))?;
        Ok(Self {
            events,
            fleet,
            guard,
            rows,
        })
    }

    /// Runs until `until` resolves, a quit key, or the coordinator goes away.
    pub async fn run_until<F: Future>(
        &mut self,
        client: &Client,
        until: F,
        quit: Quit,
    ) -> End<F::Output> {
        let (tx, mut keys) = mpsc::unbounded_channel();
        let stop = Arc::new(AtomicBool::new(false));
        let reader = spawn_key_reader(tx, Arc::clone(&stop));
        let end = self.event_loop(client, until, quit, &mut keys).await;
        stop.store(true, Ordering::SeqCst);
        if let Ok(reader) = reader {
            let _ = reader.join();
        }
        end
    }

    async fn event_loop<F: Future>(
        &mut self,
        client: &Client,
        until: F,
        quit: Quit,
        keys: &mut mpsc::UnboundedReceiver<Event>,
    ) -> End<F::Output> {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut until = std::pin::pin!(until);
        let mut dirty = true;
        loop {
            if dirty {
                if let Err(e) = draw(
                    self.guard.terminal(),
                    &mut self.fleet,
                    crate::runtime::now_ms(),
                ) {
                    return End::Failed(format!("cannot draw the fleet widget: {e}"));
                }
                dirty = false;
            }
            let ticking = FleetView::new(&self.fleet, crate::runtime::now_ms()).ticking(self.rows);
            let first = tokio::select! {
                biased;
                done = &mut until => {
                    // The last frame shows the registry as the call left it.
                    if let Ok(all) = read_fleet(client).await {
                        self.fleet.replace(all);
                    }
                    let _ = draw(self.guard.terminal(), &mut self.fleet, crate::runtime::now_ms());
                    return End::Done(done);
                }
                key = keys.recv() => match key {
                    Some(key) => Input::Key(key),
                    None => return End::Failed("the terminal input closed".to_owned()),
                },
                note = self.events.next() => Input::Note(note),
                _ = tick.tick(), if ticking => Input::Tick,
            };
            // Drain everything else that is already pending, then draw once.
            let mut inputs = vec![first];
            while let Ok(key) = keys.try_recv() {
                inputs.push(Input::Key(key));
            }
            while let Ok(note) = tokio::time::timeout(Duration::ZERO, self.events.next()).await {
                let closed = note.is_none();
                inputs.push(Input::Note(note));
                if closed {
                    break;
                }
            }
            let mut refresh = false;
            for input in inputs {
                match input {
                    Input::Key(Event::Key(key)) => {
                        if quits(key, quit) {
                            return End::Quit;
                        }
                    }
                    Input::Key(Event::Resize(..)) | Input::Tick => dirty = true,
                    Input::Key(_) => {}
                    Input::Note(None) => return End::Closed,
                    Input::Note(Some(note)) => match apply(&mut self.fleet, &note) {
                        Applied::Changed => dirty = true,
                        Applied::Refresh => refresh = true,
                        Applied::Ignored => {}
                        Applied::Shutdown => return End::Closed,
                    },
                }
            }
            if refresh {
                match read_fleet(client).await {
                    Ok(all) => {
                        self.fleet.replace(all);
                        dirty = true;
                    }
                    Err(message) => return End::Failed(message),
                }
            }
        }
    }
}

fn quits(key: KeyEvent, quit: Quit) -> bool {
    if key.kind == KeyEventKind::Release {
        return false;
    }
    let interrupt = key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL);
    match quit {
        Quit::Interrupt => interrupt,
        Quit::Any => interrupt || matches!(key.code, KeyCode::Esc | KeyCode::Char('q')),
    }
}

/// What one notification did to the fleet copy.
#[derive(Debug, PartialEq, Eq)]
pub enum Applied {
    Changed,
    /// Events were dropped for this subscriber: re-read the fleet.
    Refresh,
    Ignored,
    Shutdown,
}

/// Applies one notification: `event` with a registry event carries the changed snapshot.
pub fn apply(fleet: &mut Fleet, note: &Notification) -> Applied {
    match note {
        Notification::Event(ControlEvent::Registry { event }) => {
            fleet.apply(event.child.clone());
            Applied::Changed
        }
        Notification::Lagged(_) | Notification::Event(ControlEvent::Lagged { .. }) => {
            Applied::Refresh
        }
        Notification::Event(ControlEvent::ShutdownComplete) => Applied::Shutdown,
        Notification::Event(ControlEvent::Outcome { .. })
        | Notification::ToolUpdate(_)
        | Notification::ToolOutcome(_) => Applied::Ignored,
    }
}

/// The current generations (full snapshots) of the coordinator.
pub(super) async fn read_fleet(client: &Client) -> Result<Vec<ChildSnapshot>, String> {
    match client
        .request::<method::Status>(&StatusParams::default())
        .await
        .map_err(|e| SafeText::line(&e.to_string()).into_string())?
    {
        StatusResult::Fleet(fleet) => Ok(fleet.children),
        _ => Err("the coordinator's status is not a fleet answer".to_owned()),
    }
}

/// A named thread that forwards terminal input until `stop` is set (it polls, so it
/// notices within 50 ms).
fn spawn_key_reader(
    tx: mpsc::UnboundedSender<Event>,
    stop: Arc<AtomicBool>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("slate-keys".to_owned())
        .spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                match event::poll(Duration::from_millis(50)) {
                    Ok(true) => match event::read() {
                        Ok(ev) => {
                            if tx.send(ev).is_err() {
                                break;
                            }
                        }
                        Err(_) => break,
                    },
                    Ok(false) => {}
                    Err(_) => break,
                }
            }
        })
}

#[cfg(test)]
mod tests {
    use super::{Applied, Quit, apply, quits};
    use crate::control::Notification;
    use crate::ui::fleet::Fleet;
    use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use serde_json::json;

    fn key(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, modifiers)
    }

    #[test]
    fn watch_leaves_on_q_esc_and_ctrl_c_and_delegate_only_on_ctrl_c() {
        let ctrl_c = key(KeyCode::Char('c'), KeyModifiers::CONTROL);
        let q = key(KeyCode::Char('q'), KeyModifiers::NONE);
        let esc = key(KeyCode::Esc, KeyModifiers::NONE);
        let c = key(KeyCode::Char('c'), KeyModifiers::NONE);
        assert!(quits(ctrl_c, Quit::Any) && quits(q, Quit::Any) && quits(esc, Quit::Any));
        assert!(!quits(c, Quit::Any));
        assert!(quits(ctrl_c, Quit::Interrupt));
        assert!(!quits(q, Quit::Interrupt) && !quits(esc, Quit::Interrupt));
    }

    #[test]
    fn notifications_update_the_fleet_or_ask_for_a_full_read() {
        let mut fleet = Fleet::new();
        let note = |v: serde_json::Value| -> Notification {
            serde_json::from_value(v).unwrap_or_else(|e| panic!("notification: {e}"))
        };
        let lagged = note(json!({"method": "lagged", "params": {"missed": 3}}));
        assert_eq!(apply(&mut fleet, &lagged), Applied::Refresh);
        let inner_lag = note(json!({"method": "event", "params": {"kind": "lagged", "missed": 2}}));
        assert_eq!(apply(&mut fleet, &inner_lag), Applied::Refresh);
        let shutdown = note(json!({"method": "event", "params": {"kind": "shutdownComplete"}}));
        assert_eq!(apply(&mut fleet, &shutdown), Applied::Shutdown);
        assert!(fleet.is_empty());
        let child = json!({
            "id": "10000000-0000-4000-8000-000000000001", "generation": 1,
            "parentId": "10000000-0000-4000-8000-000000000fff", "depth": 1,
            "status": "running", "profile": "scout", "cwd": "/w", "assignment": "a",
            "activity": null, "progress": null, "result": null, "model": null, "effort": null,
            "telemetry": {"requests": null, "tokens": null, "cost": null, "context": null},
            "limits": {"deadlineMs": 1, "requests": 1, "tools": 1, "depth": 1, "spawns": 0},
            "toolCalls": 0, "spawns": 0, "writerLease": false, "disposed": false,
            "createdAt": 1, "endedAt": null, "tools": [], "leafTools": [], "skills": [],
            "capabilityDenials": [], "retainedContext": false,
            "window": {"number": 1, "startedAt": 1, "deadlineAt": 2},
        });
        let changed = note(json!({"method": "event", "params":
            {"kind": "registry", "event": {"type": "changed", "child": child}}}));
        assert_eq!(apply(&mut fleet, &changed), Applied::Changed);
        assert_eq!(fleet.len(), 1);
    }
}
