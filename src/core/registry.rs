//! The authoritative registry: identities in admission order, each with its immutable
//! history of generations, plus the per-generation execution state the core tracks.

use std::collections::{HashMap, VecDeque};

use uuid::Uuid;

use crate::core::ids::{CallId, ChildRef, MessageId, Party};
use crate::core::lifecycle::{CancelCause, PauseReason, Presence, Status};
use crate::core::refusal::Refusal;
use crate::core::snapshot::{AgentPresence, ChildSnapshot};
use crate::core::task::TaskSpec;

/// What the core has decided a generation's active work should end as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Intent {
    Cancel(CancelCause),
    Pause(PauseReason),
}

/// The worker side of one execution window, as reported.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "independent protocol facts of one window"
)]
pub(crate) struct WorkerState {
    /// `StartWorker` was emitted for this window.
    pub started: bool,
    /// Setup finished and the prompt was sent.
    pub ready: bool,
    /// `AbortWorker` was emitted for this window.
    pub aborted: bool,
    /// The prompt resolved (or setup failed).
    pub settled: bool,
    pub exited: bool,
    /// `Publish` was emitted and `Published` has not arrived yet.
    pub publishing: bool,
}

impl WorkerState {
    pub fn live(self) -> bool {
        self.started && !self.exited
    }
}

/// The final status decided when the prompt resolved; applied at disposal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PendingFinal {
    pub status: Status,
    pub error: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Generation {
    pub snap: ChildSnapshot,
    /// The admitted spec: effective grants, schema, model and the original assignment.
    pub spec: TaskSpec,
    /// The open window's call, until the window drains.
    pub call: Option<CallId>,
    pub intent: Option<Intent>,
    pub holds_permit: bool,
    pub worker: WorkerState,
    pub pending_final: Option<PendingFinal>,
    /// Identities (registry indices) this generation admitted.
    pub children: Vec<usize>,
    /// Undelivered messages addressed to this generation, oldest first.
    pub mailbox: VecDeque<MessageId>,
    /// Continuations from `resume` not yet sent to a worker.
    pub continuations: Vec<String>,
    /// A worker session exists for this generation (a conversation that can be continued).
    pub session_started: bool,
    /// Exact text of the last assistant message of the prompt.
    pub last_text: Option<String>,
    /// Coalescing of streamed output into registry changes.
    pub stream: StreamPublish,
    /// The call whose window outcome last carried this generation, and who started it:
    /// what `Input::OutcomeDelivered` matches.
    pub drained_call: Option<(CallId, Party)>,
}

/// When streamed output last changed the snapshot, and whether a change is held back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct StreamPublish {
    /// When streamed output last produced a registry change.
    pub last_at: Option<crate::core::ids::Millis>,
    /// Streamed output changed the snapshot since; no registry change has carried it yet.
    pub pending: bool,
    /// A `TimerKey::Stream` timer is armed for this generation.
    pub timer_armed: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Identity {
    pub id: Uuid,
    /// The exact parent: root, or the parent generation that admitted generation 1.
    pub parent: Party,
    pub depth: u32,
    pub generations: Vec<Generation>,
    pub parked: bool,
    /// Stopped presence: cancelled, stopped, or closed by its parent. Never renewed.
    pub stopped: bool,
}

impl Identity {
    pub fn current(&self) -> &Generation {
        // An identity is created with its first generation and generations are never removed.
        &self.generations[self.generations.len() - 1]
    }

    pub fn current_ref(&self) -> ChildRef {
        ChildRef::new(self.id, self.current().snap.generation)
    }

