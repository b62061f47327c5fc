//! The delegation policy as it is now. A running coordinator asks [`LivePolicy::current`]
//! before every admission, renewal and resume, and its runtime asks again before every
//! dequeue opportunity, so an edited `delegation.json` (or `trust.json`, `settings.json`, a
//! granted skill file) takes effect at the next invocation without a restart.
//!
//! Asking is cheap: every file the resolution depends on is `lstat`ed (and `stat`ed through a
//! symlink) and compared with the stamp taken before it was last read (device, inode, size, mode, mtime and ctime to the
//! nanosecond). Only a changed stamp re-reads and re-resolves. A stamp taken within
//! [`RACY_WINDOW`] of the file's own timestamps is *racy* — a second write in the same clock
//! tick with the same size would leave it unchanged — so a racy file's content is hashed again
//! at each check until the stamp is older than the window (git's racy-index rule).
//!
//! An invalid policy is cached only briefly: while a file is invalid, a check resolves again
//! when a watched file changed, and otherwise at most every [`INVALID_RECHECK`] (a skill
//! file whose absence made the policy invalid is not known, so not watched, until the policy
//! resolves again).

use std::hash::{DefaultHasher, Hasher};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use crate::policy::Problems;
use crate::policy::scheduling::SchedulingPolicy;
use crate::policy::trust::{PROJECT_CONFIG_FILES, SETTINGS_FILE, TRUST_FILE};

use super::{Loaded, MAX_CONFIG_BYTES, load_in};

/// A stamp taken this close to its file's mtime or ctime is re-checked by content.
pub const RACY_WINDOW: Duration = Duration::from_secs(2);

/// While the policy is invalid and no watched file changed, it is resolved again this often.
pub const INVALID_RECHECK: Duration = Duration::from_secs(1);

/// The policy now, or why there is none. See the module documentation.
pub struct LivePolicy {
    mode: Mode,
}

enum Mode {
    /// Resolved once (the demo, tests): never re-read.
    Fixed(Arc<Loaded>),
    Watched(Watched),
}

struct Watched {
    cwd: PathBuf,
    agent_dir: PathBuf,
    approve: Option<bool>,
    state: Mutex<State>,
}

struct State {
    /// The stamps taken before the current result was resolved (`None` before the first).
    stamps: Option<Vec<Stamp>>,
    result: Result<Arc<Loaded>, Problems>,
    /// When the current result was resolved.
    resolved_at: Instant,
    resolutions: u64,
}

/// The delegation policy is invalid: new work is refused until it is fixed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the delegation policy is invalid; new work is refused until it is fixed:\n{problems}")]
pub struct PolicyUnavailable {
    /// Every problem, each naming the file, the JSON path of the field and the rule.
    pub problems: Problems,
}

impl LivePolicy {
    /// A policy resolved once and never re-read.
    pub fn fixed(loaded: Loaded) -> Self {
        Self {
            mode: Mode::Fixed(Arc::new(loaded)),
        }
    }

    /// Watch the policy of `cwd` with pi's agent dir from the environment, as [`super::load`].
    ///
    /// # Errors
    /// The policy is invalid now (a coordinator does not start on an invalid policy).
    pub fn watch(cwd: &Path, approve: Option<bool>) -> Result<Self, Problems> {
        Self::watch_in(cwd, &super::env_agent_dir().map_err(Problems)?, approve)
    }

