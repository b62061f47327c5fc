//! Who a worker generation is on the control socket: its secret capability and its live
//! process, kept by the runtime for the control layer (never by the sans-IO core).
//!
//! The runtime issues a fresh [`Capability`] each time it starts a generation's worker and
//! hands it only to that worker process (its environment); the worker backend reports the
//! process id once the process exists. Both are forgotten the moment the worker exits, so a
//! capability or a process of an ended (or, after a followup, replaced) generation admits
//! nothing any more. Nothing here is written anywhere: the capability's `Debug` and
//! `Display` are redacted, and only [`Capability::expose`] and its `Serialize` (for the
//! `hello` request alone) reveal it.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::core::ChildRef;
use crate::policy::host_extensions::WorkerExtension;

/// Random bytes in a capability (256 bits; the contract asks for at least 128).
const CAPABILITY_BYTES: usize = 32;

/// How many parent links [`ActorRegistry::worker_ancestor`] follows at most (Linux's default
/// `pid_max` allows deeper chains only in theory; a loop in a racing `/proc` read ends too).
const MAX_ANCESTRY: usize = 1024;

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

/// One live worker process of one generation.
#[derive(Debug)]
struct LiveWorker {
    capability: Capability,
    pid: Option<u32>,
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
                pid: None,
            },
        );
        Ok(capability)
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
        let old = worker.pid.replace(pid);
        if let Some(old) = old {
            inner.by_pid.remove(&old);
        }
        inner.by_pid.insert(pid, child);
    }

    /// The worker process of `child` ended: its capability and pid admit nothing any more.
    pub fn revoke(&self, child: ChildRef) {
        self.lock().forget(child);
    }

    /// The generation a presented capability belongs to, while its worker lives.
    pub fn capability_owner(&self, capability: &Capability) -> Option<ChildRef> {
        self.lock().by_capability.get(capability).copied()
    }

    /// The live worker process of `child`, if one is running and has reported its pid.
    pub fn worker_pid(&self, child: ChildRef) -> Option<u32> {
        self.lock().workers.get(&child).and_then(|w| w.pid)
    }

    /// The generation whose live worker process is `pid` or an ancestor of `pid` (following
    /// `/proc/<pid>/stat` parent links up to init), with that worker's pid.
    pub fn worker_ancestor(&self, pid: u32) -> Option<(ChildRef, u32)> {
        if self.lock().by_pid.is_empty() {
            // No worker process runs: nothing to descend from, no `/proc` reads.
            return None;
        }
        let own = std::process::id();
        let mut current = pid;
        for _ in 0..MAX_ANCESTRY {
            if let Some(&child) = self.lock().by_pid.get(&current) {
                return Some((child, current));
            }
            // The coordinator itself and init are not workers, and nothing above them is.
            if current <= 1 || current == own {
                return None;
            }
            current = parent_pid(current)?;
        }
        None
    }
}

impl Inner {
    fn forget(&mut self, child: ChildRef) {
        if let Some(worker) = self.workers.remove(&child) {
            self.by_capability.remove(&worker.capability);
            if let Some(pid) = worker.pid {
                self.by_pid.remove(&pid);
            }
        }
    }
}

/// The parent of `pid` from `/proc/<pid>/stat` (`pid (comm) state ppid …`; `comm` may hold
/// spaces and parentheses, so the fields are read after the last `)`).
pub fn parent_pid(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_ppid(&stat)
}

fn parse_ppid(stat: &str) -> Option<u32> {
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_ascii_whitespace();
    let _state = fields.next()?;
    fields.next()?.parse().ok()
}

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
    fn ppid_is_read_after_the_last_parenthesis() {
        assert_eq!(parse_ppid("42 (a) b) c) S 7 42 42 0"), Some(7));
        assert_eq!(parse_ppid("42 (sh) R 1 1 1"), Some(1));
        assert_eq!(parse_ppid("garbage"), None);
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
        assert_eq!(registry.worker_ancestor(4_000_003), None);
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
        assert_eq!(registry.worker_ancestor(sleep), None, "no pid reported yet");
        registry.set_pid(worker, &capability, shell.id());
        assert_eq!(registry.worker_ancestor(sleep), Some((worker, shell.id())));
        assert_eq!(
            registry.worker_ancestor(shell.id()),
            Some((worker, shell.id()))
        );
        assert_eq!(
            registry.worker_ancestor(std::process::id()),
            None,
            "the coordinator is no worker's descendant"
        );
        let _ = std::process::Command::new("kill")
            .arg(sleep.to_string())
            .status();
        let _ = shell.wait();
    }
}
