//! Containment: nothing a worker starts outlives it.
//!
//! pi runs each tool in a process group of its own, so signalling the worker's group never
//! reached a tool, and a `kill -9` of pi (or of Slate) left `bash -c 'sleep 30'` running under
//! PID 1 (issue 14, item 1). On Linux every worker process is therefore started under a small
//! **containment process**: the `slate` binary itself, re-executed with the hidden first
//! argument [`SUBCOMMAND`] (`slate __contain-worker <slate-pid> <pi> <args…>`), which
//!
//! 1. makes itself a **child subreaper** (`PR_SET_CHILD_SUBREAPER`): whatever pi or its tools
//!    leave behind — a double fork, `setsid`, `nohup … &`, a tool whose pi was killed — is
//!    reparented to it, never to PID 1, so the worker's whole tree stays below it;
//! 2. starts pi with its own stdin, stdout, stderr, descriptor 3 (the capability pipe),
//!    environment and working directory, in its own process group (which Slate created with
//!    the containment process as leader, so Slate's SIGTERM / SIGKILL escalation reaches pi
//!    directly, as before);
//! 3. takes its signals from a `signalfd` (no handler, no `unsafe`): SIGCHLD, the stop signals
//!    SIGTERM / SIGINT / SIGHUP / SIGQUIT, and `PARENT_GONE` (SIGUSR1) — blocked only after pi
//!    started, so pi's signal mask is its own;
//! 4. asks for `PARENT_GONE` when its parent dies (`PR_SET_PDEATHSIG`), then checks
//!    `getppid()` against the Slate pid it was given, closing the race with a Slate that died
//!    first. Linux sends that signal when the parent *thread* ends, so on the signal it looks
//!    again: a parent still there means a Slate thread ended, and it asks again (and checks
//!    again);
//! 5. when pi exits, when Slate dies, or when it is told to stop, ends every descendant: SIGTERM
//!    to each process of its subtree (found in `/proc` by parent links), [`GRACE`], then SIGKILL
//!    until none is left, reaping all of them, and exits with pi's status (pi's exit code, or
//!    the signal that ended pi raised on itself, so Slate reports what happened to pi).
//!
//! Slate reports the containment process's pid as the worker's, so a process that left pi's
//! tree (a daemonized tool, now a child of the containment process) still speaks as that
//! generation on the control socket, and everything Slate signals is the worker's group. It
//! names itself [`crate::runtime::lineage::CONTAINMENT_NAME`] (`comm`) first, so every
//! coordinator of the user recognizes a worker's tree, its own or another's.
//!
//! **Why this design.** Alternatives considered:
//! - *A cgroup per worker* (`cgroup.kill`) would be atomic and escape-proof, but needs a
//!   writable, delegated cgroup v2 hierarchy, which many machines (containers, cgroup v1
//!   hosts such as the one Slate was built on) do not offer; it can be added on top later.
//! - *Slate itself as the only subreaper, with an environment marker to tell workers apart*:
//!   orphans would be attributed by something a process can clear (its environment), and a
//!   `kill -9` of Slate would leave everything to PID 1. Slate is a subreaper too, but only
//!   as the last resort above the containment processes (`worker::reaper`): what lands there
//!   is attributed to nobody, not to a worker.
//! - *`PR_SET_PDEATHSIG` on pi*: needs a `pre_exec` hook (`unsafe`, forbidden) and still never
//!   reaches the tools in their own process groups.
//!
//! The containment process costs one small extra process per worker (see
//! `docs/performance.md`); it reads nothing from the worker's pipes.
//!
//! **Limits.** This is containment, not a sandbox: a tool running as the same user can still
//! `kill -9` the containment process itself. Its leftovers then go to the next subreaper
//! above: the `slate` coordinator (`worker::reaper`), where they speak for nobody, and which
//! ends the worker's pi and reaps them; to PID 1 only under a program that embeds the
//! runtime without adopting orphans. Between a
//! `/proc` scan and its signal a grandchild could exit, be reaped by its own parent and have
//! its pid reused; direct children cannot (they are reaped only here). On other platforms
//! there is no containment process: each worker leads its own process group, and a tool in
//! another group, or a process left after a `kill -9`, can outlive it (`docs/workers.md`).

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// The hidden first argument that makes the `slate` binary a containment process.
pub const SUBCOMMAND: &str = "__contain-worker";

