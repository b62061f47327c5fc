//! Real pi 1.6 workers under Slate's runtime, for the tests that run them: a fake LLM, a
//! private pi agent dir, and the runtime served on its own control socket (a pi worker's Slate
//! extension asks its coordinator before every model request and tool). Include it with
//! `#[path = "support/pi_runtime.rs"] mod pi_runtime;` next to `fake_llm` and `pi_env`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::fake_llm::FakeLlm;
use crate::pi_env::{self, PiSandbox};
use slate::core::{ChildRef, ChildSnapshot, ModelSelection, Party, Reply, Role, Status, TaskSpec};
use slate::policy::scheduling::SchedulingPolicy;
use slate::runtime::{RuntimeConfig, RuntimeEvent, RuntimeHandle, RuntimeReport, spawn};
use slate::worker::contain::Containment;
use slate::worker::pi::{PiBackend, PiCommand};

pub const OUTCOME_TIMEOUT: Duration = Duration::from_secs(120);

/// Workers under the built `slate` binary's containment process, as `slate run` starts them
/// (the test binary itself cannot be one).
pub fn contained() -> Containment {
    Containment::Subreaper {
        program: PathBuf::from(env!("CARGO_BIN_EXE_slate")),
    }
}

/// A served runtime ([`Env::start_served`]).
pub struct Served {
    pub rt: RuntimeHandle,
    pub join: tokio::task::JoinHandle<RuntimeReport>,
    pub socket: PathBuf,
    pub root_id: uuid::Uuid,
}

pub struct Env {
    pub fake: FakeLlm,
    pub sandbox: PiSandbox,
    pub pi: PiCommand,
    pub delegation: PathBuf,
}

impl Env {
    /// Real pi with its fake server and a private agent dir; `None` when pi is absent.
    pub fn real(test: &str) -> Option<Self> {
        let located = pi_env::pi_or_skip(test)?;
        let fake = FakeLlm::start().unwrap();
        let sandbox = PiSandbox::new(test, &fake.base_url()).unwrap();
        let std_command = sandbox.command(&located, &[] as &[&str]);
        let pi = PiCommand {
            program: std_command.get_program().to_owned(),
            leading: std_command.get_args().map(ToOwned::to_owned).collect(),
            env: std_command
                .get_envs()
                .filter_map(|(k, v)| v.map(|v| (k.to_owned(), v.to_owned())))
                .collect(),
        };
        let delegation = sandbox.root().join("delegation");
        Some(Self {
            fake,
            sandbox,
            pi,
            delegation,
        })
    }

    /// A runtime with real pi workers, served on its own control socket (a pi worker's Slate
    /// extension asks its coordinator before every model request and tool). The server
    /// stops once the runtime has shut down.
    pub fn start(
        &self,
        concurrency: u32,
    ) -> (RuntimeHandle, tokio::task::JoinHandle<RuntimeReport>) {
        let served = self.start_served(
            concurrency,
            Arc::new(PiBackend::new(self.pi.clone()).with_containment(contained())),
        );
        (served.rt, served.join)
    }

    /// [`Env::start`] with a given backend, also telling the socket.
    pub fn start_served(&self, concurrency: u32, backend: Arc<PiBackend>) -> Served {
        let config = RuntimeConfig {
            root_id: uuid::Uuid::new_v4(),
            policy: SchedulingPolicy {
                concurrency,
                ..SchedulingPolicy::default()
            },
            id_seed: 11,
            delegation_dir: self.delegation.clone(),
            event_log: true,
            kill_grace: Duration::from_secs(10),
        };
        let root_id = config.root_id;
        let (rt, join) = spawn(config, backend).unwrap();
        let work = std::fs::canonicalize(&self.sandbox.work).unwrap();
        let (socket, server, stop) = serve_pi(self, &rt, root_id, &work);
        let mut events = rt.subscribe();
        let run = socket.parent().map(Path::to_owned);
        tokio::spawn(async move {
            loop {
                match events.recv().await {
                    Ok(RuntimeEvent::ShutdownComplete)
                    | Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                    _ => {}
                }
            }
            let _ = stop.send(());
            let _ = server.await;
            if let Some(run) = run {
                let _ = std::fs::remove_dir_all(run);
            }
        });
        Served {
            rt,
            join,
            socket,
            root_id,
        }
    }

    pub fn task(&self, assignment: &str, role: Role) -> TaskSpec {
        let mut t = TaskSpec::new(assignment, role, self.sandbox.work.display().to_string());
        t.model = Some(ModelSelection {
            provider: "fake".into(),
            id: "fake-model".into(),
            effort: None,
        });
        t
    }