    /// [`LivePolicy::watch`] with an explicit agent dir.
    ///
    /// # Errors
    /// The policy is invalid now.
    pub fn watch_in(cwd: &Path, agent_dir: &Path, approve: Option<bool>) -> Result<Self, Problems> {
        // Resolution canonicalizes the directory; watch the canonical files. (A directory
        // that cannot be resolved fails in the resolution below, naming it.)
        let cwd = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_owned());
        let watched = Watched {
            cwd,
            agent_dir: agent_dir.to_owned(),
            approve,
            state: Mutex::new(State {
                stamps: None,
                result: Err(Problems(Vec::new())),
                resolved_at: Instant::now(),
                resolutions: 0,
            }),
        };
        watched.current().map_err(|e| e.problems)?;
        Ok(Self {
            mode: Mode::Watched(watched),
        })
    }

    /// What admission uses now: the resolved policy, or every problem of the files.
    ///
    /// # Errors
    /// A file is invalid (or unreadable): every problem, each naming the file and the field.
    pub fn current(&self) -> Result<Arc<Loaded>, PolicyUnavailable> {
        match &self.mode {
            Mode::Fixed(loaded) => Ok(Arc::clone(loaded)),
            Mode::Watched(watched) => watched.current(),
        }
    }

    /// The scheduling policy now; `None` while the policy is invalid.
    pub fn scheduling(&self) -> Option<SchedulingPolicy> {
        self.current().ok().map(|l| l.profiles.scheduling)
    }

    /// How many times the files were resolved (1 at start; a cache hit adds nothing).
    pub fn resolutions(&self) -> u64 {
        match &self.mode {
            Mode::Fixed(_) => 1,
            Mode::Watched(watched) => watched.lock().resolutions,
        }
    }
}

impl From<Loaded> for Arc<LivePolicy> {
    fn from(loaded: Loaded) -> Self {
        Arc::new(LivePolicy::fixed(loaded))
    }
}

impl crate::runtime::PolicySource for LivePolicy {
    fn scheduling(&self) -> Option<SchedulingPolicy> {
        LivePolicy::scheduling(self)
    }
}

impl Watched {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn current(&self) -> Result<Arc<Loaded>, PolicyUnavailable> {
        let mut state = self.lock();
        let recheck = state.result.is_err() && state.resolved_at.elapsed() >= INVALID_RECHECK;
        let fresh = !recheck
            && state
                .stamps
                .as_mut()
                .is_some_and(|stamps| stamps.iter_mut().all(Stamp::still_valid));
        if !fresh {
            // Stamp first, then read: a write in between is caught by the next check.
            let before: Vec<Stamp> = watched_paths(&self.cwd, &self.agent_dir, &[])
                .iter()
                .map(|p| Stamp::take(p))
                .collect();
            state.resolutions += 1;
            state.resolved_at = Instant::now();
            match load_in(&self.cwd, &self.agent_dir, self.approve) {
                Ok(loaded) => {
                    let mut stamps = before;
                    stamps.extend(skill_paths(&loaded).iter().map(|p| Stamp::take(p)));
                    state.stamps = Some(stamps);
                    state.result = Ok(Arc::new(loaded));
                }
                Err(problems) => {
                    state.stamps = Some(before);
                    state.result = Err(Problems(problems));
                }
            }
        }
        state
            .result
            .clone()
            .map_err(|problems| PolicyUnavailable { problems })
    }
}

/// Every file resolution reads or whose existence it tests, plus the granted skill files.
fn watched_paths(cwd: &Path, agent_dir: &Path, skills: &[PathBuf]) -> Vec<PathBuf> {
    let mut paths = vec![
        agent_dir.join("delegation.json"),
        agent_dir.join(TRUST_FILE),
        agent_dir.join(SETTINGS_FILE),
    ];
    paths.extend(PROJECT_CONFIG_FILES.iter().map(|rel| cwd.join(rel)));
    paths.extend(skills.iter().cloned());
    paths
}

fn skill_paths(loaded: &Loaded) -> Vec<PathBuf> {
    let mut skills: Vec<PathBuf> = loaded
        .profiles
        .profiles
        .iter()
        .flat_map(|p| p.skills.iter().map(PathBuf::from))
        .collect();
    skills.sort();
    skills.dedup();
    skills
}

