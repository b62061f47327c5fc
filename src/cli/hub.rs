//! `slate hub`: the Subagent Hub on the coordinator serving this directory (or `--parent`).
//! With none reachable, it starts one in-process — the same runtime and control server as
//! `slate serve`, on its socket in the private (0700) runtime directory — and attaches to
//! it over that socket, so there is one data path either way, and other Hubs and CLI
//! commands can attach to it while it runs.
//!
//! `--frames` draws for a host instead (pi's overlay, `ui/hub/frames.rs`); `--pane` opens
//! the Hub in a new tmux pane (`hub/pane.rs`).

use std::io::IsTerminal;
use std::sync::Arc;

use crate::cli::embedded::{EmbedArgs, Embedded, Served};
use crate::cli::fleet::connect;
use crate::cli::{Error, ExitCode};
use crate::control::client::CONNECT_TIMEOUT;
use crate::control::{Client, Server};
use crate::ui::hub::frames::run_frames;
use crate::ui::hub::{HubOptions, run_hub};

mod pane;

/// Where the Hub draws.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Surface {
    /// This terminal.
    Terminal,
    /// Frames for a host (`--frames`).
    Frames,
    /// A new tmux pane (`--pane`).
    Pane,
}

impl Surface {
    pub fn of(frames: bool, pane: bool) -> Self {
        match (frames, pane) {
            (true, _) => Self::Frames,
            (false, true) => Self::Pane,
            (false, false) => Self::Terminal,
        }
    }
}

pub fn run(parent: Option<String>, surface: Surface, embed: &EmbedArgs) -> Result<ExitCode, Error> {
    match surface {
        Surface::Terminal => {}
        Surface::Frames => return crate::cli::fleet::block_on_multi(|| frames(parent)),
        Surface::Pane => return pane::open(parent),
    }
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return Err(Error::Usage(
            "slate hub needs a terminal (use slate status for text or --json)".to_owned(),
        ));
    }
    crate::cli::fleet::block_on_multi(|| hub(parent, embed))
}

/// `--frames`: the Hub for a host, on a coordinator that runs (none is started for it).
async fn frames(parent: Option<String>) -> Result<ExitCode, Error> {
    let client = connect(parent).await?;
    let options = HubOptions {
        title: title(&client),
        ..HubOptions::default()
    };
    run_frames(client, options)
        .await
        .map_err(|e| Error::Environment(format!("slate hub --frames: {e}")))?;
    Ok(ExitCode::Ok)
}

fn title(client: &Client) -> String {
    client
        .server()
        .map(|h| format!("parent {}", h.parent_id))
        .unwrap_or_default()
}

async fn hub(parent: Option<String>, embed: &EmbedArgs) -> Result<ExitCode, Error> {
    // A coordinator named by `--parent` or `SLATE_SOCKET` that does not answer is an error,
    // never a reason to start another one.
    let explicit = parent.is_some()
        || std::env::var_os(crate::control::discovery::SOCKET_ENV).is_some_and(|v| !v.is_empty());
    let result = match connect(parent.clone()).await {
        Ok(client) => {
            let options = HubOptions {
                title: title(&client),
                ..HubOptions::default()
            };
            run_hub(client, options).await
        }
        // A named coordinator that is not there is an error, not a reason to start one; one
        // that left an event log says how it ended (the Hub is a live view: its last known
        // states are `slate status --parent`'s read-only history).
        Err(e) if explicit && e.codes().0 == ExitCode::NoCoordinator => {
            return Err(gone(parent.as_deref()).unwrap_or(e));
        }
        Err(e) if e.codes().0 != ExitCode::NoCoordinator => return Err(e),
        Err(_) => {
            let embedded = Embedded::start(embed).await?;
            hub_on_embedded(embedded, HubOptions::default()).await
        }
    };
    result.map_err(|e| Error::Environment(format!("slate hub: {e}")))?;
    Ok(ExitCode::Ok)
}

/// The error for a named coordinator that no longer answers but left an event log here:
/// how it ended (shut down, or died and since when) and where its last known states are.
fn gone(parent: Option<&str>) -> Option<Error> {
    let parent_id = parent?.parse::<uuid::Uuid>().ok()?;
    let log = crate::cli::status::history_log(parent_id)?;
    let end = crate::store::event_log::read_history(&log).ok()?.end();
    Some(Error::NoCoordinator(format!(
        "{}; the Hub shows live coordinators only: `slate status --parent {parent_id}` prints \
         them (read-only history)",
        end.describe(parent_id)
    )))
}

/// Serves `embedded` on its control socket for as long as the Hub runs, attaches the Hub
/// over that socket, and shuts the coordinator down (draining every worker) afterwards.
/// `slate demo` can call this with its own embedded coordinator (clone `embedded.rt` first
/// to keep driving it); an empty `options.title` becomes "embedded parent <id>".
pub async fn hub_on_embedded(embedded: Embedded, mut options: HubOptions) -> std::io::Result<()> {
    let server = match Server::bind_coordinator(embedded.root_id, embedded.loaded.cwd.clone()) {
        Ok(server) => server,
        Err(e) => {
            let _ = embedded.rt.shutdown().await;
            return Err(std::io::Error::other(e));
        }
    };
    let socket = server.socket().to_owned();
    let Served {
        rt,
        join,
        root_id,
        service,
    } = embedded.into_served();
    let service = Arc::new(service);
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.run(service, async move {
        let _ = stop_rx.await;
    }));
    let result = match Client::connect_path(&socket, CONNECT_TIMEOUT).await {
        Ok(client) => {
            if options.title.is_empty() {
                options.title = format!("embedded parent {root_id}");
            }
            run_hub(client, options).await
        }
        Err(e) => Err(std::io::Error::other(e.to_string())),
    };
    let _ = stop_tx.send(());
    let _ = serving.await;
    let _ = rt.shutdown().await;
    drop(rt);
    let _ = join.await;
    result
}