    /// Whether the fake LLM received at least `n` requests within [`OUTCOME_TIMEOUT`], waiting
    /// without blocking the runtime (which answers the workers' guards).
    pub async fn requests_reach(&self, n: usize) -> bool {
        let deadline = tokio::time::Instant::now() + OUTCOME_TIMEOUT;
        while self.fake.request_count() < n {
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        true
    }

    pub fn leftovers(&self) -> Vec<u32> {
        self.sandbox.leftover_processes()
    }
}

/// Admit `tasks` in the foreground as the root; their identities and the drained window.
pub async fn delegate_and_wait(
    rt: &RuntimeHandle,
    tasks: Vec<TaskSpec>,
) -> (Vec<ChildRef>, slate::core::WindowOutcome) {
    let fg = rt.delegate(Party::Root, tasks).await.unwrap().unwrap();
    let refs = admitted(&fg.admitted);
    let outcome = tokio::time::timeout(OUTCOME_TIMEOUT, fg.outcome)
        .await
        .unwrap()
        .unwrap();
    (refs, outcome)
}

pub async fn run_one(env: &Env, task: TaskSpec) -> ChildSnapshot {
    let (rt, join) = env.start(2);
    let fg = rt.delegate(Party::Root, vec![task]).await.unwrap().unwrap();
    let outcome = tokio::time::timeout(OUTCOME_TIMEOUT, fg.outcome)
        .await
        .unwrap()
        .unwrap();
    rt.shutdown().await.unwrap();
    join.await.unwrap();
    outcome.outcomes[0].clone()
}

pub fn admitted(reply: &Reply) -> Vec<ChildRef> {
    match reply {
        Reply::Admitted { children, .. } => children.iter().map(ChildSnapshot::child_ref).collect(),
        other => panic!("not admitted: {other:?}"),
    }
}

pub async fn wait_status(rt: &RuntimeHandle, r: ChildRef, want: Status) {
    let deadline = tokio::time::Instant::now() + OUTCOME_TIMEOUT;
    while tokio::time::Instant::now() < deadline {
        if rt
            .snapshot(r)
            .await
            .unwrap()
            .is_some_and(|s| s.status == want)
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{r} never reached {want}");
}

/// Runtimes served so far by this test process (each gets its own socket directory).
static RUNS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

pub fn serve_pi(
    env: &Env,
    rt: &RuntimeHandle,
    root_id: uuid::Uuid,
    work: &Path,
) -> (
    PathBuf,
    tokio::task::JoinHandle<()>,
    tokio::sync::oneshot::Sender<()>,
) {
    use slate::control::service::Service;
    use slate::control::{Handler, Metadata, Server, ServerConfig};
    use slate::policy::profiles::{ConfigFile, resolve};

    let agent = env.sandbox.root().join("agent");
    let operator_file = agent.join("delegation.json").display().to_string();
    let project_file = work.join(".pi/delegation.json").display().to_string();
    let profiles = resolve(
        ConfigFile {
            path: &operator_file,
            text: None,
        },
        ConfigFile {
            path: &project_file,
            text: None,
        },
        false,
        &slate::store::fs::RealFs,
    )
    .unwrap();
    let loaded = slate::config::Loaded {
        cwd: work.to_owned(),
        agent_dir: agent,
        trust: None,
        profiles,
    };
    let parent = ModelSelection {
        provider: "fake".into(),
        id: "fake-model".into(),
        effort: None,
    };
    let models = slate::policy::model::ModelContext {
        known_providers: std::iter::once(parent.provider.clone()).collect(),
        parent,
        operator_grants: Vec::new(),
        parent_allowlist: None,
    };
    let service: Arc<dyn Handler> = Arc::new(Service::new(
        rt.clone(),
        loaded,
        models,
        slate::policy::capabilities::pi_offered_tools(),
    ));
    // Short (a socket path has at most ~107 bytes) and one per runtime of this process.
    let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let run = std::env::temp_dir().join(format!("slate-pe-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&run);
    let socket = run.join("c.sock");
    let metadata = Metadata {
        pid: std::process::id(),
        cwd: work.to_owned(),
        parent_id: root_id,
        started_at: slate::runtime::now_ms(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        socket: PathBuf::new(),
        events: None,
    };
    let server = Server::bind(&socket, metadata, ServerConfig::default()).unwrap();
    // Before the first worker is dispatched, not when the server task first runs.
    rt.actors().set_socket(&socket);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(server.run(service, async move {
        let _ = stopped.await;
    }));
    (socket, server, stop)
}
