//! The Hub's one loop. Inputs (keys, resize, registry notifications, call results, a 1 s
//! clock only while an active row is on screen) arrive on one channel; the loop drains
//! everything pending, updates the state, and draws once if something visible changed.
//! `select!` arms only receive; the work happens after it returns.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use ratatui::Terminal;
use ratatui::backend::Backend;
use ratatui::crossterm::event::{self, Event};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::time::MissedTickBehavior;

use super::keys::Key;
use super::state::{Failure, Hub, HubOptions, Msg, TranscriptPart, UiEffect};
use super::view::HubView;
use crate::control::methods::{
    Event as ControlEvent, Lagged, NoParams, Notification, StatusParams, StatusResult, Target,
    TranscriptParams, method,
};
use crate::control::{Client, ClientError, Subscription};
use crate::core::{ChildSnapshot, Reply};
use crate::runtime::now_ms;
use crate::store::event_log::CoordinatorEnd;
use crate::ui::terminal::{Mode, TerminalGuard};

/// After a registry notification, wait this long for more before drawing (coalescing a
/// burst of worker events into one frame). Keys draw at once.
const COALESCE: Duration = Duration::from_millis(10);

/// What one pass of the loop did.
#[derive(Debug, Default)]
pub struct Step {
    pub effects: Vec<UiEffect>,
    pub drew: bool,
}

/// One pass: apply every message, settle once, draw once if dirty. The real loop and the
/// tests use this same function (tests with ratatui's `TestBackend`).
pub fn step<B: Backend>(
    hub: &mut Hub,
    msgs: impl IntoIterator<Item = Msg>,
    terminal: &mut Terminal<B>,
) -> io::Result<Step> {
    let mut effects = Vec::new();
    let size = terminal.size()?;
    if hub.areas_size() != (size.width, size.height) {
        effects.extend(hub.update(Msg::Resize(size.width, size.height)));
    }
    for msg in msgs {
        effects.extend(hub.update(msg));
    }
    effects.extend(hub.settle());
    let drew = hub.take_dirty();
    if drew {
        terminal.draw(|frame| frame.render_widget(&HubView::new(hub), frame.area()))?;
    }
    Ok(Step { effects, drew })
}

fn io_error(e: &ClientError) -> io::Error {
    io::Error::other(e.to_string())
}

/// Runs the Hub on this terminal until `q`/Esc, with `client` as its only data path.
/// Several Hubs may attach to one coordinator at once. The terminal is restored on exit,
/// error and panic.
pub async fn run_hub(client: Client, options: HubOptions) -> io::Result<()> {
    let client = Arc::new(client);
    // Subscribe before the first read, so no change falls between the two.
    let subscription = client.subscribe().await.map_err(|e| io_error(&e))?;
    let (tx, mut rx) = unbounded_channel::<Msg>();
    let forwarder = tokio::spawn(forward(subscription, tx.clone()));
    perform(UiEffect::Reload, &client, &tx);

    let mut guard = TerminalGuard::enter(Mode::Fullscreen)?;
    let stop = Arc::new(AtomicBool::new(false));
    let input = spawn_input(tx.clone(), Arc::clone(&stop))?;
    let mut hub = Hub::new(options, now_ms());
    let result = run_loop(
        &mut hub,
        &mut rx,
        guard.terminal(),
        &client,
        &tx,
        &mut OwnTerminal,
    )
    .await;
    stop.store(true, Ordering::SeqCst);
    forwarder.abort();
    drop(guard);
    let _ = input.join();
    result
}

/// Where the loop's frames go: the Hub's own terminal, or a host that draws them
/// (`--frames`).
pub(super) trait Surface<B: Backend> {
    /// Before a batch is applied (a host's `size` resizes its backend here).
    fn before(&mut self, terminal: &mut Terminal<B>, batch: &[Msg]) -> io::Result<()>;
    /// After a frame was drawn.
    fn present(&mut self, terminal: &Terminal<B>) -> io::Result<()>;
}

/// The terminal Hub: ratatui already wrote the frame; resizes are the terminal's own.
struct OwnTerminal;

impl<B: Backend> Surface<B> for OwnTerminal {
    fn before(&mut self, _: &mut Terminal<B>, _: &[Msg]) -> io::Result<()> {
        Ok(())
    }

    fn present(&mut self, _: &Terminal<B>) -> io::Result<()> {
        Ok(())
    }
}

/// The loop of every Hub.
pub(super) async fn run_loop<B: Backend>(
    hub: &mut Hub,
    rx: &mut UnboundedReceiver<Msg>,
    terminal: &mut Terminal<B>,
    client: &Arc<Client>,
    tx: &UnboundedSender<Msg>,
    surface: &mut impl Surface<B>,
) -> io::Result<()> {
    let mut clock = tokio::time::interval(Duration::from_secs(1));
    clock.set_missed_tick_behavior(MissedTickBehavior::Skip);
    let mut first = Some(Msg::Tick(now_ms()));
    loop {
        let msg = if let Some(m) = first.take() {
            m
        } else {
            let ticking = hub.wants_tick();
            tokio::select! {
                m = rx.recv() => match m {
                    Some(m) => m,
                    None => return Ok(()),
                },
                _ = clock.tick(), if ticking => Msg::Tick(now_ms()),
            }
        };
        if matches!(msg, Msg::Registry { .. }) {
            tokio::time::sleep(COALESCE).await;
        }
        let mut batch = vec![msg];
        while let Ok(m) = rx.try_recv() {
            batch.push(m);
        }
        surface.before(terminal, &batch)?;
        let step = step(hub, batch, terminal)?;
        if step.drew {
            surface.present(terminal)?;
        }
        for effect in step.effects {
            perform(effect, client, tx);
        }
        if hub.should_quit() {
            return Ok(());
        }
    }
}

