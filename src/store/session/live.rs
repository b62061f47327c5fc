//! Is a live pi process using this session file?
//!
//! pi 1.6 holds no lock on its session file and keeps no descriptor open between writes (every
//! entry is one `appendFileSync`), and it overwrites its own command line with its title
//! (`/proc/<pid>/cmdline` reads `pi` or `pi-rpc`, so `--session FILE` cannot be read back).
//! A descriptor scan alone would therefore only catch pi in the middle of a write. Slate
//! instead treats a pi process as a possible writer of a session file when any of these holds
//! (scanning `/proc/<pid>` of every process it may read, i.e. the same user's):
//!
//! 1. the process has the file open right now (`/proc/<pid>/fd/*`);
//! 2. its working directory is the session's recorded `cwd` (pi's `--continue`, `--resume`
//!    and default new sessions all work there);
//! 3. the directory holding the file is that process's session directory: its
//!    `PI_CODING_AGENT_SESSION_DIR`, or pi's default `<agentDir>/sessions/--<cwd>--/` computed
//!    from its environment (`PI_CODING_AGENT_DIR`, `HOME`) and working directory.
//!
//! With `--from-pi` the pi that ran the command (its parent process, which must be a pi) is not
//! counted: that is the session's owner asking through Slate's extension, idle, and it lets go
//! of the session right after (it switches to the successor, or re-opens the session).
//!
//! A pi process is one whose `comm` or title is `pi` or `pi-rpc`, or whose command line
//! names `pi-coding-agent`. A pi whose parent process is `slate` or its containment process
//! (`slate-contain`), or that was started with `SLATE_CAPABILITY_FD` (a worker, cold or
//! pre-started), is one of Slate's own workers:
//! it writes only its transcripts under the `--session-dir` Slate gave it, so only rule 1
//! applies to it (a fleet working in the project directory does not block a handoff).
//!
//! # Limits (documented in docs/handoff.md)
//! * It is conservative: a pi working in the same project on *another* session also blocks.
//! * Processes of other users and other PID namespaces are invisible.
//! * A pi that opened the file through `--session-dir` or `--session` from an unrelated
//!   directory is seen only while it writes.
//! * It is a check, not a lock: a pi started between the check and the append is not seen.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::store::paths;

/// A live process that may write the session, and why Slate thinks so.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holder {
    pub pid: u32,
    pub why: String,
}

/// Finds a live writer of a session file. [`ProcScan`] is the real one; tests use others.
pub trait LiveProbe {
    /// `file` is the session file; `session_cwd` its header's `cwd`.
    fn holder(&self, file: &Path, session_cwd: Option<&Path>) -> Option<Holder>;
}

/// Never finds a holder (tests of files no pi can know about).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoProbe;

impl LiveProbe for NoProbe {
    fn holder(&self, _: &Path, _: Option<&Path>) -> Option<Holder> {
        None
    }
}

/// Scans `/proc` (Linux).
#[derive(Clone, Debug)]
pub struct ProcScan {
    root: PathBuf,
    /// The pi that owns the session and ran this command itself (`--from-pi`).
    host: Option<u32>,
}

impl Default for ProcScan {
    fn default() -> Self {
        Self {
            root: PathBuf::from("/proc"),
            host: None,
        }
    }
}

impl ProcScan {
    /// A scan of another `/proc`-shaped tree (tests build one).
    pub fn with_root(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            host: None,
        }
    }

    /// Do not count `pid` as a writer: the pi that owns the session, idle, asking through its
    /// Slate extension (which then switches away from or re-opens the session). Refused unless
    /// `pid` is a pi process.
    pub fn with_host(self, pid: u32) -> Result<Self, String> {
        if !is_pi(&self.root.join(pid.to_string())) {
            return Err(format!(
                "--from-pi: this command's parent process (pid {pid}) is not pi; only the Slate \
                 extension inside the pi that owns the session passes --from-pi"
            ));
        }
        Ok(Self {
            host: Some(pid),
            ..self
        })
    }
}