/// What one file looked like when it was last read.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Stamp {
    path: PathBuf,
    seen: Seen,
    /// The content hash, for a racy stamp of a regular file.
    digest: Option<u64>,
    racy: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seen {
    Absent,
    /// `stat` failed for another reason (the kind is enough to notice a change).
    Unreadable(io::ErrorKind),
    Present(Meta),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Meta {
    dev: u64,
    ino: u64,
    mode: u32,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    fn take(path: &Path) -> Self {
        let (seen, racy) = observe(path);
        let digest = if racy { digest(path) } else { None };
        Self {
            path: path.to_owned(),
            seen,
            digest,
            racy,
        }
    }

    /// Whether the file is still as stamped: one `stat`, plus a content hash while racy
    /// (a racy stamp that turns out unchanged is renewed, so it stops being racy).
    fn still_valid(&mut self) -> bool {
        let (seen, racy) = observe(&self.path);
        if seen != self.seen {
            return false;
        }
        if !self.racy {
            return true;
        }
        let digest = digest(&self.path);
        if digest != self.digest {
            return false;
        }
        self.racy = racy;
        self.digest = if racy { digest } else { None };
        true
    }
}

/// `lstat`, then `stat` through a symlink (a dangling link is seen as the link itself): one
/// system call for a missing or regular file. And whether the file changed within
/// [`RACY_WINDOW`] of now.
fn observe(path: &Path) -> (Seen, bool) {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(link) if link.file_type().is_symlink() => std::fs::metadata(path).unwrap_or(link),
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return (Seen::Absent, false),
        Err(e) => return (Seen::Unreadable(e.kind()), false),
    };
    let seen = Meta {
        dev: meta.dev(),
        ino: meta.ino(),
        mode: meta.mode(),
        size: meta.size(),
        mtime: (meta.mtime(), meta.mtime_nsec()),
        ctime: (meta.ctime(), meta.ctime_nsec()),
    };
    (Seen::Present(seen), is_racy(&seen, SystemTime::now()))
}

fn is_racy(meta: &Meta, now: SystemTime) -> bool {
    let latest = meta.mtime.max(meta.ctime);
    let Ok(now) = now.duration_since(SystemTime::UNIX_EPOCH) else {
        return true;
    };
    let now = (
        i64::try_from(now.as_secs()).unwrap_or(i64::MAX),
        i64::from(now.subsec_nanos()),
    );
    let window = i64::try_from(RACY_WINDOW.as_secs()).unwrap_or(i64::MAX);
    // A timestamp in the future (clock skew) is racy too.
    (latest.0.saturating_add(window), latest.1) >= now
}