/// Between SIGTERM and SIGKILL to what is left of a worker. Shorter than the runtime's own
/// escalation grace (`worker::pi::process`, 2 s), so the containment process is done before
/// Slate would SIGKILL its group.
pub const GRACE: Duration = Duration::from_secs(1);

/// How a worker process is contained.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum Containment {
    /// The worker leads its own process group; nothing else (non-Linux platforms, and
    /// embedders that did not name a containment program).
    #[default]
    ProcessGroup,
    /// The worker runs under a containment process: `program` is a `slate` binary, run with
    /// [`SUBCOMMAND`] (Linux only).
    Subreaper { program: PathBuf },
}

impl Containment {
    /// What the running `slate` binary gives its workers: the subreaper on Linux (the binary
    /// re-executed through `/proc/self/exe`, which works even after the file was replaced
    /// or deleted), the process group elsewhere. Only for the `slate` binary itself: another
    /// program does not know [`SUBCOMMAND`].
    pub fn this_slate_binary() -> Self {
        if cfg!(target_os = "linux") {
            Self::Subreaper {
                program: PathBuf::from("/proc/self/exe"),
            }
        } else {
            Self::ProcessGroup
        }
    }

    /// The program and the arguments that run `program args…` under this containment.
    pub fn wrap(&self, program: OsString, args: Vec<OsString>) -> (OsString, Vec<OsString>) {
        match self {
            Self::ProcessGroup => (program, args),
            Self::Subreaper { program: slate } => {
                let mut wrapped = vec![
                    OsString::from(SUBCOMMAND),
                    std::process::id().to_string().into(),
                    program,
                ];
                wrapped.extend(args);
                (slate.clone().into_os_string(), wrapped)
            }
        }
    }
}

/// When the process was started as a containment process (`slate __contain-worker …`), be
/// one and exit with the worker's status; otherwise return at once. Call first in `main`.
pub fn main_if_asked() {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(std::ffi::OsStr::new(SUBCOMMAND)) {
        return;
    }
    #[cfg(target_os = "linux")]
    let code = linux::contain(args);
    #[cfg(not(target_os = "linux"))]
    let code = {
        drop(args);
        eprintln!("slate: {SUBCOMMAND} needs Linux");
        125
    };
    std::process::exit(code)
}

#[cfg(target_os = "linux")]
mod linux {
    use std::ffi::OsString;
    use std::os::fd::AsFd as _;
    use std::time::Instant;

    use nix::errno::Errno;
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use nix::sys::prctl;
    use nix::sys::signal::{SigSet, Signal, kill, raise};
    use nix::sys::signalfd::{SfdFlags, SignalFd};
    use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
    use nix::unistd::{Pid, getpid, getppid};

    use super::GRACE;
    use crate::runtime::lineage::{self, CONTAINMENT_NAME};

    /// The parent-death signal. Not a stop signal: a parent-death signal also comes when
    /// only the parent *thread* ended, so it means "look at `getppid()`".
    pub const PARENT_GONE: Signal = Signal::SIGUSR1;
    /// Signals that tell the containment process to end the worker.
    const STOP: [Signal; 4] = [
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
        Signal::SIGQUIT,
    ];
    /// Exit code when the containment process cannot do its job (bad arguments, no prctl).
    const FAILED: i32 = 125;
    /// Exit code when pi could not be started or contained.
    const NOT_STARTED: i32 = 127;
    /// How often the SIGKILL phase looks for processes again.
    const KILL_ROUND: std::time::Duration = std::time::Duration::from_millis(20);

    /// Why the worker is being ended.
    #[derive(Clone, Copy, Debug)]
    enum Phase {
        Running,
        /// SIGTERM went to the subtree; SIGKILL at the instant.
        Terminating(Instant),
        Killing,
    }

