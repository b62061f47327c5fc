//! Starting a coordinator for the current directory (shared by `slate run` and
//! `slate serve`): policy, the root model, the worker backend (with pi's version gate before
//! any identity exists) and the runtime.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::cli::Error;
use crate::config::Loaded;
use crate::config::live::LivePolicy;
use crate::config::routing::load_routing;
use crate::control::Server;
use crate::control::service::Service;
use crate::control::session_routing::SessionRouting;
use crate::core::ModelSelection;
use crate::policy::capabilities::{OfferedTool, pi_offered_tools};
use crate::policy::model::ModelContext;
use crate::policy::{Problem, Problems};
use crate::runtime::{RuntimeConfig, RuntimeHandle, RuntimeReport, WorkerBackend, spawn_watching};
use crate::store::paths;
use crate::worker::contain::Containment;
use crate::worker::pi::version_cache::{self, VersionCache};
use crate::worker::pi::{PiBackend, PiCommand};
use crate::worker::reaper::Subreaper;
use crate::worker::sim::{ScriptBook, SimBackend};

/// Which workers run the tasks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Backend {
    /// Real `pi --mode rpc` processes (`$SLATE_PI` or `pi` on PATH).
    Pi,
    /// The scripted simulated worker (`assets/demo/scripts.json`, or `--scenario FILE`).
    Sim,
}

pub struct EmbedArgs {
    pub backend: Backend,
    /// A script book for the simulated backend.
    pub scenario: Option<PathBuf>,
    pub approve: Option<bool>,
    pub model: Option<String>,
    /// How long shutdown waits for aborted workers before signalling them.
    pub kill_grace: Duration,
    /// The pi session this coordinator belongs to (`slate serve --pi-session`), if any.
    pub session: Option<PiSession>,
    /// Keep pre-started pi workers (`pool` in `delegation.json`): coordinators that wait for
    /// delegations (serve, mcp, hub); not `slate run`, which admits its whole file at once.
    pub prestart: bool,
}

/// A coordinator for one pi session (`slate serve --pi-session ID --session-dir DIR
/// --host-version V`, started by Slate's extension in the user's pi): the parent id is the
/// session's id, its storage `delegation/<id>/` under the session's directory, and the host
/// pi's version is gated at the coordinator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PiSession {
    pub id: uuid::Uuid,
    /// pi's session directory for this cwd (default: pi's default one).
    pub session_dir: Option<PathBuf>,
    /// pi's `VERSION` in the host session, checked by the supported-host gate.
    pub host_version: Option<String>,
}

impl PiSession {
    /// Whether the host pi fails the supported-host gate (then nothing can be launched).
    fn host_unsupported(&self) -> bool {
        self.host_version
            .as_deref()
            .is_some_and(|v| crate::policy::version::check_host_version(v).is_err())
    }
}

/// A running coordinator and what it was resolved against.
pub struct Embedded {
    pub rt: RuntimeHandle,
    pub join: tokio::task::JoinHandle<RuntimeReport>,
    /// The policy as resolved at start (the directories, the root model's settings).
    pub loaded: Loaded,
    /// The delegation policy as it is now: the runtime and the control service read it at
    /// every admission, renewal, resume and dequeue opportunity.
    pub policy: Arc<LivePolicy>,
    pub models: ModelContext,
    pub offered: Vec<OfferedTool>,
    pub root_id: uuid::Uuid,
    pub delegation_dir: PathBuf,
    /// The session's routing policy, admission order and remembered providers.
    pub routing: Arc<SessionRouting>,
}

/// Shut the runtime down and wait for it.
pub async fn rt_shutdown(embedded: &Embedded) -> Result<(), crate::runtime::RuntimeError> {
    embedded.rt.shutdown().await
}

/// What a coordinator for this directory is resolved against, before anything runs: the
/// policy, the root model, the parent id and where its storage goes. `slate serve` binds its
/// socket between this and [`Embedded::launch`], so one parent id never has two runtimes.
pub struct Plan {
    pub loaded: Loaded,
    pub policy: Arc<LivePolicy>,
    pub models: ModelContext,
    pub root_id: uuid::Uuid,
    pub delegation_dir: PathBuf,
    pub routing: Arc<SessionRouting>,
}

