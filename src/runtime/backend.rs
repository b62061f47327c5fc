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

/// What makes one worker process that generation's actor on the control socket: its secret
/// capability and the socket to present it on, both for the worker's environment only
/// ([`WORKER_CAPABILITY_ENV`], [`WORKER_SOCKET_ENV`]), and where to report the process id
/// (a process descending from it then speaks as this generation). `Debug` is redacted.
#[derive(Clone, Debug)]
pub struct WorkerIdentity {
    child: ChildRef,
    capability: Capability,
    socket: Option<PathBuf>,
    registry: ActorRegistry,
}

/// The worker's capability, in its environment only (never on a command line or in a file).
pub const WORKER_CAPABILITY_ENV: &str = "SLATE_CAPABILITY";
/// The coordinator's control socket, in the worker's environment.
pub const WORKER_SOCKET_ENV: &str = "SLATE_SOCKET";

impl WorkerIdentity {
    pub(crate) fn new(child: ChildRef, capability: Capability, registry: ActorRegistry) -> Self {
        Self {
            child,
            socket: registry.socket(),
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

    /// The environment a worker process gets: the capability, and the socket when one is
    /// bound.
    pub fn environment(&self) -> Vec<(&'static str, std::ffi::OsString)> {
        let mut env = vec![(WORKER_CAPABILITY_ENV, self.capability.expose().into())];
        if let Some(socket) = &self.socket {
            env.push((WORKER_SOCKET_ENV, socket.clone().into_os_string()));
        }
        env
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
}
