//! A `slate` coordinator as its workers' subreaper of last resort (issue 22, item 1).
//!
//! Each worker runs under a containment process that adopts whatever the worker leaves
//! behind (`worker::contain`). A tool of the same user can `kill -9` that containment
//! process; its pi and tools were then reparented to init, out of every worker's tree, and
//! the coordinator took their next `slate` command for the operator's. A coordinator that
//! runs its workers under containment processes therefore also makes itself a **child
//! subreaper** ([`Subreaper::adopt`]): whatever leaves a worker's tree stays below the
//! coordinator, however it forks, double-forks, `setsid`s or kills its containment, and a
//! process below the coordinator that no live worker holds speaks for nobody
//! (`runtime::lineage`). It also takes the name [`COORDINATOR_NAME`], by which every other
//! coordinator of the user recognizes its leftovers.
//!
//! Being a subreaper has two duties, both here:
//!
//! * **reaping.** Adopted processes that exit become this process's zombies. tokio reaps
//!   only the children it started, by pid, so a task reaps the others on every `SIGCHLD`:
//!   a zombie child that is neither in this process's own process group (a plain child such
//!   as `pi --version`) nor a containment process (`tokio` waits for those) was adopted.
//!   Nothing tokio waits for is taken from it;
//! * **ending leftovers.** When the coordinator's runtime has ended (every worker exited),
//!   whatever is still below this process is a leftover: [`Subreaper`]'s drop sends it
//!   SIGKILL and reaps it, so none of it outlives the coordinator under init, where another
//!   coordinator could no longer tell it from the operator's processes.
//!
//! Only for a process whose workers run under containment processes and that starts no
//! process of the operator's below itself (`slate serve`, `slate run`, `slate mcp`, the
//! Hub's embedded coordinator): a program embedding the runtime that starts its own
//! children must not adopt.
//!
//! **Why this and not the alternatives** (`docs/protocol.md`, "What this does not cover"):
//! a cgroup per worker would mark a worker's processes for good, but needs a writable,
//! delegated cgroup hierarchy (not there without root on cgroup v1 hosts such as the one
//! Slate is built on, and a same-user process can move itself out of a delegated one);
//! Landlock's signal scoping (Linux 6.12) keeps a worker from signalling its containment at
//! all, but needs `no_new_privs` on every tool (no `sudo` inside a worker) and does not stop
//! a worker that asks an outside process to do the killing. The subreaper holds on any
//! Linux without root, whatever ends the containment process.

#[cfg(target_os = "linux")]
use crate::runtime::lineage::{self, CONTAINMENT_NAME, COORDINATOR_NAME};

/// How long dropping a [`Subreaper`] keeps killing and reaping leftovers at most.
#[cfg(target_os = "linux")]
const END_WITHIN: std::time::Duration = std::time::Duration::from_secs(2);

/// This process as its workers' subreaper; see the module documentation. Dropping it ends
/// whatever is left below this process.
#[derive(Debug)]
pub struct Subreaper {
    #[cfg(target_os = "linux")]
    reaper: tokio::task::JoinHandle<()>,
}

impl Subreaper {
    /// Become a child subreaper, take the coordinator's name and reap adopted processes
    /// from now on. Inside a tokio runtime. Fails on platforms without subreapers.
    pub fn adopt() -> Result<Self, String> {
        #[cfg(target_os = "linux")]
        {
            use tokio::signal::unix::{SignalKind, signal};
            nix::sys::prctl::set_child_subreaper(true)
                .map_err(|e| format!("cannot become the workers' subreaper: {e}"))?;
            // `/proc/self/comm` names the thread-group leader from any thread (a runtime
            // worker thread calls this); `PR_SET_NAME` would name only the calling thread.
            std::fs::write("/proc/self/comm", COORDINATOR_NAME)
                .map_err(|e| format!("cannot take the coordinator's process name: {e}"))?;
            let mut children = signal(SignalKind::child())
                .map_err(|e| format!("cannot watch for SIGCHLD: {e}"))?;
            let reaper = tokio::spawn(async move {
                loop {
                    reap_adopted();
                    if children.recv().await.is_none() {
                        break;
                    }
                }
            });
            Ok(Self { reaper })
        }
        #[cfg(not(target_os = "linux"))]
        {
            Err("a coordinator can adopt its workers' leftovers on Linux only".to_owned())
        }
    }
}

impl Drop for Subreaper {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        {
            self.reaper.abort();
            end_leftovers();
        }
    }
}

/// Reaps every zombie child this process adopted (see the module documentation for which).
#[cfg(target_os = "linux")]
fn reap_adopted() {
    use nix::sys::wait::{WaitPidFlag, waitpid};
    let own = std::process::id();
    let own_group = u32::try_from(nix::unistd::getpgrp().as_raw()).unwrap_or(0);
    for pid in lineage::proc_pids() {
        let Some(stat) = lineage::proc_stat(pid) else {
            continue;
        };
        if stat.ppid == own
            && stat.state == 'Z'
            && stat.pgrp != own_group
            && stat.comm != CONTAINMENT_NAME
            && let Ok(raw) = i32::try_from(pid)
        {
            let _ = waitpid(nix::unistd::Pid::from_raw(raw), Some(WaitPidFlag::WNOHANG));
        }
    }
}

/// SIGKILL to everything still below this process, reaping what was adopted, until nothing
/// is left or [`END_WITHIN`] passed. Called when the runtime has ended every worker.
#[cfg(target_os = "linux")]
fn end_leftovers() {
    use nix::sys::signal::{Signal, kill};
    let deadline = std::time::Instant::now() + END_WITHIN;
    loop {
        reap_adopted();
        let left: Vec<u32> = lineage::descendants(std::process::id())
            .into_iter()
            .filter(|&pid| lineage::proc_stat(pid).is_some_and(|s| s.state != 'Z'))
            .collect();
        if left.is_empty() || std::time::Instant::now() >= deadline {
            return;
        }
        for pid in left {
            if let Ok(raw) = i32::try_from(pid) {
                let _ = kill(nix::unistd::Pid::from_raw(raw), Signal::SIGKILL);
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
