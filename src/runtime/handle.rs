//! `RuntimeHandle`: how everything else talks to the actor.

use tokio::sync::{broadcast, mpsc, oneshot};

use crate::core::{
    ChildRef, Coordinator, Input, Party, Refusal, Reply, RequestId, TaskSpec, WindowOutcome,
};
use crate::runtime::RuntimeEvent;

/// A message to the actor.
pub(crate) enum Msg {
    /// A request; the actor assigns its id. `foreground` receives the window outcome of an
    /// admitted call.
    Request {
        build: Box<dyn FnOnce(RequestId) -> Input + Send>,
        reply: oneshot::Sender<Result<Reply, Refusal>>,
        foreground: Option<oneshot::Sender<WindowOutcome>>,
    },
    /// A read, run inside the actor against the current registry.
    Query(Box<dyn FnOnce(&Coordinator) + Send>),
    /// Begin shutdown; `done` fires when it completed.
    Shutdown(oneshot::Sender<()>),
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

/// A foreground call: the admission reply now, the ordered window outcome later.
pub struct Foreground {
    pub admitted: Reply,
    pub outcome: oneshot::Receiver<WindowOutcome>,
}

/// A cheap, cloneable handle. When every handle is dropped the runtime shuts down.
#[derive(Clone)]
pub struct RuntimeHandle {
    pub(crate) tx: mpsc::UnboundedSender<Msg>,
    pub(crate) events: broadcast::Sender<RuntimeEvent>,
    pub(crate) actors: crate::runtime::ActorRegistry,
}

impl RuntimeHandle {
    /// Send one request and wait for its reply.
    pub async fn call(
        &self,
        build: impl FnOnce(RequestId) -> Input + Send + 'static,
    ) -> Result<Result<Reply, Refusal>, RuntimeError> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(Msg::Request {
                build: Box::new(build),
                reply,
                foreground: None,
            })
            .map_err(|_| RuntimeError::Gone)?;
        answer.await.map_err(|_| RuntimeError::Gone)
    }

    /// Admit a foreground batch: the reply now, the ordered outcome once the window drains.
    pub async fn delegate(
        &self,
        actor: Party,
        tasks: Vec<TaskSpec>,
    ) -> Result<Result<Foreground, Refusal>, RuntimeError> {
        let (reply, answer) = oneshot::channel();
        let (outcome_tx, outcome) = oneshot::channel();
        self.tx
            .send(Msg::Request {
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
        let admitted = answer.await.map_err(|_| RuntimeError::Gone)?;
        Ok(admitted.map(|admitted| Foreground { admitted, outcome }))
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
