//! Who a worker generation is on the control socket: its secret capability and its live
//! process, kept by the runtime for the control layer (never by the sans-IO core).
//!
//! The runtime issues a fresh [`Capability`] each time it starts a generation's worker and
//! hands it only to that worker process (a pipe on its descriptor 3); the worker backend
//! reports the process id once the process exists. Both are forgotten the moment the worker
//! exits, so a capability or a process of an ended (or, after a followup, replaced)
//! generation admits nothing any more.
//!
//! A capability handed to a process is **bound to that process's tree** ([`Holder`]): it
//! admits only a connection whose peer is, or descends from, that worker process (issue 22,
//! item 2). pi's memory can be read by any process of the same user; a capability read out
//! of it and presented from anywhere else gains nothing. Nothing here is written anywhere: the capability's `Debug` and
//! `Display` are redacted, and only [`Capability::expose`] and its `Serialize` (for the
//! `hello` request alone) reveal it.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::lineage::{self, Lineage};
use crate::core::ChildRef;
use crate::policy::host_extensions::WorkerExtension;

/// Random bytes in a capability (256 bits; the contract asks for at least 128).
const CAPABILITY_BYTES: usize = 32;

/// A per-generation secret: 64 lowercase hex digits of OS randomness.
///
/// Randomness comes from the `getrandom` crate (the `getrandom(2)` system call on Linux): it
/// is already compiled in as `uuid`'s source for v4 ids, needs no file descriptor and no
/// `/dev` in the worker's mount namespace, and blocks only until the kernel pool is seeded
/// at boot. Reading `/dev/urandom` would give the same bytes with an extra open file and a
/// failure mode when `/dev` is absent.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Capability(String);

impl Capability {
    /// A fresh capability from the OS. Fails only when the OS has no randomness to give.
    pub fn generate() -> Result<Self, getrandom::Error> {
        let mut bytes = [0_u8; CAPABILITY_BYTES];
        getrandom::fill(&mut bytes)?;
        let mut text = String::with_capacity(CAPABILITY_BYTES * 2);
        for byte in bytes {
            use std::fmt::Write as _;
            let _ = write!(text, "{byte:02x}");
        }
        Ok(Self(text))
    }

    /// A capability as a client presents it. Any text is accepted here: whether it admits
    /// anything is the registry's question, answered the same for malformed and unknown text.
    pub fn from_presented(text: String) -> Self {
        Self(text)
    }

    /// The secret itself, for the worker's environment and the `hello` request only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Capability(<redacted>)")
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted capability>")
    }
}

/// On the wire only as `hello.capability` (a string); nothing else that is serialized holds
/// a capability.
impl serde::Serialize for Capability {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for Capability {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Self)
    }
}

/// Who holds a live generation's capability, and so from where it is accepted.
///
/// A worker on another machine (a later backend) will hold its capability on the one
/// connection its transport brings in, and be bound to that connection instead (a
/// `Connection` holder): the rule stays "presented from anywhere else, refused".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Holder {
    /// Only Slate's memory: a worker that runs no process (the simulated backend), so there
    /// is no tree to bind to; accepted on any connection of the same user.
    Slate,
    /// Handed to a process whose id the backend has not reported yet: admits nothing.
    Starting,
    /// The worker process `pid`: accepted only from it and its descendants.
    Process(u32),
}

/// One live worker of one generation.
#[derive(Debug)]
struct LiveWorker {
    capability: Capability,
    holder: Holder,
}

impl LiveWorker {
    fn pid(&self) -> Option<u32> {
        match self.holder {
            Holder::Process(pid) => Some(pid),
            Holder::Slate | Holder::Starting => None,
        }
    }
}

#[derive(Debug, Default)]
struct Inner {
    /// The control socket workers are told about (`SLATE_SOCKET`), once one is bound.
    socket: Option<PathBuf>,
    /// The host session's extensions every worker started from now on loads after Slate's
    /// own (`workerExtensions`, decided once per session: `policy::host_extensions`); `None`
    /// until decided.
    worker_extensions: Option<Arc<[WorkerExtension]>>,
    workers: HashMap<ChildRef, LiveWorker>,
    by_capability: HashMap<Capability, ChildRef>,
    by_pid: HashMap<u32, ChildRef>,
}

/// The live workers' capabilities and process ids. Cheap to clone; shared by the runtime
/// (which issues and revokes), the worker backend (which reports pids) and the control
/// server (which identifies connections).
#[derive(Clone, Debug, Default)]
pub struct ActorRegistry {
    inner: Arc<Mutex<Inner>>,
    bound: Arc<SocketBound>,
}

