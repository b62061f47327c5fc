//! The seam between the runtime and worker backends (pi over RPC, the simulated worker).
//!
//! A backend starts one worker per dispatched generation. It reports what the worker does as
//! [`WorkerEvent`]s on the runtime's channel and obeys [`WorkerCommand`]s. The core decides;
//! backends only report and obey. Every worker must eventually report
//! [`WorkerEvent::Exited`] exactly once, whatever happens (that is how the runtime knows the
//! process is gone and the permit can be released).

use std::path::PathBuf;

use tokio::sync::mpsc;

use crate::core::{ChildRef, MessageId, MessageMode, WorkerEvent, WorkerStart};
use crate::runtime::actors::{ActorRegistry, Capability};

/// What the runtime tells one worker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WorkerCommand {
    /// Abort the current work (cancellation, limit or pause); keep reporting until it settles.
    Abort,
    /// Deliver a steer or follow-up message.
    Message {
        id: MessageId,
        mode: MessageMode,
        text: String,
    },
    /// The prompt resolved: close input and let the worker exit.
    Release,
    /// Shutdown escalation: terminate the worker's own process group (SIGTERM, then SIGKILL).
    Kill,
}

/// Where a worker keeps its files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerDirs {
    /// `<delegation>/<task-id>[-g<N>]`.
    pub task: PathBuf,
    /// `<task>/agent`: the worker's private scratch/agent directory.
    pub agent: PathBuf,
    /// `<task>/transcripts`: the worker's session directory.
    pub transcripts: PathBuf,
}

impl WorkerDirs {
    /// `<transcripts>/session.jsonl`: the worker's session file (its transcript).
    pub fn session_file(&self) -> PathBuf {
        self.transcripts.join(crate::store::paths::SESSION_FILE)
    }
}

/// What makes one worker process that generation's actor on the control socket: its secret
/// capability (handed over on a pipe, [`WorkerIdentity::capability_pipe`]), the socket to
/// present it on ([`WORKER_SOCKET_ENV`]), and where to report the process id (a process
/// descending from it then speaks as this generation). `Debug` is redacted.
#[derive(Clone, Debug)]
pub struct WorkerIdentity {
    child: ChildRef,
    capability: Capability,
    socket: Option<PathBuf>,
    /// The host extensions this worker loads after Slate's own (`workerExtensions`).
    extensions: std::sync::Arc<[crate::policy::host_extensions::WorkerExtension]>,
    registry: ActorRegistry,
}

/// Names the file descriptor on which a worker process finds its capability
/// ([`CAPABILITY_FD`]).
///
/// Why a descriptor and not an environment variable: a process's initial environment stays
/// readable in `/proc/<pid>/environ` by every process of the same user for the process's
/// whole life, whatever the process later removes from its own environment, so anything the
/// model runs in `bash` could read it. A pipe is read once by Slate's extension at load
/// (before any tool can run) and closed: nothing started later inherits it, and nothing is
/// left to read. Never on a command line, in a file or a log either.
pub const WORKER_CAPABILITY_FD_ENV: &str = "SLATE_CAPABILITY_FD";
/// The descriptor number of the capability pipe in the worker process.
pub const CAPABILITY_FD: i32 = 3;
/// The coordinator's control socket, in the worker's environment.
pub const WORKER_SOCKET_ENV: &str = "SLATE_SOCKET";

impl WorkerIdentity {
    pub(crate) fn new(child: ChildRef, capability: Capability, registry: ActorRegistry) -> Self {
        Self {
            child,
            socket: registry.socket(),
            extensions: registry.worker_extensions(),
            capability,
            registry,
        }
    }

    pub fn capability(&self) -> &Capability {
        &self.capability
    }

    pub fn socket(&self) -> Option<&std::path::Path> {
        self.socket.as_deref()
    }

    /// The host session's extensions this worker loads too (`workerExtensions`).
    pub fn extensions(&self) -> &[crate::policy::host_extensions::WorkerExtension] {
        &self.extensions
    }

    /// The environment a worker process gets: where its capability is
    /// ([`WORKER_CAPABILITY_FD_ENV`]), and the socket when one is bound. The capability itself
    /// is never in the environment.
    pub fn environment(&self) -> Vec<(&'static str, std::ffi::OsString)> {
        let mut env = vec![(WORKER_CAPABILITY_FD_ENV, CAPABILITY_FD.to_string().into())];
        if let Some(socket) = &self.socket {
            env.push((WORKER_SOCKET_ENV, socket.clone().into_os_string()));
        }
        env
    }

    /// The read end of a pipe that holds the capability and then ends (the write end is
    /// closed here): to become [`CAPABILITY_FD`] of the worker process. Close-on-exec in this
    /// process, so no other child inherits it. 64 bytes fit the pipe buffer: never blocks.
    ///
    /// From this call on the capability is bound to the worker process's tree: it admits
    /// nothing until [`Self::report_pid`], then only that process and its descendants.
    pub fn capability_pipe(&self) -> std::io::Result<std::os::fd::OwnedFd> {
        use std::io::Write as _;
        self.registry
            .handed_to_process(self.child, &self.capability);
        let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
        std::fs::File::from(write).write_all(self.capability.expose().as_bytes())?;
        Ok(read)
    }

    /// What a pre-started process (`worker::pi::pool`) reads on its descriptor 3 when it is
    /// bound to this generation, instead of the bare capability: one JSON object with the
    /// `capability`, the worker's `systemPrompt` and its active `tools` (read by
    /// `extension/identity.ts`). As [`Self::capability_pipe`], from this call on the
    /// capability is bound to the process tree [`Self::report_pid`] names next. The bytes
    /// hold the secret: write them to the pipe and drop them.
    pub fn pooled_binding(&self, system_prompt: &str, tools: &[&str]) -> Vec<u8> {
        self.registry
            .handed_to_process(self.child, &self.capability);
        serde_json::to_vec(&serde_json::json!({
            "capability": self.capability.expose(),
            "systemPrompt": system_prompt,
            "tools": tools,
        }))
        .unwrap_or_default()
    }

    /// The worker process exists as `pid`: it and its descendants are this generation.
    pub fn report_pid(&self, pid: u32) {
        self.registry.set_pid(self.child, &self.capability, pid);
    }
}

/// Events flow from workers to the runtime on this channel.
pub type EventSink = mpsc::UnboundedSender<(ChildRef, WorkerEvent)>;

/// Starts workers.
pub trait WorkerBackend: Send + Sync + 'static {
    /// Start a worker for `start`. The returned sender carries commands to it; events go to
    /// `events`. A backend that runs a process gives it `identity`'s environment and reports
    /// its pid. Must not block: spawn tasks for the work.
    fn start(
        &self,
        start: WorkerStart,
        dirs: WorkerDirs,
        identity: WorkerIdentity,
        events: EventSink,
    ) -> mpsc::UnboundedSender<WorkerCommand>;

    /// A short name for diagnostics (`pi`, `sim`).
    fn name(&self) -> &'static str;

    /// Start what makes later workers in workspace `cwd` quicker (the pi backend's pool),
    /// once `registry`'s socket is bound. Must not block.
    fn prestart(&self, _cwd: &std::path::Path, _registry: &crate::runtime::actors::ActorRegistry) {}

    /// The coordinator shut down: end what [`Self::prestart`] started, and start no more.
    fn drain(&self) {}
}
