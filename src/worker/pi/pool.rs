//! Pre-started workers (issue 23): pi RPC processes started ahead of time with Slate's worker
//! extension loaded, each bound to one admitted generation and never reused.
//!
//! A pooled process runs `pi --mode rpc --no-session` under the same containment, version gate
//! and extension file as a cold worker, in the workspace it was started for, with every tool a
//! worker could be granted as pi's `--tools` ceiling and descriptor 3 a pipe whose write end
//! only this pool holds. Until it is bound it is not a worker: it has no identity (no
//! capability exists for it), no permit, no writer lease, no session file, and is in no
//! registry a user or a worker can see. Its extension refuses every model request and tool
//! (`extension/worker_entry.ts`).
//!
//! Binding one to an admitted generation (`process::bind`): the generation's capability, system
//! prompt and tool names are written to the pipe, which is then closed; `switch_session` opens
//! the generation's session file, and pi re-runs the extension's factory there, which reads the
//! pipe and becomes that generation's worker exactly as a cold one does at load (it asks the
//! coordinator for its tools with its capability, registers the guards, narrows the active tools,
//! and gives pi the system prompt); `get_commands` then proves the extension loaded (pi keeps a
//! session running without an extension whose factory threw, so its word is not taken); the
//! model and effort are set with `set_model` and `set_thinking_level`. Any failure fails the
//! generation closed, as a cold start's would, and the process is ended.
//!
//! The pool keeps at most `pool.size` idle processes (operator policy, bounded by
//! `concurrency`), started for the workspace last used, each ended after `pool.idleSeconds`
//! unused, all ended when the backend is dropped (the coordinator ends), and with the
//! coordinator by their containment (kill -9 included). A process is started only while the
//! machine keeps [`MEMORY_RESERVE`] available beyond [`MEMORY_PER_PROCESS`] for it
//! ([`memory_allows`]): on a machine short of memory the pool stays empty and every worker
//! starts cold.

use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use command_fds::{CommandFdExt as _, FdMapping};
use tokio::process::Child;

use crate::core::BuiltinTool;
use crate::policy::pool::PoolPolicy;
use crate::runtime::backend::{CAPABILITY_FD, WORKER_CAPABILITY_FD_ENV, WORKER_SOCKET_ENV};
use crate::worker::contain::Containment;
use crate::worker::pi::args::{DELEGATE_COORDINATE, DELEGATE_TASK, SUBMIT_RESULT};
use crate::worker::pi::process::{GroupGuard, PiCommand};

/// Set (to `1`) in a pooled process's environment: its extension waits to be bound instead of
/// reading its capability at load (`extension/identity.ts`).
pub const POOLED_ENV: &str = "SLATE_WORKER_POOLED";
/// The command a bound worker's extension registers; `get_commands` listing it is the proof
/// that the extension loaded for the generation (`extension/worker.ts`).
pub const BOUND_COMMAND: &str = "slate-worker";
/// The latest a replacement starts after a process was taken, when the workers started since
/// have not all begun their first model response by then (see [`Starting`]).
pub const REFILL_LATEST: std::time::Duration = std::time::Duration::from_secs(2);
/// Memory the machine keeps available beyond the pool: below it, nothing is pre-started.
pub const MEMORY_RESERVE: u64 = 1 << 30;
/// Memory counted per pre-started process (an idle pi 1.6 measured about 110 MB resident;
/// counted with room for it to grow once bound).
pub const MEMORY_PER_PROCESS: u64 = 256 << 20;

/// What a pooled process was started for; a generation is bound to one only when all of it
/// matches (otherwise it starts cold).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolKey {
    /// The workspace (pi's cwd, fixed at start), canonical.
    pub cwd: PathBuf,
    /// The coordinator's control socket (`SLATE_SOCKET`).
    pub socket: PathBuf,
    /// Slate's worker extension, then the host extensions every worker loads.
    pub extensions: Vec<PathBuf>,
    /// The host extensions' tools (on top of every worker tool, in pi's `--tools` ceiling).
    pub host_tools: Vec<String>,
}