impl Plan {
    /// The policy and model of the current directory (every failure is exit 2 territory);
    /// the parent id is the pi session's, else a fresh one.
    pub fn new(args: &EmbedArgs) -> Result<Self, Error> {
        let cwd = std::env::current_dir().map_err(|e| {
            Error::Environment(format!("the current directory cannot be read: {e}"))
        })?;
        let (policy, loaded) = watch_policy(&cwd, args.approve)
            .map_err(|problems| Error::problems("the delegation policy is invalid", problems.0))?;
        // Routing problems do not stop the session: they block logical work, which names
        // them and points to `slate effective`; exact selections keep working.
        let routing = SessionRouting::new(
            load_routing(&cwd, args.approve)
                .ok()
                .map(|loaded| loaded.report),
        );
        let parent = root_model(&loaded, args.model.as_deref())
            .map_err(|problem| Error::problems("no model for the root", vec![problem]))?;
        let models = ModelContext {
            known_providers: BTreeSet::from([parent.provider.clone()]),
            parent,
            operator_grants: Vec::new(),
            parent_allowlist: None,
        };
        let session = args.session.as_ref();
        let root_id = session.map_or_else(uuid::Uuid::new_v4, |s| s.id);
        let configured = session.and_then(|s| s.session_dir.as_deref());
        let session_dir = paths::parent_session_dir(configured, &loaded.agent_dir, &loaded.cwd)
            .map_err(|e| Error::Environment(e.to_string()))?;
        let delegation_dir = paths::delegation_dir(&session_dir, root_id);
        Ok(Self {
            loaded,
            policy,
            models,
            root_id,
            delegation_dir,
            routing,
        })
    }

    /// `<delegation dir>/events.jsonl`.
    pub fn events(&self) -> PathBuf {
        paths::event_log_path(&self.delegation_dir)
    }
}

impl Embedded {
    /// Everything up to a running runtime (every failure is exit 2 territory).
    pub async fn start(args: &EmbedArgs) -> Result<Self, Error> {
        Self::launch(Plan::new(args)?, args).await
    }

    /// The worker backend and the runtime of `plan`.
    pub async fn launch(plan: Plan, args: &EmbedArgs) -> Result<Self, Error> {
        let Plan {
            loaded,
            policy,
            models,
            root_id,
            delegation_dir,
            routing,
        } = plan;
        let backend: Arc<dyn WorkerBackend> = match args.backend {
            Backend::Sim => {
                let book = match &args.scenario {
                    None => crate::demo::script_book(),
                    Some(file) => {
                        let parsed = std::fs::read_to_string(file)
                            .map_err(|e| e.to_string())
                            .and_then(|text| ScriptBook::parse(&text).map_err(|e| e.to_string()));
                        parsed.map_err(|e| {
                            Error::Usage(format!("--scenario {}: {e}", file.display()))
                        })?
                    }
                };
                Arc::new(SimBackend::new(book))
            }
            // The host pi fails the gate: the coordinator refuses every launch
            // (`unsupported-host`), so the workers' pi is not asked (it is likely the same
            // pi) and status, stop and the other controls still come up.
            Backend::Pi
                if args
                    .session
                    .as_ref()
                    .is_some_and(PiSession::host_unsupported) =>
            {
                Arc::new(contained(PiBackend::new(PiCommand::from_env()))?)
            }
            Backend::Pi => {
                let pi = PiCommand::from_env();
                // The version gate runs before any identity exists: fail closed, naming both.
                // An unchanged pi is not run again (`worker::pi::version_cache`), and the
                // backend reuses this check instead of running its own.
                let cache = VersionCache::user();
                let (version, _) = version_cache::check_version(&pi, cache.as_ref())
                    .await
                    .map_err(|e| {
                        Error::Environment(format!("pi cannot run delegated work: {e}"))
                    })?;
                let backend = contained(PiBackend::with_version(pi, version))?;
                // Only a coordinator that waits for delegations keeps a pool: `slate run`
                // admits its whole file at once, and a replacement it started would only
                // compete with its workers and be ended at its exit.
                Arc::new(if args.prestart {
                    let concurrency = loaded.profiles.scheduling.concurrency;
                    backend.with_pool(loaded.profiles.pool, concurrency)
                } else {
                    backend
                })
            }
        };
        let config = RuntimeConfig {
            root_id,
            policy: loaded.profiles.scheduling,
            id_seed: uuid::Uuid::new_v4().as_u64_pair().0,
            delegation_dir: delegation_dir.clone(),
            event_log: true,
            kill_grace: args.kill_grace,
        };
        let (rt, join) = spawn_watching(config, Arc::clone(&backend), policy.clone())
            .map_err(|e| Error::Environment(e.to_string()))?;
        // Pre-started workers for this coordinator's workspace, once its socket is bound.
        if args.prestart {
            backend.prestart(&loaded.cwd, rt.actors());
        }
        Ok(Self {
            rt,
            join,
            loaded,
            policy,
            models,
            offered: pi_offered_tools(),
            root_id,
            delegation_dir,
            routing,
        })
    }
}