/// Keys, pastes and resizes from a blocking reader thread (keys become the Hub's own
/// [`Key`] here); it ends when `stop` is set or the loop
/// is gone.
fn spawn_input(
    tx: UnboundedSender<Msg>,
    stop: Arc<AtomicBool>,
) -> io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("hub-input".to_owned())
        .spawn(move || {
            while !stop.load(Ordering::SeqCst) && !tx.is_closed() {
                match event::poll(Duration::from_millis(100)) {
                    Ok(true) => {
                        let msg = match event::read() {
                            Ok(Event::Key(key)) => match Key::from_event(&key) {
                                Some(key) => Msg::Key(key),
                                None => continue,
                            },
                            Ok(Event::Paste(text)) => Msg::Paste(text),
                            Ok(Event::Resize(w, h)) => Msg::Resize(w, h),
                            Ok(_) => continue,
                            Err(_) => break,
                        };
                        if tx.send(msg).is_err() {
                            break;
                        }
                    }
                    Ok(false) => {}
                    Err(_) => break,
                }
            }
        })
}

/// Registry notifications become messages, stamped with when the Hub received them.
pub(super) async fn forward(mut subscription: Subscription, tx: UnboundedSender<Msg>) {
    while let Some(n) = subscription.next().await {
        let msg = match n {
            Notification::Event(ControlEvent::Registry { event }) => Msg::Registry {
                child: Box::new(event.child),
                at: now_ms(),
            },
            Notification::Event(ControlEvent::Lagged { missed })
            | Notification::Lagged(Lagged { missed }) => Msg::Lagged(missed),
            Notification::Event(ControlEvent::ShutdownComplete) => {
                // Said so: whatever closes next is the shutdown's own end.
                let _ = tx.send(Msg::CoordinatorStopped(CoordinatorEnd::ShutDown {
                    at: now_ms(),
                }));
                return;
            }
            Notification::Event(ControlEvent::Outcome { .. })
            | Notification::ToolUpdate(_)
            | Notification::ToolOutcome(_) => continue,
        };
        if tx.send(msg).is_err() {
            return;
        }
    }
    // Closed without the shutdown notice: it died now (a shutdown's notice stops the loop
    // above first, as the Hub stops reading then).
    let _ = tx.send(Msg::CoordinatorStopped(CoordinatorEnd::Died {
        last_sign_of_life: now_ms(),
    }));
}

fn failure(e: &ClientError) -> Failure {
    match e.remote() {
        Some(r) => Failure {
            code: Some(r.code.clone()),
            message: r.message.clone(),
        },
        None => Failure {
            code: None,
            message: e.to_string(),
        },
    }
}

/// Every current generation, and the older generations of identities past their first.
async fn load(client: &Client) -> Result<Msg, ClientError> {
    let at = now_ms();
    let unexpected = |what: &str| ClientError::Protocol(format!("status: {what} answer expected"));
    let StatusResult::Fleet(fleet) = client
        .request::<method::Status>(&StatusParams::default())
        .await?
    else {
        return Err(unexpected("a fleet"));
    };
    let (mut snapshots, agents) = (fleet.children, fleet.agents);
    let renewed: Vec<Target> = snapshots
        .iter()
        .filter(|s| s.generation > 1)
        .map(|s| Target(s.child_ref()))
        .collect();
    for target in renewed {
        let params = StatusParams {
            target: Some(target),
            ..StatusParams::default()
        };
        let StatusResult::Generation(view) = client.request::<method::Status>(&params).await?
        else {
            return Err(unexpected("a generation"));
        };
        let generations: Vec<ChildSnapshot> = view.generations;
        let older: Vec<ChildSnapshot> = generations
            .into_iter()
            .filter(|g| !snapshots.iter().any(|s| s.child_ref() == g.child_ref()))
            .collect();
        snapshots.extend(older);
    }
    Ok(Msg::Loaded {
        snapshots,
        agents,
        at,
    })
}

/// Starts one effect off the loop; its result comes back as a message.
pub(super) fn perform(effect: UiEffect, client: &Arc<Client>, tx: &UnboundedSender<Msg>) {
    let client = Arc::clone(client);
    let tx = tx.clone();
    tokio::spawn(async move {
        let msg = match effect {
            UiEffect::FetchTranscript { target, after } => {
                let params = TranscriptParams {
                    target: Target(target),
                    after,
                };
                let result = client
                    .request::<method::Transcript>(&params)
                    .await
                    .map_err(|e| e.to_string())
                    .map(|t| TranscriptPart {
                        after,
                        messages: t.messages,
                        cursor: t.cursor,
                        restarted: t.restarted,
                    });
                Msg::Transcript { target, result }
            }
            UiEffect::RefreshAgents => match client.request::<method::Agents>(&NoParams {}).await {
                Ok(agents) => Msg::Agents(agents),
                Err(e) => Msg::Disconnected(e.to_string()),
            },
            UiEffect::Reload => match load(&client).await {
                Ok(msg) => msg,
                Err(e) => Msg::Disconnected(e.to_string()),
            },
            UiEffect::Control { id, action } => {
                let request = action.request();
                let result = match client.send(&request).await {
                    Ok(raw) => raw
                        .decode::<Reply>(request.method())
                        .map_err(|e| failure(&e)),
                    Err(e) => Err(failure(&e)),
                };
                Msg::ControlDone { id, result }
            }
        };
        let _ = tx.send(msg);
    });
}