impl PoolKey {
    /// The key of a workspace, `None` when it cannot be resolved (no pooled start then).
    pub fn new(
        cwd: &Path,
        socket: &Path,
        extensions: Vec<PathBuf>,
        host_tools: Vec<String>,
    ) -> Option<Self> {
        Some(Self {
            cwd: std::fs::canonicalize(cwd).ok()?,
            socket: socket.to_owned(),
            extensions,
            host_tools,
        })
    }
}

/// One idle pre-started process.
pub struct Pooled {
    id: u64,
    key: PoolKey,
    pub child: Child,
    /// The write end of the process's descriptor 3: the binding goes here, then it closes.
    pub binding: OwnedFd,
    /// Ends the process group if the process is dropped unbound.
    pub guard: GroupGuard,
}

/// The idle pre-started processes of one backend.
pub struct Pool {
    policy: PoolPolicy,
    concurrency: u32,
    pi: PiCommand,
    containment: Containment,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    idle: Vec<Pooled>,
    next_id: u64,
    /// The workspace the pool refills for (the one last used).
    key: Option<PoolKey>,
    /// The coordinator shut down: nothing is started any more.
    drained: bool,
    /// Workers started in the pool's workspace that have not begun their first model
    /// response yet ([`Starting`] tokens alive).
    starting: usize,
}

/// What a worker starting in the pool's workspace gets from the pool.
pub struct Taken {
    /// An idle pre-started process, if one was alive.
    pub process: Option<Pooled>,
    pub starting: Starting,
}

/// Held by a worker started in the pool's workspace (pre-started or cold) until its first
/// model response begins or it ends. The pool refills when no such worker is left (or
/// [`REFILL_LATEST`] after a take): on a small machine, a pi starting beside a worker that
/// is still starting takes the CPU that worker needs (the eight-child fan-out: 0.703 s with
/// replacements started 300 ms after each binding, 0.657 s with this rule; docs/performance.md).
pub struct Starting(Weak<Pool>);

impl Drop for Starting {
    fn drop(&mut self) {
        if let Some(pool) = self.0.upgrade() {
            let idle = {
                let mut state = pool.state();
                state.starting = state.starting.saturating_sub(1);
                state.starting == 0
            };
            if idle {
                pool.refill();
            }
        }
    }
}