/// Tells who waits ([`ActorRegistry::socket_bound`]) that the socket is bound.
#[derive(Debug)]
struct SocketBound(tokio::sync::watch::Sender<bool>);

impl Default for SocketBound {
    fn default() -> Self {
        Self(tokio::sync::watch::Sender::new(false))
    }
}

impl ActorRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The control socket to hand to workers started from now on.
    pub fn set_socket(&self, socket: &Path) {
        self.lock().socket = Some(socket.to_owned());
        self.bound.0.send_replace(true);
    }

    /// Once a socket is bound: its path (workers can be told where to reach their coordinator).
    pub async fn socket_bound(&self) -> Option<PathBuf> {
        let mut bound = self.bound.0.subscribe();
        bound.wait_for(|bound| *bound).await.ok()?;
        self.socket()
    }

    pub fn socket(&self) -> Option<PathBuf> {
        self.lock().socket.clone()
    }

    /// The host extensions workers started from now on load. `false` (and nothing changes)
    /// once a selection was set: the set is resolved once per session.
    pub fn set_worker_extensions(&self, selected: Vec<WorkerExtension>) -> bool {
        let mut inner = self.lock();
        if inner.worker_extensions.is_some() {
            return false;
        }
        inner.worker_extensions = Some(selected.into());
        true
    }

    pub fn worker_extensions(&self) -> Arc<[WorkerExtension]> {
        self.lock()
            .worker_extensions
            .as_ref()
            .map_or_else(|| Arc::from([]), Arc::clone)
    }

    /// A worker of `child` is being started: a fresh capability, replacing (and revoking)
    /// any earlier one of the same generation (a resumed window gets a new process).
    pub fn issue(&self, child: ChildRef) -> Result<Capability, getrandom::Error> {
        let capability = Capability::generate()?;
        let mut inner = self.lock();
        inner.forget(child);
        inner.by_capability.insert(capability.clone(), child);
        inner.workers.insert(
            child,
            LiveWorker {
                capability: capability.clone(),
                holder: Holder::Slate,
            },
        );
        Ok(capability)
    }

    /// The capability of `child` is being handed to a process: from now on it admits only
    /// that process's tree, and nothing until its pid is reported ([`Self::set_pid`]).
    pub fn handed_to_process(&self, child: ChildRef, capability: &Capability) {
        let mut inner = self.lock();
        if let Some(worker) = inner.workers.get_mut(&child)
            && worker.capability == *capability
            && worker.holder == Holder::Slate
        {
            worker.holder = Holder::Starting;
        }
    }

    /// The worker process of `child` holding `capability` is running as `pid`. Ignored when
    /// that worker was already revoked or replaced.
    pub fn set_pid(&self, child: ChildRef, capability: &Capability, pid: u32) {
        let mut inner = self.lock();
        let Some(worker) = inner.workers.get_mut(&child) else {
            return;
        };
        if worker.capability != *capability {
            return;
        }
        let old = worker.pid();
        worker.holder = Holder::Process(pid);
        if let Some(old) = old {
            inner.by_pid.remove(&old);
        }
        inner.by_pid.insert(pid, child);
    }

    /// The worker process of `child` ended: its capability and pid admit nothing any more.
    pub fn revoke(&self, child: ChildRef) {
        self.lock().forget(child);
    }

    /// The generation a presented capability belongs to, while its worker lives (wherever
    /// it is presented from: for a connection already admitted).
    pub fn capability_owner(&self, capability: &Capability) -> Option<ChildRef> {
        self.lock().by_capability.get(capability).copied()
    }

    /// The generation a capability presented from outside every worker's tree admits: only
    /// one that no process holds ([`Holder::Slate`], the simulated backend's).
    pub fn capability_owner_anywhere(&self, capability: &Capability) -> Option<ChildRef> {
        let inner = self.lock();
        let child = *inner.by_capability.get(capability)?;
        let worker = inner.workers.get(&child)?;
        (worker.holder == Holder::Slate).then_some(child)
    }

    /// The live worker process of `child`, if one is running and has reported its pid.
    pub fn worker_pid(&self, child: ChildRef) -> Option<u32> {
        self.lock().workers.get(&child).and_then(LiveWorker::pid)
    }

    /// Where this coordinator process sees the peer process `pid`
    /// ([`lineage::place`](super::lineage::place)): in a live worker's tree, outside every
    /// worker, or speaking for nobody.
    pub fn place(&self, pid: u32) -> Lineage {
        let worker = |pid: u32| self.lock().by_pid.get(&pid).copied();
        lineage::place(
            pid,
            std::process::id(),
            lineage::this_process_adopts(),
            worker,
            lineage::proc_stat,
        )
    }
}

