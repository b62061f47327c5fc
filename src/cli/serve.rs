//! `slate serve`: a headless coordinator for the current directory behind its control socket.
//! Prints its parent id and socket path; runs until SIGINT/SIGTERM (or a `shutdown` request),
//! then stops accepting, stops and drains every worker and removes its socket.
//!
//! With `--pi-session ID` it is the coordinator of one pi session, started by Slate's
//! extension in the user's pi (`docs/cli.md`, "A pi session's coordinator"):
//!
//! * the parent id is the session's id and storage is `delegation/<ID>/` under
//!   `--session-dir`; an earlier runtime's `events.jsonl` there (a resumed session) is set
//!   aside as `events.<n>.jsonl`, so every runtime still starts a fresh log;
//! * when a live coordinator already serves that id, this one prints that coordinator's lines
//!   and exits 0 (attach). The socket is bound before anything else is started, so two
//!   `serve`s racing for one session end with one coordinator, the other attached;
//! * stdin is the session's lifeline: the extension holds the pipe's write end and never
//!   writes; end of file (pi exited or was killed, or the extension closed it) stops the
//!   coordinator like SIGTERM. As a second line of defence the kernel sends SIGTERM when the
//!   process that started it dies (`PR_SET_PDEATHSIG`, through nix's safe wrapper);
//! * `--host-version` is the supported-host gate, applied by the service
//!   (`Service::with_host_version`).

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::oneshot;

use crate::cli::embedded::{EmbedArgs, Embedded, PiSession, Plan, Served};
use crate::cli::{Error, ExitCode, Printer};
use crate::control::discovery::{Located, RuntimeDir};
use crate::control::server::{BindError, ServerError};
use crate::control::{Metadata, Server};
use crate::runtime::RuntimeEvent;

pub fn run(printer: &Printer, args: &EmbedArgs) -> Result<ExitCode, Error> {
    if args.session.is_some() {
        // Before any other thread exists: the signal is sent when the thread that started
        // this process exits (for pi, Node's main thread: pi itself).
        nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGTERM).map_err(|e| {
            Error::Environment(format!(
                "cannot ask for a signal when the pi session's process dies: {e}"
            ))
        })?;
    }
    crate::cli::fleet::block_on_multi(|| serve(printer, args))
}

/// Why the coordinator stops.
enum Stop {
    Signal(&'static str),
    StdinClosed,
    ShutdownRequest,
}

async fn serve(printer: &Printer, args: &EmbedArgs) -> Result<ExitCode, Error> {
    let (Ok(mut sigint), Ok(mut sigterm)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return Err(Error::Environment(
            "cannot install signal handlers".to_owned(),
        ));
    };
    let mut stdin_closed = match &args.session {
        Some(_) => Some(watch_stdin()?),
        None => None,
    };
    let Some((server, embedded, events)) = start(printer, args).await? else {
        return Ok(ExitCode::Ok);
    };
    let socket = server.socket().to_owned();
    let Served {
        rt,
        join,
        root_id,
        mut service,
    } = embedded.into_served();
    if let Some(version) = args
        .session
        .as_ref()
        .and_then(|s| s.host_version.as_deref())
    {
        service = service.with_host_version(version);
    }
    // A closed stdout does not stop the coordinator: it serves its socket, not the pipe.
    let _ = print_lines(printer, root_id, &socket, &events, false);
    let mut runtime_events = rt.subscribe();
    let stopping = rt.clone();
    // Stop on a signal, at the end of stdin (a pi session's coordinator), or when the runtime
    // finished shutting down (a `shutdown` request). Shutdown of the runtime starts at once,
    // so running workers are aborted while the server drains its connections.
    let stop = async move {
        let why = loop {
            tokio::select! {
                _ = sigint.recv() => break Stop::Signal("SIGINT"),
                _ = sigterm.recv() => break Stop::Signal("SIGTERM"),
                () = closed(stdin_closed.as_mut()) => break Stop::StdinClosed,
                event = runtime_events.recv() => match event {
                    Ok(RuntimeEvent::ShutdownComplete)
                    | Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                        break Stop::ShutdownRequest;
                    }
                    _ => {}
                },
            }
        };
        if !printer.json() {
            let reason = match why {
                Stop::Signal(name) => format!("{name} received"),
                Stop::StdinClosed => "stdin closed (the pi session ended)".to_owned(),
                Stop::ShutdownRequest => "shutdown requested".to_owned(),
            };
            printer.err_line(&format!(
                "slate serve: {reason}; stopping every worker and draining…"
            ));
        }
        tokio::spawn(async move {
            let _ = stopping.shutdown().await;
        });
    };
    server.run(Arc::new(service), stop).await;
    let _ = rt.shutdown().await;
    drop(rt);
    let report = join.await.unwrap_or_default();
    if !printer.json() {
        printer.err_line(&format!(
            "slate serve: stopped ({} worker(s) started, {} terminated after the grace period)",
            report.workers_started, report.workers_killed
        ));
    }
    Ok(ExitCode::Ok)
}