impl LiveProbe for ProcScan {
    fn holder(&self, file: &Path, session_cwd: Option<&Path>) -> Option<Holder> {
        let file = fs::canonicalize(file).unwrap_or_else(|_| file.to_owned());
        let dir = file.parent().map(Path::to_owned);
        let cwd = session_cwd.map(|c| fs::canonicalize(c).unwrap_or_else(|_| c.to_owned()));
        let me = std::process::id();
        let listing = fs::read_dir(&self.root).ok()?;
        for entry in listing.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            if pid == me || Some(pid) == self.host || !is_pi(&entry.path()) {
                continue;
            }
            if let Some(why) = uses(
                &self.root,
                &entry.path(),
                &file,
                dir.as_deref(),
                cwd.as_deref(),
            ) {
                return Some(Holder { pid, why });
            }
        }
        None
    }
}

fn is_pi(proc_dir: &Path) -> bool {
    let named = |text: &str| matches!(text.trim(), "pi" | "pi-rpc");
    if fs::read_to_string(proc_dir.join("comm")).is_ok_and(|c| named(&c)) {
        return true;
    }
    let Ok(cmdline) = fs::read(proc_dir.join("cmdline")) else {
        return false;
    };
    let first = cmdline.split(|b| *b == 0).next().unwrap_or_default();
    let first = String::from_utf8_lossy(first);
    named(&first)
        || Path::new(first.trim())
            .file_name()
            .is_some_and(|n| named(&n.to_string_lossy()))
        || cmdline
            .windows(b"pi-coding-agent".len())
            .any(|w| w == b"pi-coding-agent")
}

/// Whether the process is one of Slate's workers: its parent is `slate` or a containment
/// process (`slate-contain`), or it was started with a worker's capability descriptor
/// (`SLATE_CAPABILITY_FD` in its initial environment: cold and pre-started workers alike).
fn is_slate_worker(root: &Path, proc_dir: &Path) -> bool {
    let capability_fd = crate::runtime::backend::WORKER_CAPABILITY_FD_ENV.as_bytes();
    if fs::read(proc_dir.join("environ")).is_ok_and(|environ| {
        environ.split(|b| *b == 0).any(|kv| {
            kv.strip_prefix(capability_fd)
                .is_some_and(|rest| rest.first() == Some(&b'='))
        })
    }) {
        return true;
    }
    let Ok(status) = fs::read_to_string(proc_dir.join("status")) else {
        return false;
    };
    let Some(ppid) = status
        .lines()
        .find_map(|l| l.strip_prefix("PPid:"))
        .map(str::trim)
    else {
        return false;
    };
    fs::read_to_string(root.join(ppid).join("comm"))
        .is_ok_and(|c| matches!(c.trim(), "slate" | "slate-contain"))
}

fn uses(
    root: &Path,
    proc_dir: &Path,
    file: &Path,
    dir: Option<&Path>,
    cwd: Option<&Path>,
) -> Option<String> {
    if let Ok(fds) = fs::read_dir(proc_dir.join("fd")) {
        for fd in fds.flatten() {
            if fs::read_link(fd.path()).is_ok_and(|target| target == file) {
                return Some("has the file open".to_owned());
            }
        }
    }
    if is_slate_worker(root, proc_dir) {
        return None;
    }
    let proc_cwd = fs::read_link(proc_dir.join("cwd")).ok()?;
    if cwd.is_some_and(|c| c == proc_cwd) {
        return Some(format!(
            "works in the session's directory {}",
            proc_cwd.display()
        ));
    }
    let dir = dir?;
    let environ = fs::read(proc_dir.join("environ")).unwrap_or_default();
    let var = |name: &str| -> Option<String> {
        environ.split(|b| *b == 0).find_map(|kv| {
            let rest = kv.strip_prefix(name.as_bytes())?.strip_prefix(b"=")?;
            Some(OsStr::from_bytes(rest).to_string_lossy().into_owned())
        })
    };
    let mut session_dirs = Vec::new();
    if let Some(d) = var("PI_CODING_AGENT_SESSION_DIR").filter(|d| !d.is_empty()) {
        session_dirs.push(proc_cwd.join(d));
    }
    let home = var("HOME").map(PathBuf::from);
    if let Ok(agent) =
        crate::policy::trust::agent_dir(var("PI_CODING_AGENT_DIR").as_deref(), home.as_deref())
        && let Ok(d) = paths::default_session_dir(&agent, &proc_cwd)
    {
        session_dirs.push(d);
    }
    session_dirs
        .into_iter()
        .map(|d| fs::canonicalize(&d).unwrap_or(d))
        .find(|d| d == dir)
        .map(|d| format!("keeps its sessions in {}", d.display()))
}
