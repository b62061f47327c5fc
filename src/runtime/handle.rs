//! `RuntimeHandle`: how everything else talks to the actor.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::{broadcast, mpsc, oneshot};

use crate::core::{
    ChildRef, Coordinator, Input, Party, Refusal, Reply, RequestId, TaskSpec, WindowOutcome,
};
use crate::runtime::RuntimeEvent;

/// A message to the actor.
pub(crate) enum Msg {
    /// A request under an id from [`RequestIds`]. `foreground` receives the window outcome
    /// of an admitted call.
    Request {
        request: RequestId,
        build: Box<dyn FnOnce(RequestId) -> Input + Send>,
        reply: oneshot::Sender<Result<Reply, Refusal>>,
        foreground: Option<oneshot::Sender<WindowOutcome>>,
    },
    /// A read, run inside the actor against the current registry.
    Query(Box<dyn FnOnce(&Coordinator) + Send>),
    /// Begin shutdown; `done` fires when it completed.
    Shutdown(oneshot::Sender<()>),
    /// The caller of `request` stopped waiting for its reply (its future was dropped, e.g.
    /// because its control connection closed): a pending wait of it is cancelled.
    Abandoned(RequestId),
    /// The caller of foreground admission `request` cancelled its call
    /// ([`WhenAbandoned::Cancels`]): the window's unsettled members are cancelled and drain.
    CancelCall(RequestId),
}

/// Request ids, shared by every handle and the actor, so a caller knows its id before the
/// reply (and can abandon it).
#[derive(Clone, Debug, Default)]
pub(crate) struct RequestIds(Arc<AtomicU64>);

impl RequestIds {
    pub(crate) fn next(&self) -> RequestId {
        RequestId(self.0.fetch_add(1, Ordering::Relaxed) + 1)
    }
}

/// Tells the actor when a request's caller gives up before its reply came.
struct Abandon<'a> {
    tx: &'a mpsc::UnboundedSender<Msg>,
    request: RequestId,
    answered: bool,
}

impl Drop for Abandon<'_> {
    fn drop(&mut self) {
        if !self.answered {
            let _ = self.tx.send(Msg::Abandoned(self.request));
        }
    }
}

/// What becomes of a foreground window when its caller stops waiting for it (drops the
/// future or the [`Foreground`] before the outcome arrived).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WhenAbandoned {
    /// The window goes on, owned by the coordinator, and its outcome is published like a
    /// background one: the operator's `slate delegate` that was killed.
    GoesOn,
    /// The caller's cancellation ([Registry, controls and final delivery]: "caller
    /// foreground cancellation marks all unsettled assignments then drains their
    /// subtrees"): a child whose `delegate_task` was aborted, its connection closed.
    Cancels,
}

/// Sends [`Msg::CancelCall`] when dropped, while armed.
struct CancelOnDrop {
    tx: mpsc::UnboundedSender<Msg>,
    request: RequestId,
    armed: bool,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.tx.send(Msg::CancelCall(self.request));
        }
    }
}

impl std::fmt::Debug for CancelOnDrop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancelOnDrop")
            .field("request", &self.request)
            .field("armed", &self.armed)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("the runtime has stopped")]
    Gone,
    #[error("invalid runtime configuration: {0}")]
    Config(String),
    #[error("storage: {0}")]
    Store(String),
}

/// How many inputs the coordinator has applied: the actor adds one after each input and
/// before any of its effects (replies, events) go out, so whoever has seen an effect of an
/// input sees an epoch that counts it. Equal epochs mean an unchanged registry (the actor is
/// its only writer, and every change is an input).
#[derive(Clone, Debug, Default)]
pub(crate) struct Epoch(Arc<AtomicU64>);

impl Epoch {
    pub(crate) fn get(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }

    pub(crate) fn advance(&self) {
        self.0.fetch_add(1, Ordering::Release);
    }
}

/// A foreground call: the admission reply now, the ordered window outcome later. Dropped
/// before the outcome arrived, it does what the call's [`WhenAbandoned`] says (once the
/// outcome was sent the call is gone, and a cancellation then changes nothing).
pub struct Foreground {
    pub admitted: Reply,
    pub outcome: oneshot::Receiver<WindowOutcome>,
    _caller: CancelOnDrop,
}

/// A cheap, cloneable handle. When every handle is dropped the runtime shuts down.
#[derive(Clone)]
pub struct RuntimeHandle {
    pub(crate) tx: mpsc::UnboundedSender<Msg>,
    pub(crate) events: broadcast::Sender<RuntimeEvent>,
    pub(crate) actors: crate::runtime::ActorRegistry,
    pub(crate) ids: RequestIds,
    pub(crate) epoch: Epoch,
}