/// The bound socket and the running coordinator, with its event log; `None` when a live
/// coordinator of the same pi session was found and attached to instead (its lines printed).
async fn start(
    printer: &Printer,
    args: &EmbedArgs,
) -> Result<Option<(Server, Embedded, PathBuf)>, Error> {
    if let Some(session) = &args.session
        && let Some(existing) = running(session)?
    {
        attach(printer, session, &existing)?;
        return Ok(None);
    }
    let plan = Plan::new(args)?;
    let events = plan.events();
    let server = match Server::bind_logged_coordinator(
        plan.root_id,
        plan.loaded.cwd.clone(),
        Some(events.clone()),
    ) {
        Ok(server) => server,
        // Another `serve` of this session bound first, between the check and here.
        Err(BindError {
            error: ServerError::InUse { .. },
            ..
        }) if let Some(session) = &args.session => {
            let Some(existing) = running(session)? else {
                return Err(Error::Environment(format!(
                    "the coordinator of pi session {} was listening and is gone; start again",
                    session.id
                )));
            };
            attach(printer, session, &existing)?;
            return Ok(None);
        }
        Err(e) => return Err(Error::Environment(e.to_string())),
    };
    if args.session.is_some()
        && let Err(e) = crate::store::event_log::retire_previous(&events)
    {
        server.discard();
        return Err(Error::Environment(e.to_string()));
    }
    match Embedded::launch(plan, args).await {
        Ok(embedded) => Ok(Some((server, embedded, events))),
        Err(e) => {
            server.discard();
            Err(e)
        }
    }
}

/// Completes when stdin reached its end (`None`: never).
async fn closed(stdin: Option<&mut oneshot::Receiver<()>>) {
    match stdin {
        // A dropped sender (the reader thread died) is an end too: the lifeline is gone.
        Some(rx) => {
            let _ = rx.await;
        }
        None => std::future::pending().await,
    }
}

/// Reads and discards stdin on a thread of its own until end of file or an error; the
/// receiver completes then. (A plain thread, not the runtime's blocking pool: a read that
/// never ends must not hold up the runtime's exit.)
fn watch_stdin() -> Result<oneshot::Receiver<()>, Error> {
    let (tx, rx) = oneshot::channel();
    std::thread::Builder::new()
        .name("slate-stdin".to_owned())
        .spawn(move || {
            let mut stdin = std::io::stdin().lock();
            let mut buf = [0_u8; 4096];
            loop {
                match stdin.read(&mut buf) {
                    Ok(0) => break,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
            let _ = tx.send(());
        })
        .map_err(|e| Error::Environment(format!("cannot watch stdin: {e}")))?;
    Ok(rx)
}

/// The live coordinator already serving this session's parent id, if one does.
fn running(session: &PiSession) -> Result<Option<Located>, Error> {
    RuntimeDir::from_env()
        .find_parent_connected(&session.id.to_string())
        .map_err(|e| Error::Environment(e.to_string()))
}

/// Prints the lines of the coordinator already serving `session` and exits 0.
fn attach(printer: &Printer, session: &PiSession, existing: &Located) -> Result<(), Error> {
    let metadata: Option<&Metadata> = existing.endpoint.metadata.as_ref();
    // Its own record of its log; one from before `events` was recorded has the same
    // layout under the session directory this session names.
    let events = metadata.and_then(|m| m.events.clone()).or_else(|| {
        session.session_dir.as_deref().map(|dir| {
            crate::store::paths::event_log_path(&crate::store::paths::delegation_dir(
                dir, session.id,
            ))
        })
    });
    let events = events.unwrap_or_else(|| PathBuf::from("-"));
    print_lines(
        printer,
        session.id,
        &existing.endpoint.socket,
        &events,
        true,
    )?;
    if !printer.json() {
        let pid = metadata.map_or_else(|| "?".to_owned(), |m| m.pid.to_string());
        printer.err_line(&format!(
            "slate serve: pi session {} is already served (pid {pid}); attached",
            session.id
        ));
    }
    Ok(())
}

/// The first lines of `slate serve`: `slate serve: parent <id>`, `socket <path>`,
/// `events <path>` (or the JSON document).
fn print_lines(
    printer: &Printer,
    parent_id: uuid::Uuid,
    socket: &Path,
    events: &Path,
    attached: bool,
) -> std::io::Result<()> {
    if printer.json() {
        printer.value(&ServeOutput {
            parent_id,
            socket,
            events,
            attached,
        })
    } else {
        printer.out(&format!(
            "slate serve: parent {parent_id}\nsocket {}\nevents {}\n",
            socket.display(),
            events.display()
        ))
    }
}

/// `slate serve --json`: where the coordinator listens and logs.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct ServeOutput<'a> {
    parent_id: uuid::Uuid,
    socket: &'a Path,
    events: &'a Path,
    /// A live coordinator of the same pi session was found, and this is its.
    attached: bool,
}