/// `backend`'s workers under this `slate` binary's containment processes and, on Linux,
/// this coordinator as their subreaper of last resort (`worker::reaper`): a process that
/// leaves a worker's tree, even by killing its containment process, stays below this one
/// and speaks for nobody. Failing that, no coordinator runs pi workers (exit 2 territory).
fn contained(backend: PiBackend) -> Result<PiBackend, Error> {
    let backend = backend.with_containment(Containment::this_slate_binary());
    if !cfg!(target_os = "linux") {
        return Ok(backend);
    }
    let subreaper = Subreaper::adopt().map_err(Error::Environment)?;
    Ok(backend.with_subreaper(subreaper))
}

/// The delegation policy of `cwd`, watched from now on, and what it resolves to now.
fn watch_policy(cwd: &Path, approve: Option<bool>) -> Result<(Arc<LivePolicy>, Loaded), Problems> {
    let policy = LivePolicy::watch(cwd, approve)?;
    let loaded = policy.current().map_err(|e| e.problems)?;
    Ok((Arc::new(policy), Loaded::clone(&loaded)))
}

/// The root's own model: `--model provider/id[:effort]`, else pi's settings defaults.
fn root_model(loaded: &Loaded, flag: Option<&str>) -> Result<ModelSelection, Problem> {
    if let Some(text) = flag {
        // The root names its own provider, so it is the one known provider here; the policy
        // parser then checks the id and the effort name like any other selection.
        let provider = text.split('/').next().unwrap_or_default().to_owned();
        return crate::policy::model::parse_selection_text(
            text,
            &BTreeSet::from([provider]),
            "--model",
        )
        .map_err(|problems| {
            problems
                .into_iter()
                .next()
                .unwrap_or_else(|| Problem::new("--model", "must be provider/id[:effort]"))
        });
    }
    let settings_path = loaded.agent_dir.join("settings.json");
    let settings: Value = std::fs::read(&settings_path)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or(Value::Null);
    let text = |key: &str| settings.get(key).and_then(Value::as_str).map(str::to_owned);
    match (text("defaultProvider"), text("defaultModel")) {
        (Some(provider), Some(id)) => Ok(ModelSelection {
            provider,
            id,
            effort: text("defaultThinkingLevel"),
        }),
        _ => Err(Problem::new(
            "--model",
            format!(
                "no model: pass --model provider/id, or set defaultProvider and defaultModel in {}",
                settings_path.display()
            ),
        )),
    }
}

/// The coordinator's control socket served in the background, for the commands that do not
/// serve it themselves (`slate run`): a pi worker's extension asks the coordinator before
/// every model request and tool, and presents its capability there. It also lets
/// `slate status`, `subagent-status` and the Hub see the run while it lasts.
pub struct BackgroundControl {
    socket: PathBuf,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl BackgroundControl {
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Stop accepting, answer what is in flight, remove the socket.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
    }
}

/// An [`Embedded`] coordinator taken apart for a control server that owns it: the runtime,
/// its join handle, the parent id and the control service over its policy, models, offered
/// tools and routing (`slate serve`, `slate hub`'s embedded coordinator, `slate mcp`).
pub struct Served {
    pub rt: RuntimeHandle,
    pub join: tokio::task::JoinHandle<RuntimeReport>,
    pub root_id: uuid::Uuid,
    pub service: Service,
}

impl Embedded {
    /// This coordinator as [`Served`] parts (one place builds its control service).
    pub fn into_served(self) -> Served {
        let service = Service::new(self.rt.clone(), self.policy, self.models, self.offered)
            .with_routing(self.routing);
        Served {
            rt: self.rt,
            join: self.join,
            root_id: self.root_id,
            service,
        }
    }

    /// Bind this coordinator's socket and serve it until [`BackgroundControl::stop`]. Workers
    /// dispatched after this returns are told the socket (it is set before the first accept,
    /// not when the server task first runs).
    pub fn serve_in_background(&self) -> Result<BackgroundControl, String> {
        let server = Server::bind_coordinator(self.root_id, self.loaded.cwd.clone())?;
        let service = Arc::new(
            Service::new(
                self.rt.clone(),
                Arc::clone(&self.policy),
                self.models.clone(),
                self.offered.clone(),
            )
            .with_routing(Arc::clone(&self.routing)),
        );
        let socket = server.socket().to_owned();
        self.rt.actors().set_socket(&socket);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(server.run(service, async move {
            let _ = stopped.await;
        }));
        Ok(BackgroundControl { socket, stop, task })
    }
}