    pub fn contain(mut args: impl Iterator<Item = OsString>) -> i32 {
        // First of all, the name by which any coordinator recognizes a worker's tree
        // (`runtime::lineage`): a process below it that is not that coordinator's live
        // worker speaks for nobody. Only this process can change it.
        if let Ok(name) = std::ffi::CString::new(CONTAINMENT_NAME)
            && let Err(e) = prctl::set_name(&name)
        {
            eprintln!("slate: cannot name the containment process: {e}");
            return FAILED;
        }
        let parent = args
            .next()
            .and_then(|p| p.to_str().and_then(|p| p.parse::<i32>().ok()));
        let (Some(parent), Some(program)) = (parent, args.next()) else {
            eprintln!(
                "slate: {} <slate-pid> <program> [args…] is run by Slate for its workers",
                super::SUBCOMMAND
            );
            return FAILED;
        };
        let rest: Vec<OsString> = args.collect();
        match Container::start(Pid::from_raw(parent), &program, &rest) {
            Ok(Some(mut container)) => container.run(),
            Ok(None) => 0,
            Err(e) => {
                eprintln!("slate: {e}");
                NOT_STARTED
            }
        }
    }

    struct Container {
        parent: Pid,
        me: Pid,
        signals: SignalFd,
        pi: Pid,
        pi_status: Option<WaitStatus>,
        phase: Phase,
    }

    impl Container {
        /// Set up, then start pi; `None` when Slate is already gone (nothing is started).
        /// Become a subreaper, start pi, then take signals from a descriptor and ask for
        /// the parent-death signal; `None` when Slate is already gone (nothing is started).
        ///
        /// Signals are blocked only after pi started: a child inherits the signal mask, and
        /// pi must get SIGTERM and SIGINT as it would without us (std does not reset the
        /// mask, and resetting it in the child needs `pre_exec`, which is `unsafe`). In the
        /// few microseconds before that, a stop signal ends this process by its default
        /// action (pi, in the same process group, gets a group signal too and has started
        /// nothing yet), a lost SIGCHLD is made up for by reaping at the top of every round,
        /// and a Slate that dies is caught by the `getppid` check after the parent-death
        /// signal was asked for.
        fn start(
            parent: Pid,
            program: &OsString,
            args: &[OsString],
        ) -> Result<Option<Self>, String> {
            let failed = |e: Errno| format!("cannot contain the worker: {e}");
            prctl::set_child_subreaper(true).map_err(failed)?;
            if getppid() != parent {
                return Ok(None);
            }
            let child = std::process::Command::new(program)
                .args(args)
                .spawn()
                .map_err(|e| format!("cannot start {}: {e}", program.to_string_lossy()))?;
            let pi = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
            // Reaped below with waitpid; std's handle has nothing left to do.
            drop(child);
            let mut mask = SigSet::empty();
            mask.add(Signal::SIGCHLD);
            mask.add(PARENT_GONE);
            for signal in STOP {
                mask.add(signal);
            }
            mask.thread_block().map_err(failed)?;
            let signals = SignalFd::with_flags(&mask, SfdFlags::SFD_CLOEXEC).map_err(failed)?;
            prctl::set_pdeathsig(PARENT_GONE).map_err(failed)?;
            Ok(Some(Self {
                parent,
                me: getpid(),
                signals,
                pi,
                pi_status: None,
                phase: Phase::Running,
            }))
        }

        fn run(&mut self) -> i32 {
            loop {
                let none_left = self.reap();
                if self.pi_status.is_some() && matches!(self.phase, Phase::Running) {
                    self.terminate();
                }
                if none_left {
                    break;
                }
                if getppid() != self.parent && matches!(self.phase, Phase::Running) {
                    self.terminate();
                }
                let timeout = match self.phase {
                    Phase::Running => None,
                    Phase::Terminating(at) => Some(at.saturating_duration_since(Instant::now())),
                    Phase::Killing => Some(KILL_ROUND),
                };
                match self.next_signal(timeout) {
                    Some(signal) if STOP.contains(&signal) => {
                        if matches!(self.phase, Phase::Running) {
                            self.terminate();
                        }
                    }
                    Some(PARENT_GONE) => {
                        // A Slate thread may have ended rather than Slate: ask again for
                        // the next one (the loop's `getppid` check follows).
                        let _ = prctl::set_pdeathsig(PARENT_GONE);
                    }
                    Some(_) => {}
                    None => match self.phase {
                        Phase::Terminating(at) if Instant::now() >= at => {
                            self.phase = Phase::Killing;
                            self.signal_subtree(Signal::SIGKILL);
                        }
                        Phase::Killing => self.signal_subtree(Signal::SIGKILL),
                        Phase::Running | Phase::Terminating(_) => {}
                    },
                }
            }
            self.exit_like_pi()
        }