impl RuntimeHandle {
    /// Send one request and wait for its reply. Dropping the future before the reply
    /// abandons the request: a pending `wait` of it is cancelled in the core.
    pub async fn call(
        &self,
        build: impl FnOnce(RequestId) -> Input + Send + 'static,
    ) -> Result<Result<Reply, Refusal>, RuntimeError> {
        let (reply, answer) = oneshot::channel();
        let request = self.ids.next();
        self.tx
            .send(Msg::Request {
                request,
                build: Box::new(build),
                reply,
                foreground: None,
            })
            .map_err(|_| RuntimeError::Gone)?;
        let mut abandon = Abandon {
            tx: &self.tx,
            request,
            answered: false,
        };
        let answer = answer.await.map_err(|_| RuntimeError::Gone);
        abandon.answered = true;
        answer
    }

    /// Admit a foreground batch: the reply now, the ordered outcome once the window drains.
    /// A caller that goes away leaves the window to the coordinator ([`WhenAbandoned::GoesOn`]).
    pub async fn delegate(
        &self,
        actor: Party,
        tasks: Vec<TaskSpec>,
    ) -> Result<Result<Foreground, Refusal>, RuntimeError> {
        self.delegate_with(actor, tasks, WhenAbandoned::GoesOn)
            .await
    }

    /// [`Self::delegate`], saying what becomes of the window if this caller goes away, even
    /// before the admission reply arrived.
    pub async fn delegate_with(
        &self,
        actor: Party,
        tasks: Vec<TaskSpec>,
        abandoned: WhenAbandoned,
    ) -> Result<Result<Foreground, Refusal>, RuntimeError> {
        let (reply, answer) = oneshot::channel();
        let (outcome_tx, outcome) = oneshot::channel();
        let request = self.ids.next();
        self.tx
            .send(Msg::Request {
                request,
                build: Box::new(move |request| Input::Admit {
                    request,
                    actor,
                    tasks,
                    background: false,
                }),
                reply,
                foreground: Some(outcome_tx),
            })
            .map_err(|_| RuntimeError::Gone)?;
        // Armed before the reply: the actor handles messages in order, so a cancellation
        // sent while admission is pending finds the call admitted (or no call at all).
        let mut caller = CancelOnDrop {
            tx: self.tx.clone(),
            request,
            armed: abandoned == WhenAbandoned::Cancels,
        };
        let admitted = answer.await.map_err(|_| RuntimeError::Gone)?;
        Ok(match admitted {
            Ok(admitted) => Ok(Foreground {
                admitted,
                outcome,
                _caller: caller,
            }),
            Err(refusal) => {
                caller.armed = false;
                Err(refusal)
            }
        })
    }

    /// Run a read against the live registry.
    pub async fn query<T: Send + 'static>(
        &self,
        read: impl FnOnce(&Coordinator) -> T + Send + 'static,
    ) -> Result<T, RuntimeError> {
        let (tx, rx) = oneshot::channel();
        self.tx
            .send(Msg::Query(Box::new(move |coord| {
                let _ = tx.send(read(coord));
            })))
            .map_err(|_| RuntimeError::Gone)?;
        rx.await.map_err(|_| RuntimeError::Gone)
    }

    /// [`RuntimeHandle::query`], given the registry's epoch at the read.
    pub async fn query_with_epoch<T: Send + 'static>(
        &self,
        read: impl FnOnce(&Coordinator, u64) -> T + Send + 'static,
    ) -> Result<T, RuntimeError> {
        let epoch = self.epoch.clone();
        self.query(move |c| read(c, epoch.get())).await
    }

    /// The registry's epoch now: equal to the epoch of an earlier read when no input was
    /// applied since (`query_with_epoch`).
    pub fn registry_epoch(&self) -> u64 {
        self.epoch.get()
    }

    /// The detached snapshot of one generation.
    pub async fn snapshot(
        &self,
        r: ChildRef,
    ) -> Result<Option<crate::core::ChildSnapshot>, RuntimeError> {
        self.query(move |c| c.snapshot(r)).await
    }

    /// The live workers' capabilities and pids: who a control connection speaks for.
    pub fn actors(&self) -> &crate::runtime::ActorRegistry {
        &self.actors
    }

    /// Registry events, background outcomes and the end of shutdown.
    pub fn subscribe(&self) -> broadcast::Receiver<RuntimeEvent> {
        self.events.subscribe()
    }

    /// Shut down and wait until every worker has exited and every entry is disposed.
    pub async fn shutdown(&self) -> Result<(), RuntimeError> {
        let (tx, rx) = oneshot::channel();
        self.tx
            .send(Msg::Shutdown(tx))
            .map_err(|_| RuntimeError::Gone)?;
        rx.await.map_err(|_| RuntimeError::Gone)
    }
}
