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

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use uuid::Uuid;

pub use actor::RuntimeReport;
pub use actors::{ActorRegistry, Capability};
pub use backend::{WorkerBackend, WorkerCommand, WorkerDirs, WorkerIdentity};
pub use handle::{Foreground, RuntimeError, RuntimeHandle};

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

/// Start a runtime on the current tokio runtime.
pub fn spawn(
    config: RuntimeConfig,
    backend: Arc<dyn WorkerBackend>,
) -> Result<(RuntimeHandle, tokio::task::JoinHandle<RuntimeReport>), RuntimeError> {
    let coord = Coordinator::new(config.root_id, config.policy, config.id_seed)
        .map_err(|e| RuntimeError::Config(e.to_string()))?;
    actor::spawn(coord, config, backend)
}

/// Wall-clock epoch milliseconds: the `now` the core sees.
pub fn now_ms() -> Millis {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