impl Pool {
    pub fn new(
        policy: PoolPolicy,
        concurrency: u32,
        pi: PiCommand,
        containment: Containment,
    ) -> Arc<Self> {
        Arc::new(Self {
            policy,
            concurrency,
            pi,
            containment,
            state: Mutex::new(State::default()),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The size the pool keeps: the policy's, bounded by `concurrency`.
    pub fn size(&self) -> usize {
        self.policy.effective_size(self.concurrency) as usize
    }

    /// An idle process started for `key`, if one is alive, and the new worker's [`Starting`]
    /// token; the pool then refills for `key` once no worker is starting.
    pub fn take(self: &Arc<Self>, key: &PoolKey) -> Taken {
        let taken = {
            let mut state = self.state();
            state.key = Some(key.clone());
            state.starting += 1;
            let mut taken = None;
            while let Some(i) = state.idle.iter().position(|p| p.key == *key) {
                let mut pooled = state.idle.swap_remove(i);
                // A process that died idle is dropped (its guard ends what is left of it).
                if matches!(pooled.child.try_wait(), Ok(None)) {
                    taken = Some(pooled);
                    break;
                }
            }
            taken
        };
        self.refill_at_the_latest();
        Taken {
            process: taken,
            starting: Starting(Arc::downgrade(self)),
        }
    }

    /// Refill after [`REFILL_LATEST`] even if a worker is still starting then (one waiting
    /// long for its model must not keep the pool empty).
    fn refill_at_the_latest(self: &Arc<Self>) {
        let pool: Weak<Self> = Arc::downgrade(self);
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        handle.spawn(async move {
            tokio::time::sleep(REFILL_LATEST).await;
            if let Some(pool) = pool.upgrade() {
                pool.refill();
            }
        });
    }

    /// Remember `key` as the workspace to keep processes for, and start them.
    pub fn prestart(self: &Arc<Self>, key: PoolKey) {
        self.state().key = Some(key);
        self.refill();
    }

    /// Start processes for the remembered workspace until `size` are idle for it; processes
    /// idle for another workspace are ended first (they would not be bound). Starts nothing
    /// when the machine is short of memory.
    fn refill(self: &Arc<Self>) {
        let size = self.size();
        let mut state = self.state();
        let Some(key) = state.key.clone().filter(|_| !state.drained) else {
            return;
        };
        state.idle.retain(|p| p.key == key);
        while state.idle.len() < size && memory_allows(MemInfo::read().as_ref()) {
            let id = state.next_id;
            state.next_id += 1;
            match self.spawn(id, &key) {
                Ok(pooled) => {
                    state.idle.push(pooled);
                    self.expire_after_idle(id);
                }
                // Not reported here: a cold start then says what is wrong, attributed to its task.
                Err(_) => break,
            }
        }
    }

    /// End process `id` after the idle lifetime if it is still idle then.
    fn expire_after_idle(self: &Arc<Self>, id: u64) {
        let pool: Weak<Self> = Arc::downgrade(self);
        let idle = self.policy.idle();
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        handle.spawn(async move {
            tokio::time::sleep(idle).await;
            if let Some(pool) = pool.upgrade() {
                pool.state().idle.retain(|p| p.id != id);
            }
        });
    }

    /// End every idle process (dropping one ends its process group) and start no more.
    pub fn drain(&self) {
        let mut state = self.state();
        state.drained = true;
        state.idle.clear();
    }

    /// How many processes are idle now (for tests and the performance notes).
    pub fn idle_count(&self) -> usize {
        self.state().idle.len()
    }

    fn spawn(&self, id: u64, key: &PoolKey) -> std::io::Result<Pooled> {
        let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
        let mut command = self.pi.command_in(&self.containment);
        command
            .fd_mappings(vec![FdMapping {
                parent_fd: read,
                child_fd: CAPABILITY_FD,
            }])
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        command
            .env(WORKER_CAPABILITY_FD_ENV, CAPABILITY_FD.to_string())
            .env(WORKER_SOCKET_ENV, &key.socket)
            .env(POOLED_ENV, "1")
            .args(arguments(key))
            .current_dir(&key.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(self.containment == Containment::ProcessGroup);
        let child = command.spawn()?;
        let guard = GroupGuard(child.id());
        Ok(Pooled {
            id,
            key: key.clone(),
            child,
            binding: write,
            guard,
        })
    }
}

/// A pooled process's arguments: no session, model or system prompt yet (the binding gives
/// them), every tool a worker could be granted as the ceiling, Slate's extension and the host
/// extensions as a cold worker has them, and everything else off.
fn arguments(key: &PoolKey) -> Vec<OsString> {
    let mut tools: Vec<&str> = BuiltinTool::ALL.iter().map(|t| t.as_str()).collect();
    tools.extend([SUBMIT_RESULT, DELEGATE_TASK, DELEGATE_COORDINATE]);
    for tool in &key.host_tools {
        if !tools.contains(&tool.as_str()) {
            tools.push(tool);
        }
    }
    let mut args: Vec<OsString> = vec!["--mode".into(), "rpc".into()];
    args.push("--tools".into());
    args.push(tools.join(",").into());
    for flag in ["-ne", "--no-mcp", "-ns", "-np", "--no-themes", "-nc"] {
        args.push(flag.into());
    }
    for extension in &key.extensions {
        args.push("-e".into());
        args.push(extension.clone().into_os_string());
    }
    args.push("--no-session".into());
    args
}

/// `/proc/meminfo`'s `MemAvailable`, in bytes.
#[derive(Clone, Copy, Debug)]
pub struct MemInfo {
    pub available: u64,
}

impl MemInfo {
    pub fn read() -> Option<Self> {
        Self::parse(&std::fs::read_to_string("/proc/meminfo").ok()?)
    }

    fn parse(text: &str) -> Option<Self> {
        let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(Self {
            available: kib.saturating_mul(1024),
        })
    }
}

/// Whether one more process may be pre-started: the machine's available memory covers it and
/// still keeps the reserve. Unknown memory (no `/proc/meminfo`) allows nothing.
pub fn memory_allows(memory: Option<&MemInfo>) -> bool {
    memory.is_some_and(|m| m.available >= MEMORY_RESERVE + MEMORY_PER_PROCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_decides_from_mem_available() {
        let info =
            MemInfo::parse("MemTotal: 8000000 kB\nMemFree: 10 kB\nMemAvailable: 2097152 kB\n");
        assert_eq!(info.map(|m| m.available), Some(2 << 30));
        assert!(memory_allows(info.as_ref()));
        let short = MemInfo::parse("MemAvailable: 1048576 kB\n");
        assert!(!memory_allows(short.as_ref()), "1 GiB leaves no room");
        assert!(!memory_allows(None), "unknown memory pre-starts nothing");
        assert!(MemInfo::parse("MemTotal: 1 kB\n").is_none());
    }

    /// A replacement waits for the workers that are still starting (their `Starting`
    /// tokens), pre-started or cold; the last token's end refills the pool.
    #[tokio::test]
    async fn the_pool_refills_once_no_worker_is_starting_23() {
        let idle_process = PiCommand {
            program: "/bin/sh".into(),
            leading: vec!["-c".into(), "exec sleep 30".into(), "sh".into()],
            env: Vec::new(),
        };
        let policy = PoolPolicy {
            size: 1,
            idle_seconds: 60,
        };
        let pool = Pool::new(policy, 16, idle_process, Containment::ProcessGroup);
        let Some(key) = PoolKey::new(&std::env::temp_dir(), "/s".as_ref(), Vec::new(), Vec::new())
        else {
            panic!("the temporary directory resolves");
        };
        pool.prestart(key.clone());
        assert_eq!(pool.idle_count(), 1);
        let bound = pool.take(&key);
        assert!(bound.process.is_some(), "the idle process is taken");
        let cold = pool.take(&key);
        assert!(cold.process.is_none(), "the second start finds none idle");
        assert_eq!(
            pool.idle_count(),
            0,
            "nothing starts beside starting workers"
        );
        drop(bound.starting);
        assert_eq!(pool.idle_count(), 0, "one worker is still starting");
        drop(cold.starting);
        assert_eq!(pool.idle_count(), 1, "the last one started: refilled");
        pool.drain();
        assert_eq!(pool.idle_count(), 0);
    }

    #[test]
    fn a_pooled_process_has_every_worker_tool_and_no_session() {
        let key = PoolKey {
            cwd: "/w".into(),
            socket: "/s".into(),
            extensions: vec!["/e/worker_entry.ts".into(), "/n/web/index.ts".into()],
            host_tools: vec!["web_search".into(), "read".into()],
        };
        let args: Vec<String> = arguments(&key)
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let tools = args.windows(2).find(|w| w[0] == "--tools").map(|w| &w[1]);
        assert_eq!(
            tools.map(String::as_str),
            Some(
                "read,grep,find,ls,write,edit,bash,submit_result,delegate_task,\
                 delegate_coordinate,web_search"
            )
        );
        assert!(args.contains(&"--no-session".to_owned()));
        assert!(
            !args
                .iter()
                .any(|a| a == "--model" || a == "--system-prompt")
        );
        let loads: Vec<&str> = args
            .windows(2)
            .filter(|w| w[0] == "-e")
            .map(|w| w[1].as_str())
            .collect();
        assert_eq!(loads, ["/e/worker_entry.ts", "/n/web/index.ts"]);
    }
}
