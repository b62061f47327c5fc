//! `slate serve`: a headless coordinator for the current directory behind its control socket.
//! Prints its parent id and socket path; runs until SIGINT/SIGTERM (or a `shutdown` request),
//! then stops accepting, drains every worker and removes its socket.

use std::sync::Arc;

use tokio::signal::unix::{SignalKind, signal};

use crate::cli::embedded::{EmbedArgs, Embedded};
use crate::cli::{ExitCode, Printer};
use crate::control::service::Service;
use crate::control::{Metadata, RuntimeDir, Server, ServerConfig};
use crate::runtime::RuntimeEvent;

pub fn run(printer: &Printer, args: &EmbedArgs) -> ExitCode {
    match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt.block_on(serve(printer, args)),
        Err(e) => {
            printer.error(&format!("cannot start the async runtime: {e}"));
            ExitCode::Usage
        }
    }
}

async fn serve(printer: &Printer, args: &EmbedArgs) -> ExitCode {
    let (Ok(mut sigint), Ok(mut sigterm)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        printer.error("cannot install signal handlers");
        return ExitCode::Usage;
    };
    let Some(embedded) = Embedded::start(printer, args).await else {
        return ExitCode::Usage;
    };
    let dir = RuntimeDir::from_env();
    let socket = dir.socket_path(embedded.root_id);
    let metadata = Metadata {
        pid: std::process::id(),
        cwd: embedded.loaded.cwd.clone(),
        parent_id: embedded.root_id,
        started_at: crate::runtime::now_ms(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        socket: socket.clone(),
    };
    let server = match Server::bind(&socket, metadata, ServerConfig::default()) {
        Ok(server) => server,
        Err(e) => {
            printer.error(&format!("cannot serve on {}: {e}", socket.display()));
            let _ = embedded.rt.shutdown().await;
            return ExitCode::Usage;
        }
    };
    let Embedded {
        rt,
        join,
        loaded,
        models,
        offered,
        root_id,
        routing,
        delegation_dir,
    } = embedded;
    let service = Arc::new(Service::new(rt.clone(), loaded, models, offered).with_routing(routing));
    if printer.json() {
        printer.value(&serde_json::json!({
            "parentId": root_id,
            "socket": socket,
            "events": delegation_dir.join("events.jsonl"),
        }));
    } else {
        printer.out(&format!(
            "slate serve: parent {root_id}\nsocket {}\nevents {}\n",
            socket.display(),
            delegation_dir.join("events.jsonl").display()
        ));
    }
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
    ExitCode::Ok
}
