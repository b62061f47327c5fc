//! `slate demo` in real time: an embedded coordinator with simulated workers behind the
//! control socket of this directory, a scripted root driving it (`demo::live`), and the Hub
//! attached to it (or, with `--serve`, nothing attached: other terminals use `slate hub`,
//! `slate status`, `slate stop`, … against it). No network, no credentials.
//!
//! Artifacts go to a private temporary directory that is removed at exit; the event log is
//! off (the demo leaves nothing behind).

use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::cli::{Error, ExitCode, Printer};
use crate::config::load;
use crate::control::Server;
use crate::control::service::Service;
use crate::core::ModelSelection;
use crate::demo::live;
use crate::policy::capabilities::pi_offered_tools;
use crate::policy::model::ModelContext;
use crate::runtime::{RuntimeConfig, RuntimeHandle, RuntimeReport, spawn};
use crate::worker::sim::SimBackend;

/// A running live demo.
pub struct LiveDemo {
    pub rt: RuntimeHandle,
    pub join: tokio::task::JoinHandle<RuntimeReport>,
    pub root_id: uuid::Uuid,
    pub socket: PathBuf,
    pub cwd: PathBuf,
    /// The private directory holding the demo's task directories.
    scratch: PathBuf,
    server: tokio::task::JoinHandle<()>,
}

impl LiveDemo {
    /// Starts the coordinator and its control server.
    pub async fn start() -> Result<Self, Error> {
        let cwd = std::env::current_dir().map_err(|e| {
            Error::Environment(format!("the current directory cannot be read: {e}"))
        })?;
        // The demo never trusts project configuration.
        let loaded = load(&cwd, Some(false))
            .map_err(|problems| Error::problems("the delegation policy is invalid", problems))?;
        let root_id = uuid::Uuid::new_v4();
        let scratch = std::env::temp_dir().join(format!("slate-demo-{root_id}"));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&scratch)
            .map_err(|e| Error::Environment(format!("cannot create {}: {e}", scratch.display())))?;
        let mut backend = SimBackend::new(live::book());
        backend.setup_ms = live::SETUP_MS;
        let config = RuntimeConfig {
            root_id,
            policy: live::policy(),
            id_seed: uuid::Uuid::new_v4().as_u64_pair().0,
            delegation_dir: scratch.join("delegation"),
            event_log: false,
            kill_grace: Duration::from_secs(2),
        };
        let (rt, join) = match spawn(config, Arc::new(backend)) {
            Ok(started) => started,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&scratch);
                return Err(Error::Environment(e.to_string()));
            }
        };
        let parent = ModelSelection {
            provider: "sim".to_owned(),
            id: "scripted".to_owned(),
            effort: None,
        };
        let models = ModelContext {
            known_providers: std::collections::BTreeSet::from([parent.provider.clone()]),
            parent,
            operator_grants: Vec::new(),
            parent_allowlist: None,
        };
        let server = match Server::bind_coordinator(root_id, loaded.cwd.clone()) {
            Ok(server) => server,
            Err(e) => {
                let _ = rt.shutdown().await;
                let _ = std::fs::remove_dir_all(&scratch);
                return Err(Error::Environment(e));
            }
        };
        let socket = server.socket().to_owned();
        let cwd = loaded.cwd.clone();
        let service = Arc::new(Service::new(rt.clone(), loaded, models, pi_offered_tools()));
        let stop = {
            let mut events = rt.subscribe();
            async move {
                loop {
                    match events.recv().await {
                        Ok(crate::runtime::RuntimeEvent::ShutdownComplete)
                        | Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                        _ => {}
                    }
                }
            }
        };
        let server = tokio::spawn(async move { server.run(service, stop).await });
        Ok(Self {
            rt,
            join,
            root_id,
            socket,
            cwd,
            scratch,
            server,
        })
    }

    /// Starts the scripted root; each step is passed to `note`.
    pub fn drive(&self, note: impl FnMut(String) + Send + 'static) {
        let rt = self.rt.clone();
        let cwd = self.cwd.display().to_string();
        tokio::spawn(async move {
            let _ = live::drive(rt, cwd, note).await;
        });
    }

    /// Stops every worker, drains, removes the socket and the scratch directory.
    pub async fn finish(self) -> RuntimeReport {
        let _ = self.rt.shutdown().await;
        drop(self.rt);
        let report = self.join.await.unwrap_or_default();
        // The server stops once shutdown completed and removes its socket and metadata.
        let _ = self.server.await;
        let _ = std::fs::remove_dir_all(&self.scratch);
        report
    }
}

/// `slate demo --serve`: the live demo with nothing attached, until SIGINT/SIGTERM.
pub fn serve(printer: &Printer) -> Result<ExitCode, Error> {
    crate::cli::fleet::block_on_multi(|| async {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut sigint), Ok(mut sigterm)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) else {
            return Err(Error::Environment(
                "cannot install signal handlers".to_owned(),
            ));
        };
        let demo = LiveDemo::start().await?;
        // A closed stdout does not stop the demo (its socket is what it serves).
        let _ = printer.out(&format!(
            "slate demo: parent {}\nsocket {}\nattach with `slate hub` or `slate status` in {}; Ctrl+C stops\n",
            demo.root_id,
            demo.socket.display(),
            demo.cwd.display()
        ));
        let (tx, mut notes) = tokio::sync::mpsc::unbounded_channel();
        demo.drive(move |note| {
            let _ = tx.send(note);
        });
        let mut done = demo.rt.subscribe();
        loop {
            tokio::select! {
                _ = sigint.recv() => break,
                _ = sigterm.recv() => break,
                note = notes.recv() => if let Some(note) = note {
                    let _ = printer.out(&format!("{}\n", crate::text::SafeText::line(&note)));
                },
                event = done.recv() => if matches!(
                    event,
                    Ok(crate::runtime::RuntimeEvent::ShutdownComplete)
                        | Err(tokio::sync::broadcast::error::RecvError::Closed)
                ) {
                    break;
                },
            }
        }
        printer.err_line("slate demo: stopping every worker…");
        let report = demo.finish().await;
        printer.err_line(&format!(
            "slate demo: stopped ({} simulated worker(s) started)",
            report.workers_started
        ));
        Ok(ExitCode::Ok)
    })
}

/// `slate demo` on a terminal: the live demo with the Hub attached; quitting the Hub stops
/// the demo.
pub fn hub() -> Result<ExitCode, Error> {
    crate::cli::fleet::block_on_multi(|| async {
        let demo = LiveDemo::start().await?;
        let client = match crate::control::Client::connect_path(
            &demo.socket,
            crate::control::client::CONNECT_TIMEOUT,
        )
        .await
        {
            Ok(client) => client,
            Err(e) => {
                demo.finish().await;
                return Err(Error::Environment(format!(
                    "slate demo: cannot attach the Hub: {e}"
                )));
            }
        };
        // The scripted root's steps show up in the Hub as the registry changes they cause.
        demo.drive(|_| {});
        let options = crate::ui::hub::HubOptions {
            title: format!("demo · simulated workers · parent {}", demo.root_id),
            ..crate::ui::hub::HubOptions::default()
        };
        let result = crate::ui::hub::run_hub(client, options).await;
        demo.finish().await;
        result.map_err(|e| Error::Environment(format!("slate demo: {e}")))?;
        Ok(ExitCode::Ok)
    })
}
