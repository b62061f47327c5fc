//! `slate serve`: a headless coordinator for the current directory behind its control socket.
//! Prints its parent id and socket path; runs until SIGINT/SIGTERM (or a `shutdown` request),
//! then stops accepting, drains every worker and removes its socket.

use std::sync::Arc;

use tokio::signal::unix::{SignalKind, signal};

use crate::cli::embedded::{EmbedArgs, Embedded};
use crate::cli::{Error, ExitCode, Printer};
use crate::control::Server;
use crate::control::service::Service;
use crate::runtime::RuntimeEvent;

pub fn run(printer: &Printer, args: &EmbedArgs) -> Result<ExitCode, Error> {
    crate::cli::fleet::block_on_multi(|| serve(printer, args))
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
    let embedded = Embedded::start(args).await?;
    let server = match Server::bind_coordinator(embedded.root_id, embedded.loaded.cwd.clone()) {
        Ok(server) => server,
        Err(e) => {
            let _ = embedded.rt.shutdown().await;
            return Err(Error::Environment(e));
        }
    };
    let socket = server.socket().to_owned();
    let Embedded {
        rt,
        join,
        policy,
        models,
        offered,
        root_id,
        routing,
        delegation_dir,
        ..
    } = embedded;
    let service = Arc::new(Service::new(rt.clone(), policy, models, offered).with_routing(routing));
    // A closed stdout does not stop the coordinator: it serves its socket, not the pipe.
    let _ = if printer.json() {
        printer.value(&ServeOutput {
            parent_id: root_id,
            socket: &socket,
            events: &delegation_dir.join("events.jsonl"),
        })
    } else {
        printer.out(&format!(
            "slate serve: parent {root_id}\nsocket {}\nevents {}\n",
            socket.display(),
            delegation_dir.join("events.jsonl").display()
        ))
    };
    let mut runtime_events = rt.subscribe();
    // Stop on a signal, or when the runtime finished shutting down (a `shutdown` request).
    let stop = async move {
        loop {
            tokio::select! {
                _ = sigint.recv() => break,
                _ = sigterm.recv() => break,
                event = runtime_events.recv() => match event {
                    Ok(RuntimeEvent::ShutdownComplete)
                    | Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                    _ => {}
                },
            }
        }
    };
    server.run(service, stop).await;
    if !printer.json() {
        printer.err_line("slate serve: stopping every worker and draining…");
    }
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

/// `slate serve --json`: where the coordinator listens and logs.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct ServeOutput<'a> {
    parent_id: uuid::Uuid,
    socket: &'a std::path::Path,
    events: &'a std::path::Path,
}