impl Inner {
    fn forget(&mut self, child: ChildRef) {
        if let Some(worker) = self.workers.remove(&child) {
            self.by_capability.remove(&worker.capability);
            if let Some(pid) = worker.pid() {
                self.by_pid.remove(&pid);
            }
        }
    }
}

/// The parent of `pid` (kept here for the tests that read it).
pub use super::lineage::parent_pid;

#[cfg(test)]
mod tests {
    use super::*;

    fn child(n: u128, generation: u32) -> ChildRef {
        ChildRef::new(uuid::Uuid::from_u128(n), generation)
    }

    #[test]
    fn a_capability_is_256_random_bits_and_never_shown() {
        let a = Capability::generate().unwrap();
        let b = Capability::generate().unwrap();
        assert_eq!(a.expose().len(), 64);
        assert!(a.expose().bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
        assert!(!format!("{a:?} {a}").contains(a.expose()));
    }

    #[test]
    fn revoking_or_reissuing_forgets_the_capability_and_the_pid() {
        let registry = ActorRegistry::new();
        let one = child(1, 1);
        let first = registry.issue(one).unwrap();
        registry.set_pid(one, &first, 4_000_001);
        assert_eq!(registry.capability_owner(&first), Some(one));
        assert_eq!(registry.worker_pid(one), Some(4_000_001));

        let second = registry.issue(one).unwrap();
        assert_eq!(registry.capability_owner(&first), None, "replaced");
        assert_eq!(
            registry.worker_pid(one),
            None,
            "the new process has no pid yet"
        );
        // A late pid report of the replaced process changes nothing.
        registry.set_pid(one, &first, 4_000_002);
        assert_eq!(registry.worker_pid(one), None);

        registry.set_pid(one, &second, 4_000_003);
        registry.revoke(one);
        assert_eq!(registry.capability_owner(&second), None);
        assert_eq!(registry.worker_pid(one), None);
        assert!(!matches!(registry.place(4_000_003), Lineage::Worker { .. }));
    }

    #[test]
    fn a_capability_handed_to_a_process_is_accepted_only_from_its_tree() {
        let registry = ActorRegistry::new();
        let sim = child(3, 1);
        let simulated = registry.issue(sim).unwrap();
        assert_eq!(
            registry.capability_owner_anywhere(&simulated),
            Some(sim),
            "no process holds it"
        );
        let pi = child(4, 1);
        let handed = registry.issue(pi).unwrap();
        registry.handed_to_process(pi, &handed);
        assert_eq!(
            registry.capability_owner_anywhere(&handed),
            None,
            "starting"
        );
        registry.set_pid(pi, &handed, 4_000_004);
        assert_eq!(registry.capability_owner_anywhere(&handed), None);
        assert_eq!(registry.capability_owner(&handed), Some(pi), "still live");
        // A report for another capability changes nothing.
        registry.handed_to_process(sim, &handed);
        assert_eq!(registry.capability_owner_anywhere(&simulated), Some(sim));
    }

    #[test]
    fn a_process_descending_from_a_worker_is_found_through_its_parents() {
        // sh (the "worker") → sleep: the sleep's parent chain reaches the registered sh.
        let mut shell = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & echo $!; wait"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(shell.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let sleep: u32 = line.trim().parse().unwrap();
        let registry = ActorRegistry::new();
        let worker = child(2, 3);
        let capability = registry.issue(worker).unwrap();
        assert_eq!(
            registry.place(sleep),
            Lineage::Outside,
            "no pid reported yet"
        );
        registry.set_pid(worker, &capability, shell.id());
        let found = Lineage::Worker {
            child: worker,
            pid: shell.id(),
        };
        assert_eq!(registry.place(sleep), found);
        assert_eq!(registry.place(shell.id()), found);
        assert_eq!(
            registry.place(std::process::id()),
            Lineage::Outside,
            "the coordinator's own process is the operator's"
        );
        let _ = std::process::Command::new("kill")
            .arg(sleep.to_string())
            .status();
        let _ = shell.wait();
    }
}