/// The hash of a regular file's content (bounded like the configuration reader).
fn digest(path: &Path) -> Option<u64> {
    use std::io::Read;
    let file = std::fs::File::open(path).ok()?;
    let mut bytes = Vec::new();
    file.take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    let mut hasher = DefaultHasher::new();
    hasher.write(&bytes);
    Some(hasher.finish())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

    use std::fs::{File, FileTimes};

    use super::*;

    fn dirs() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let base = tempfile::tempdir().unwrap();
        let cwd = base.path().join("work");
        let agent = base.path().join("agent");
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::create_dir_all(&agent).unwrap();
        (base, cwd, agent)
    }

    fn concurrency(live: &LivePolicy) -> u32 {
        live.current().unwrap().profiles.scheduling.concurrency
    }

    /// Rewrite `path`, then put its mtime back: only size, ctime or content can tell.
    fn rewrite_keeping_mtime(path: &Path, text: &str) {
        let mtime = std::fs::metadata(path).unwrap().modified().unwrap();
        std::fs::write(path, text).unwrap();
        File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_times(FileTimes::new().set_modified(mtime))
            .unwrap();
    }

    #[test]
    fn an_unchanged_policy_is_not_resolved_again() {
        let (_base, cwd, agent) = dirs();
        std::fs::write(
            agent.join("delegation.json"),
            r#"{"scheduling": {"concurrency": 3}}"#,
        )
        .unwrap();
        let live = LivePolicy::watch_in(&cwd, &agent, None).unwrap();
        // Let the stamps age out of the racy window so only `stat` runs.
        let mut state = match &live.mode {
            Mode::Watched(w) => w.lock(),
            Mode::Fixed(_) => unreachable!(),
        };
        for stamp in state.stamps.as_mut().unwrap() {
            stamp.racy = false;
            stamp.digest = None;
        }
        drop(state);
        for _ in 0..100 {
            assert_eq!(concurrency(&live), 3);
        }
        assert_eq!(live.resolutions(), 1);
    }

    #[test]
    fn a_change_of_size_with_the_same_mtime_is_noticed() {
        let (_base, cwd, agent) = dirs();
        let file = agent.join("delegation.json");
        std::fs::write(&file, r#"{"scheduling": {"concurrency": 3}}"#).unwrap();
        let live = LivePolicy::watch_in(&cwd, &agent, None).unwrap();
        assert_eq!(concurrency(&live), 3);
        rewrite_keeping_mtime(&file, r#"{"scheduling": {"concurrency": 12}}"#);
        assert_eq!(concurrency(&live), 12);
        assert_eq!(live.resolutions(), 2);
    }

    #[test]
    fn a_same_size_rewrite_in_the_same_tick_is_noticed_by_content() {
        let (_base, cwd, agent) = dirs();
        let file = agent.join("delegation.json");
        std::fs::write(&file, r#"{"scheduling": {"concurrency": 3}}"#).unwrap();
        let live = LivePolicy::watch_in(&cwd, &agent, None).unwrap();
        assert_eq!(concurrency(&live), 3);
        // Freeze every stat field (as a coarse clock tick would) by restoring the stamp
        // after the write: only the racy content check can see the new value.
        let before = observe(&file).0;
        rewrite_keeping_mtime(&file, r#"{"scheduling": {"concurrency": 5}}"#);
        if let Mode::Watched(w) = &live.mode {
            let mut state = w.lock();
            let stamp = state.stamps.as_mut().unwrap();
            let stamp = stamp.iter_mut().find(|s| s.path == file).unwrap();
            assert!(stamp.racy, "a stamp taken right after a write is racy");
            assert_eq!(stamp.seen, before);
            stamp.seen = observe(&file).0;
        }
        assert_eq!(concurrency(&live), 5);
    }

    #[test]
    fn a_corrupt_file_fails_closed_naming_the_file_and_recovers_when_fixed() {
        let (_base, cwd, agent) = dirs();
        let file = agent.join("delegation.json");
        std::fs::write(&file, r#"{"scheduling": {"concurrency": 3}}"#).unwrap();
        let live = LivePolicy::watch_in(&cwd, &agent, None).unwrap();
        std::fs::write(&file, "{ not json").unwrap();
        let err = live.current().unwrap_err();
        let text = err.to_string();
        assert!(text.contains(&file.display().to_string()), "{text}");
        assert_eq!(live.scheduling(), None);
        std::fs::write(&file, r#"{"scheduling": {"concurrency": 2}}"#).unwrap();
        assert_eq!(concurrency(&live), 2);
    }

    #[test]
    fn an_invalid_policy_is_resolved_again_at_most_every_recheck_unless_a_file_changes() {
        let (_base, cwd, agent) = dirs();
        let file = agent.join("delegation.json");
        std::fs::write(&file, r#"{"scheduling": {"concurrency": 3}}"#).unwrap();
        let live = LivePolicy::watch_in(&cwd, &agent, None).unwrap();
        std::fs::write(&file, r#"{"scheduling": {"concurrency": 99}}"#).unwrap();
        assert!(live.current().is_err());
        let resolved = live.resolutions();
        for _ in 0..20 {
            assert!(live.current().is_err());
        }
        // Only racy content checks ran; nothing changed, so nothing was resolved again.
        assert_eq!(live.resolutions(), resolved);
        if let Mode::Watched(w) = &live.mode {
            w.lock().resolved_at -= INVALID_RECHECK;
        }
        assert!(live.current().is_err());
        assert_eq!(
            live.resolutions(),
            resolved + 1,
            "rechecked after the interval"
        );
        std::fs::write(&file, r#"{"scheduling": {"concurrency": 9}}"#).unwrap();
        assert_eq!(concurrency(&live), 9, "a fix is seen at once");
    }

    #[test]
    fn a_retargeted_symlink_and_an_edit_through_it_are_noticed() {
        let (base, cwd, agent) = dirs();
        let (a, b) = (base.path().join("a.json"), base.path().join("b.json"));
        std::fs::write(&a, r#"{"scheduling": {"concurrency": 3}}"#).unwrap();
        std::fs::write(&b, r#"{"scheduling": {"concurrency": 4}}"#).unwrap();
        let link = agent.join("delegation.json");
        std::os::unix::fs::symlink(&a, &link).unwrap();
        let live = LivePolicy::watch_in(&cwd, &agent, None).unwrap();
        assert_eq!(concurrency(&live), 3);
        std::fs::write(&a, r#"{"scheduling": {"concurrency": 11}}"#).unwrap();
        assert_eq!(concurrency(&live), 11, "an edit of the target");
        let tmp = agent.join("link.tmp");
        std::os::unix::fs::symlink(&b, &tmp).unwrap();
        std::fs::rename(&tmp, &link).unwrap();
        assert_eq!(concurrency(&live), 4, "the link now names another file");
    }

    #[test]
    fn a_granted_skill_file_is_watched() {
        let (base, cwd, agent) = dirs();
        let skill = base.path().join("review.md");
        std::fs::write(&skill, "# Review\n").unwrap();
        std::fs::write(
            agent.join("delegation.json"),
            serde_json::json!({"general": {"skills": [skill.display().to_string()]}}).to_string(),
        )
        .unwrap();
        let live = LivePolicy::watch_in(&cwd, &agent, None).unwrap();
        std::fs::remove_file(&skill).unwrap();
        let err = live.current().unwrap_err();
        assert!(err.to_string().contains("skills"), "{err}");
        std::fs::write(&skill, "# Review\n").unwrap();
        if let Mode::Watched(w) = &live.mode {
            w.lock().resolved_at -= INVALID_RECHECK;
        }
        assert!(
            live.current().is_ok(),
            "a restored skill is seen at the recheck"
        );
    }

    #[test]
    fn a_created_or_deleted_file_is_noticed() {
        let (_base, cwd, agent) = dirs();
        let live = LivePolicy::watch_in(&cwd, &agent, None).unwrap();
        assert_eq!(concurrency(&live), 16);
        let file = agent.join("delegation.json");
        std::fs::write(&file, r#"{"scheduling": {"queue": 4}}"#).unwrap();
        assert_eq!(live.current().unwrap().profiles.scheduling.queue, 4);
        std::fs::remove_file(&file).unwrap();
        assert_eq!(live.current().unwrap().profiles.scheduling.queue, 32);
    }

    #[test]
    fn a_trust_decision_is_part_of_the_policy() {
        let (_base, cwd, agent) = dirs();
        std::fs::create_dir_all(cwd.join(".pi")).unwrap();
        std::fs::write(
            cwd.join(".pi/delegation.json"),
            r#"{"scheduling": {"concurrency": 1}}"#,
        )
        .unwrap();
        let canonical = std::fs::canonicalize(&cwd).unwrap();
        let trust = |value: bool| {
            std::fs::write(
                agent.join(TRUST_FILE),
                serde_json::json!({ canonical.display().to_string(): value }).to_string(),
            )
            .unwrap();
        };
        trust(false);
        let live = LivePolicy::watch_in(&cwd, &agent, None).unwrap();
        assert_eq!(concurrency(&live), 16, "an untrusted project is not read");
        trust(true);
        assert_eq!(concurrency(&live), 1, "trusting it applies its file");
    }

    #[test]
    fn racy_means_within_the_window_of_the_newest_timestamp() {
        let meta = |secs| Meta {
            dev: 1,
            ino: 1,
            mode: 0o100_644,
            size: 1,
            mtime: (secs, 0),
            ctime: (secs, 0),
        };
        let at = |secs| SystemTime::UNIX_EPOCH + Duration::from_secs(secs);
        assert!(is_racy(&meta(100), at(101)));
        assert!(is_racy(&meta(100), at(102)));
        assert!(!is_racy(&meta(100), at(103)));
        assert!(is_racy(&meta(200), at(100)), "a future timestamp is racy");
    }
}
