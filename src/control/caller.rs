//! Who a connection speaks for: the operator (root authority), or exactly one worker
//! generation, or nobody (`docs/protocol.md`, "Actors").
//!
//! Decided at `hello` from the capability the client presents and where the peer process
//! stood when the connection was accepted ([`Lineage`], `runtime::lineage`); checked again
//! before every later request, so a connection of a generation whose worker ended (or was
//! replaced by a followup) is refused from then on.
//!
//! 1. A peer process that is, or descends from, a live worker process of this coordinator
//!    speaks as that worker's generation, whatever it presents: with no capability it is that
//!    worker; with another generation's (or any other) capability it is refused. So `slate`
//!    typed into a worker's bash acts with that worker's authority, never the operator's.
//! 2. A peer that speaks for nobody — a worker's leftover below a coordinator that is its
//!    workers' subreaper, a process of another Slate fleet, a peer whose ancestry could not
//!    be read — is refused whatever it presents.
//! 3. Otherwise (outside every worker's tree) a presented capability admits only a worker
//!    that runs no process (the simulated backend's): a worker process's capability is bound
//!    to its tree, so one read out of pi's memory and presented from here is refused. Forged,
//!    malformed, ended, replaced and misplaced capabilities get one answer that does not say
//!    whether the text ever was a capability.
//! 4. Otherwise the peer is the operator.

use serde::{Deserialize, Serialize};

use super::protocol::{ControlError, codes};
use crate::core::{ChildRef, Party};
use crate::runtime::lineage::Lineage;
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
/// can be valid. `peer` is where the peer process stood when the connection was accepted
/// (`None`: the socket reported no pid).
pub fn identify(
    registry: Option<&ActorRegistry>,
    peer: Option<&Lineage>,
    capability: Option<Capability>,
) -> Result<Caller, ControlError> {
    let Some(registry) = registry else {
        return match capability {
            Some(_) => Err(capability_refused()),
            None => Ok(Caller::Operator),
        };
    };
    let Some(peer) = peer else {
        // Without the peer's pid a worker's shell could not be told from the operator.
        return Err(ControlError::new(
            codes::ACTOR_UNKNOWN,
            "peer: the socket reported no peer process id, so the connection cannot be told apart from a worker's; refused",
        ));
    };
    match (peer, capability) {
        (&Lineage::Worker { child, pid }, None) => Ok(Caller::Child {
            target: child,
            proof: Proof::Process { worker_pid: pid },
        }),
        (&Lineage::Worker { child, .. }, Some(presented))
            if registry.capability_owner(&presented) == Some(child) =>
        {
            Ok(Caller::Child {
                target: child,
                proof: Proof::Capability(presented),
            })
        }
        // Same answer whether the text is another live generation's capability or none.
        (&Lineage::Worker { child, pid }, Some(_)) => Err(ControlError::new(
            codes::CAPABILITY_REFUSED,
            format!(
                "hello.capability: the peer process descends from the worker of {child} (process {pid}); a process in a worker's tree speaks only as that worker, and this is not {child}'s capability"
            ),
        )),
        // A capability held by a worker process is valid only from its tree, which a
        // leftover has left: the one answer for capabilities.
        (Lineage::Nobody(_), Some(_)) => Err(capability_refused()),
        (Lineage::Nobody(why), None) => Err(ControlError::new(
            codes::ACTOR_UNKNOWN,
            format!("peer: {}; refused", why.describe()),
        )),
        (Lineage::Outside, None) => Ok(Caller::Operator),
        (Lineage::Outside, Some(presented)) => match registry.capability_owner_anywhere(&presented)
        {
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
        "hello.capability: not the capability of a live worker generation of this coordinator presented from that worker's process tree",
    )
}
