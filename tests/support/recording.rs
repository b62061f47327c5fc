//! The simulated backend, recording each started worker's capability, so a test (or bench) can
//! connect as that generation the way its pi extension does. Include it with
//! `#[path = "support/recording.rs"] mod recording;`.
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use slate::core::{ChildRef, WorkerStart};
use slate::runtime::backend::EventSink;
use slate::runtime::{Capability, WorkerBackend, WorkerCommand, WorkerDirs, WorkerIdentity};
use slate::worker::sim::{ScriptBook, SimBackend};
use tokio::sync::mpsc;

/// Every started generation's capability.
pub type Capabilities = Arc<Mutex<HashMap<ChildRef, Capability>>>;

pub struct Recording {
    sim: SimBackend,
    capabilities: Capabilities,
}

impl Recording {
    /// The backend, and where it records.
    pub fn new(book: ScriptBook) -> (Self, Capabilities) {
        let capabilities = Capabilities::default();
        let backend = Self {
            sim: SimBackend::new(book),
            capabilities: Arc::clone(&capabilities),
        };
        (backend, capabilities)
    }
}

impl WorkerBackend for Recording {
    fn start(
        &self,
        start: WorkerStart,
        dirs: WorkerDirs,
        identity: WorkerIdentity,
        events: EventSink,
    ) -> mpsc::UnboundedSender<WorkerCommand> {
        self.capabilities
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(start.child, identity.capability().clone());
        self.sim.start(start, dirs, identity, events)
    }

    fn name(&self) -> &'static str {
        "recording-sim"
    }
}