    pub fn presence(&self) -> Presence {
        if self.stopped {
            return Presence::Stopped;
        }
        let snap = &self.current().snap;
        #[allow(clippy::match_same_arms, reason = "one arm per lifecycle fact")]
        match snap.status {
            Status::Queued | Status::Setup | Status::Running | Status::Draining => Presence::Active,
            Status::Pausing => Presence::Pausing,
            Status::Paused => Presence::Paused,
            Status::Settled | Status::Failed if snap.disposed => {
                if self.parked {
                    Presence::Parked
                } else {
                    Presence::Idle
                }
            }
            Status::Settled | Status::Failed => Presence::Active,
            Status::Cancelled => Presence::Stopped,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Registry {
    /// Admission order.
    pub identities: Vec<Identity>,
    pub index: HashMap<Uuid, usize>,
}

impl Registry {
    pub fn identity(&self, id: Uuid) -> Option<&Identity> {
        self.index.get(&id).map(|&i| &self.identities[i])
    }

    pub fn slot(&self, id: Uuid) -> Option<usize> {
        self.index.get(&id).copied()
    }

    /// Any generation, current or historical.
    pub fn generation(&self, r: ChildRef) -> Option<&Generation> {
        let identity = self.identity(r.id)?;
        let index = usize::try_from(r.generation.checked_sub(1)?).ok()?;
        identity.generations.get(index)
    }

    pub fn generation_mut(&mut self, r: ChildRef) -> Option<&mut Generation> {
        let slot = self.slot(r.id)?;
        let index = usize::try_from(r.generation.checked_sub(1)?).ok()?;
        self.identities[slot].generations.get_mut(index)
    }

    /// Current generation of a known identity, rejecting unknown and stale references.
    pub fn current(&self, r: ChildRef) -> Result<&Generation, Refusal> {
        let identity = self.identity(r.id).ok_or(Refusal::UnknownIdentity(r))?;
        let current = identity.current();
        if current.snap.generation == r.generation {
            Ok(current)
        } else if r.generation == 0 || r.generation > current.snap.generation {
            Err(Refusal::UnknownIdentity(r))
        } else {
            Err(Refusal::StaleGeneration {
                reference: r,
                current: current.snap.generation,
            })
        }
    }

    /// Any existing generation, for pinned reads.
    pub fn pinned(&self, r: ChildRef) -> Result<&Generation, Refusal> {
        self.generation(r).ok_or(Refusal::UnknownIdentity(r))
    }

    pub fn is_current(&self, r: ChildRef) -> bool {
        self.identity(r.id)
            .is_some_and(|i| i.current().snap.generation == r.generation)
    }

    pub fn parent_of(&self, r: ChildRef) -> Option<Party> {
        self.identity(r.id).map(|i| i.parent)
    }

    /// Strict ancestors of `r`, nearest first (never the root).
    pub fn ancestors(&self, r: ChildRef) -> Vec<ChildRef> {
        let mut out = Vec::new();
        let mut cursor = self.parent_of(r);
        while let Some(Party::Child(p)) = cursor {
            out.push(p);
            cursor = self.parent_of(p);
        }
        out
    }

    /// The current generations of `r`'s descendants, breadth first (excluding `r`).
    pub fn descendants(&self, r: ChildRef) -> Vec<ChildRef> {
        let mut out = Vec::new();
        let mut frontier = vec![r];
        while let Some(next) = frontier.pop() {
            let Some(g) = self.generation(next) else {
                continue;
            };
            for &slot in &g.children {
                let child = self.identities[slot].current_ref();
                out.push(child);
                frontier.push(child);
            }
        }
        out
    }

    /// Every direct child of `r` is paused or disposed.
    pub fn children_drained(&self, r: ChildRef) -> bool {
        self.generation(r).is_none_or(|g| {
            g.children.iter().all(|&slot| {
                let snap = &self.identities[slot].current().snap;
                snap.disposed || snap.status == Status::Paused
            })
        })
    }

    pub fn snapshot(&self, r: ChildRef) -> Option<ChildSnapshot> {
        self.generation(r).map(|g| g.snap.clone())
    }

    pub fn list(&self) -> Vec<ChildSnapshot> {
        self.identities
            .iter()
            .map(|i| i.current().snap.clone())
            .collect()
    }

    pub fn generations(&self, id: Uuid) -> Vec<ChildSnapshot> {
        self.identity(id)
            .map(|i| i.generations.iter().map(|g| g.snap.clone()).collect())
            .unwrap_or_default()
    }

    pub fn agents(&self) -> Vec<AgentPresence> {
        self.identities
            .iter()
            .map(|i| AgentPresence {
                id: i.id,
                generation: i.current().snap.generation,
                presence: i.presence(),
            })
            .collect()
    }
}
