//! The runtime: one tokio task owns the [`Coordinator`] and executes its effects.
//!
//! Everything reaches the actor as a message (control requests, queries, worker events,
//! publication results, timer fires); it applies each to the core, then carries out the
//! returned effects: start/steer/abort/release workers, arm timers, publish artifacts, answer
//! requests, deliver window outcomes, append registry events to the event log and broadcast
//! them. No locks around core state; nothing else mutates it.
//!
//! Shutdown (an explicit request, every handle dropped, or a signal handled by the caller)
//! closes admission at once, aborts and drains every worker, escalates to SIGTERM/SIGKILL of a
//! worker's own process group only after a grace period, and ends only when every worker has
//! exited and every entry is disposed.

mod actor;
pub mod actors;
pub mod backend;
mod handle;
pub mod lineage;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use uuid::Uuid;

pub use actor::RuntimeReport;
pub use actors::{ActorRegistry, Capability};
pub use backend::{WorkerBackend, WorkerCommand, WorkerDirs, WorkerIdentity};
pub use handle::{Foreground, RuntimeError, RuntimeHandle, WhenAbandoned};

use crate::core::{Coordinator, Millis, RegistryEvent, WindowOutcome};
use crate::policy::scheduling::SchedulingPolicy;

/// How to run one parent runtime.
#[derive(Clone, Debug)]
pub struct RuntimeConfig {
    /// The parent runtime id (the root identity).
    pub root_id: Uuid,
    pub policy: SchedulingPolicy,
    /// Seed of the identity generator (take it from the OS in production).
    pub id_seed: u64,
    /// `<sessionDir>/delegation/<parent-id>`: task directories and `events.jsonl` live here.
    pub delegation_dir: PathBuf,
    /// Append every registry event to `<delegation_dir>/events.jsonl`.
    pub event_log: bool,
    /// How long shutdown waits for aborted workers before SIGTERM/SIGKILL.
    pub kill_grace: Duration,
}

/// What subscribers see.
#[derive(Clone, Debug)]
pub enum RuntimeEvent {
    /// A generation changed (detached snapshot).
    Registry(Box<RegistryEvent>),
    /// A background (or silent) call's window drained.
    Outcome(Box<WindowOutcome>),
    /// Every worker exited and every entry is disposed.
    ShutdownComplete,
}

/// Where a runtime reads the scheduling policy as it is now (`config::live::LivePolicy`
/// reads the files; tests can script it).
pub trait PolicySource: Send + Sync {
    /// The valid scheduling policy now; `None` while the policy files are invalid (dequeue
    /// of already admitted work then goes on under the last valid policy; new work is
    /// refused before it reaches the runtime).
    fn scheduling(&self) -> Option<SchedulingPolicy>;
}

/// Start a runtime on the current tokio runtime, with the fixed `config.policy`.
pub fn spawn(
    config: RuntimeConfig,
    backend: Arc<dyn WorkerBackend>,
) -> Result<(RuntimeHandle, tokio::task::JoinHandle<RuntimeReport>), RuntimeError> {
    let coord = Coordinator::new(config.root_id, config.policy, config.id_seed)
        .map_err(|e| RuntimeError::Config(e.to_string()))?;
    actor::spawn(coord, config, backend, None)
}

/// Start a runtime that re-reads its scheduling policy from `policy` before every request
/// and every dequeue opportunity (and every [`POLICY_POLL`] while work is queued), applying
/// a changed one with `Input::Configure`: later admission and dequeue obey it, running work
/// keeps its captured limits, and a lowered concurrency evicts nothing.
pub fn spawn_watching(
    config: RuntimeConfig,
    backend: Arc<dyn WorkerBackend>,
    policy: Arc<dyn PolicySource>,
) -> Result<(RuntimeHandle, tokio::task::JoinHandle<RuntimeReport>), RuntimeError> {
    let coord = Coordinator::new(config.root_id, config.policy, config.id_seed)
        .map_err(|e| RuntimeError::Config(e.to_string()))?;
    actor::spawn(coord, config, backend, Some(policy))
}

/// While assignments wait, the policy is re-read at least this often, so a raised
/// concurrency starts queued work even when no worker reports anything.
pub const POLICY_POLL: Duration = Duration::from_millis(250);

/// Wall-clock epoch milliseconds: the `now` the core sees.
pub fn now_ms() -> Millis {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
