//! Who a connection speaks for: the operator (root authority), or exactly one worker
//! generation (`docs/protocol.md`, "Actors").
//!
//! Decided once, at `hello`, from the capability the client presents and the peer process
//! the socket reports; checked again before every later request, so a connection of a
//! generation whose worker ended (or was replaced by a followup) is refused from then on.
//!
//! 1. A peer process that is, or descends from, a live worker process of this coordinator
//!    speaks as that worker's generation, whatever it presents: with no capability it is that
//!    worker; with another generation's (or any other) capability it is refused. So `slate`
//!    typed into a worker's bash acts with that worker's authority, never the operator's.
//! 2. Otherwise a presented capability must be one the runtime issued to a live worker: the
//!    connection then speaks as that generation (the worker's extension, which read and
//!    deleted it from its environment). Forged, malformed, ended and replaced capabilities
//!    get one answer that does not say whether the text ever was a capability.
//! 3. Otherwise the peer is the operator.

use serde::{Deserialize, Serialize};

use super::protocol::{ControlError, codes};
use crate::core::{ChildRef, Party};
use crate::runtime::{ActorRegistry, Capability};

/// How a child connection proved which generation it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Proof {
    /// It presented the generation's capability.
    Capability(Capability),
    /// Its peer process descends from the generation's worker process `worker_pid`.
    Process { worker_pid: u32 },
}

/// The actor of one connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Caller {
    /// The user's CLI and Hub: root authority.
    Operator,
    /// Exactly one worker generation, with that generation's admitted grants, limits and
    /// mailbox.
    Child { target: ChildRef, proof: Proof },
}

impl Caller {
    /// The core party requests of this connection act as.
    pub fn party(&self) -> Party {
        match self {
            Caller::Operator => Party::Root,
            Caller::Child { target, .. } => Party::Child(*target),
        }
    }

    /// What `hello` answers (never the capability).
    pub fn view(&self) -> CallerView {
        match self {
            Caller::Operator => CallerView::Operator,
            Caller::Child { target, .. } => CallerView::Child {
                target: target.to_string(),
            },
        }
    }
}

/// `hello`'s `actor`: `{"kind": "operator"}` or `{"kind": "child", "target": "UUID@G"}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
pub enum CallerView {
    #[default]
    Operator,
    Child {
        target: String,
    },
}

/// Decides a new connection's actor (the rules in the module comment). `registry` is `None`
/// for a service that runs no workers: every peer is then the operator, and no capability
/// can be valid.
pub fn identify(
    registry: Option<&ActorRegistry>,
    peer_pid: Option<i32>,
    capability: Option<Capability>,
) -> Result<Caller, ControlError> {
    let Some(registry) = registry else {
        return match capability {
            Some(_) => Err(capability_refused()),
            None => Ok(Caller::Operator),
        };
    };
    let Some(peer) = peer_pid.and_then(|p| u32::try_from(p).ok()) else {
        // Without the peer's pid a worker's shell could not be told from the operator.
        return Err(ControlError::new(
            codes::ACTOR_UNKNOWN,
            "peer: the socket reported no peer process id, so the connection cannot be told apart from a worker's; refused",
        ));
    };
    if let Some((target, worker_pid)) = registry.worker_ancestor(peer) {
        return match capability {
            None => Ok(Caller::Child {
                target,
                proof: Proof::Process { worker_pid },
            }),
            Some(presented) if registry.capability_owner(&presented) == Some(target) => {
                Ok(Caller::Child {
                    target,
                    proof: Proof::Capability(presented),
                })
            }
            // Same answer whether the text is another live generation's capability or none.
            Some(_) => Err(ControlError::new(
                codes::CAPABILITY_REFUSED,
                format!(
                    "hello.capability: the peer process {peer} descends from the worker of {target}; a process in a worker's tree speaks only as that worker, and this is not {target}'s capability"
                ),
            )),
        };
    }
    match capability {
        None => Ok(Caller::Operator),
        Some(presented) => match registry.capability_owner(&presented) {
            Some(target) => Ok(Caller::Child {
                target,
                proof: Proof::Capability(presented),
            }),
            None => Err(capability_refused()),
        },
    }
}

/// Before every request after `hello`: a child connection still speaks for a live worker
/// of its generation.
pub fn verify(registry: Option<&ActorRegistry>, caller: &Caller) -> Result<(), ControlError> {
    let Caller::Child { target, proof } = caller else {
        return Ok(());
    };
    let live = registry.is_some_and(|registry| match proof {
        Proof::Capability(capability) => registry.capability_owner(capability) == Some(*target),
        Proof::Process { worker_pid } => registry.worker_pid(*target) == Some(*worker_pid),
    });
    if live {
        Ok(())
    } else {
        Err(ControlError::new(
            codes::ACTOR_ENDED,
            format!(
                "actor: this connection speaks for {target}, whose worker has ended or was replaced by a later generation; nothing more is admitted from it"
            ),
        ))
    }
}

fn capability_refused() -> ControlError {
    ControlError::new(
        codes::CAPABILITY_REFUSED,
        "hello.capability: not the capability of a live worker generation of this coordinator",
    )
}