        /// SIGTERM to the whole subtree; SIGKILL after [`GRACE`].
        fn terminate(&mut self) {
            self.phase = Phase::Terminating(Instant::now() + GRACE);
            self.signal_subtree(Signal::SIGTERM);
        }

        /// Reap every child that ended; whether no child is left at all.
        fn reap(&mut self) -> bool {
            loop {
                match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                    Ok(WaitStatus::StillAlive) => return false,
                    Ok(status) => {
                        if status.pid() == Some(self.pi) {
                            self.pi_status = Some(status);
                        }
                    }
                    Err(Errno::EINTR) => {}
                    Err(_) => return true,
                }
            }
        }

        /// The next signal, waiting at most `timeout` (`None`: as long as it takes).
        fn next_signal(&self, timeout: Option<std::time::Duration>) -> Option<Signal> {
            let timeout = match timeout {
                None => PollTimeout::NONE,
                Some(d) => PollTimeout::try_from(d).unwrap_or(PollTimeout::MAX),
            };
            let mut fds = [PollFd::new(self.signals.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, timeout) {
                Ok(n) if n > 0 => {}
                _ => return None,
            }
            let info = self.signals.read_signal().ok().flatten()?;
            i32::try_from(info.ssi_signo)
                .ok()
                .and_then(|n| Signal::try_from(n).ok())
        }

        fn signal_subtree(&self, signal: Signal) {
            for pid in descendants(self.me) {
                let _ = kill(pid, signal);
            }
        }

        /// Exit as pi did: its exit code, or the signal that ended it raised on ourselves.
        fn exit_like_pi(&self) -> i32 {
            match self.pi_status {
                Some(WaitStatus::Exited(_, code)) => code,
                Some(WaitStatus::Signaled(_, signal, _)) => {
                    let _ = SigSet::all().thread_unblock();
                    let _ = raise(signal);
                    // Still here: the signal is ignored by default (or SIGPIPE, which Rust
                    // ignores): the shell's convention.
                    128 + signal as i32
                }
                _ => FAILED,
            }
        }
    }

    /// Every process below `root` (`runtime::lineage::descendants`).
    fn descendants(root: Pid) -> Vec<Pid> {
        let root = u32::try_from(root.as_raw()).unwrap_or(0);
        lineage::descendants(root)
            .into_iter()
            .filter_map(|pid| i32::try_from(pid).ok().map(Pid::from_raw))
            .collect()
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn descendants_follow_parent_links() {
            let mut child = std::process::Command::new("sh")
                .args(["-c", "sleep 30 & wait"])
                .spawn()
                .unwrap();
            let shell = Pid::from_raw(i32::try_from(child.id()).unwrap());
            let deadline = Instant::now() + std::time::Duration::from_secs(10);
            let mut below = Vec::new();
            while below.is_empty() && Instant::now() < deadline {
                below = descendants(shell);
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            let mine = descendants(getpid());
            for pid in &below {
                let _ = kill(*pid, Signal::SIGKILL);
            }
            let _ = kill(shell, Signal::SIGKILL);
            let _ = child.wait();
            assert_eq!(below.len(), 1, "the shell's sleep: {below:?}");
            assert!(
                mine.contains(&shell) && mine.contains(&below[0]),
                "{mine:?}"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_subreaper_wraps_the_worker_command() {
        let c = Containment::Subreaper {
            program: PathBuf::from("/x/slate"),
        };
        let (program, args) = c.wrap("pi".into(), vec!["--mode".into(), "rpc".into()]);
        assert_eq!(program, "/x/slate");
        let expected: Vec<OsString> = vec![
            SUBCOMMAND.into(),
            std::process::id().to_string().into(),
            "pi".into(),
            "--mode".into(),
            "rpc".into(),
        ];
        assert_eq!(args, expected);
        assert_eq!(
            Containment::ProcessGroup.wrap("pi".into(), vec![]),
            ("pi".into(), vec![])
        );
    }
}
