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

/// Events flow from workers to the runtime on this channel.
pub type EventSink = mpsc::UnboundedSender<(ChildRef, WorkerEvent)>;

/// Starts workers.
pub trait WorkerBackend: Send + Sync + 'static {
    /// Start a worker for `start`. The returned sender carries commands to it; events go to
    /// `events`. Must not block: spawn tasks for the work.
    fn start(
        &self,
        start: WorkerStart,
        dirs: WorkerDirs,
        events: EventSink,
    ) -> mpsc::UnboundedSender<WorkerCommand>;

    /// A short name for diagnostics (`pi`, `sim`).
    fn name(&self) -> &'static str;
}
