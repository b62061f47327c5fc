//! Loading configuration for the current directory: the agent dir, pi's project-trust
//! decision, and `delegation.json` from the operator and (trusted) project. The IO edge for
//! `policy::profiles` and `policy::trust`; [`routing`] does the same for `slate.json`.

pub mod live;
pub mod routing;

use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::policy::Problem;
use crate::policy::capabilities::{OfferedTool, pi_offered_tools};
use crate::policy::profiles::{ConfigFile, Profile, ResolvedProfiles, Source, resolve};
use crate::policy::scheduling::SchedulingPolicy;
use crate::policy::trust::{TrustDecision, agent_dir, decide_trust, has_project_config};
use crate::store::fs::RealFs;

/// Configuration files larger than this are refused (they are hand-written JSON).
const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// Everything resolved for one directory.
#[derive(Clone, Debug)]
pub struct Loaded {
    pub cwd: PathBuf,
    pub agent_dir: PathBuf,
    /// `None` when the project has no `.pi/delegation.json` or `.pi/slate.json`: no trust
    /// decision is needed to read nothing.
    pub trust: Option<TrustDecision>,
    pub profiles: ResolvedProfiles,
}

/// Where configuration comes from for one directory: the canonical `cwd`, pi's agent dir
/// (`PI_CODING_AGENT_DIR`, else `~/.pi/agent`) and the project-trust decision (`None` when
/// the project has no `.pi/` configuration and no `--approve`/`--no-approve` was given).
pub(crate) struct Located {
    pub cwd: PathBuf,
    pub agent_dir: PathBuf,
    pub trust: Option<TrustDecision>,
}

pub(crate) fn locate(cwd: &Path, approve: Option<bool>) -> Result<Located, Vec<Problem>> {
    locate_in(cwd, &env_agent_dir()?, approve)
}

/// pi's agent dir from the environment (`PI_CODING_AGENT_DIR`, else `~/.pi/agent`).
fn env_agent_dir() -> Result<PathBuf, Vec<Problem>> {
    let env_dir = std::env::var("PI_CODING_AGENT_DIR").ok();
    let home = std::env::var_os("HOME").map(PathBuf::from);
    agent_dir(env_dir.as_deref(), home.as_deref()).map_err(|p| vec![p])
}

fn locate_in(cwd: &Path, agent_dir: &Path, approve: Option<bool>) -> Result<Located, Vec<Problem>> {
    let agent_dir = agent_dir.to_owned();
    let cwd = std::fs::canonicalize(cwd).map_err(|e| {
        vec![
            Problem::new(
                "cwd",
                format!("the working directory cannot be resolved: {e}"),
            )
            .value(cwd.display()),
        ]
    })?;
    let trust = if approve.is_some() || has_project_config(&cwd, &RealFs) {
        Some(decide_trust(&cwd, &agent_dir, approve, &RealFs)?)
    } else {
        None
    };
    Ok(Located {
        cwd,
        agent_dir,
        trust,
    })
}

/// Resolve the policy for `cwd`. `approve` is `--approve` (`Some(true)`) or
/// `--no-approve` (`Some(false)`).
pub fn load(cwd: &Path, approve: Option<bool>) -> Result<Loaded, Vec<Problem>> {
    load_in(cwd, &env_agent_dir()?, approve)
}

/// [`load`] with an explicit agent dir (what `PI_CODING_AGENT_DIR` would name).
pub fn load_in(
    cwd: &Path,
    agent_dir: &Path,
    approve: Option<bool>,
) -> Result<Loaded, Vec<Problem>> {
    let Located {
        cwd,
        agent_dir,
        trust,
    } = locate_in(cwd, agent_dir, approve)?;
    let trusted = trust.as_ref().is_some_and(|t| t.trusted);

    let operator_path = agent_dir.join("delegation.json");
    let project_path = cwd.join(".pi").join("delegation.json");
    let mut problems = Vec::new();
    let operator_text = read_config(&operator_path).unwrap_or_else(|p| {
        problems.push(p);
        None
    });
    // An untrusted project's file is not even read.
    let project_text = if trusted {
        read_config(&project_path).unwrap_or_else(|p| {
            problems.push(p);
            None
        })
    } else if fs_exists(&project_path) {
        Some(String::new())
    } else {
        None
    };
    if !problems.is_empty() {
        return Err(problems);
    }
    let operator_file = operator_path.display().to_string();
    let project_file = project_path.display().to_string();
    let profiles = resolve(
        ConfigFile {
            path: &operator_file,
            text: operator_text.as_deref(),
        },
        ConfigFile {
            path: &project_file,
            text: project_text.as_deref(),
        },
        trusted,
        &RealFs,
    )?;
    Ok(Loaded {
        cwd,
        agent_dir,
        trust,
        profiles,
    })
}

fn fs_exists(path: &Path) -> bool {
    !matches!(std::fs::symlink_metadata(path), Err(e) if e.kind() == io::ErrorKind::NotFound)
}

/// A config file's text, `None` when it does not exist; other failures are problems.
fn read_config(path: &Path) -> Result<Option<String>, Problem> {
    let file = path.display().to_string();
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Problem::new("$", format!("cannot be read: {e}")).in_file(file)),
    };
    if !meta.is_file() {
        return Err(Problem::new("$", "must be a regular file").in_file(file));
    }
    if meta.len() > MAX_CONFIG_BYTES {
        return Err(
            Problem::new("$", format!("is larger than {MAX_CONFIG_BYTES} bytes")).in_file(file),
        );
    }
    let bytes = std::fs::read(path)
        .map_err(|e| Problem::new("$", format!("cannot be read: {e}")).in_file(file.clone()))?;
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| Problem::new("$", "is not valid UTF-8").in_file(file))
}

/// The structured `{toolPolicy, profiles}` answer of `/subagent-profiles`.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProfilesView {
    pub tool_policy: ToolPolicy,
    pub profiles: Vec<Profile>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolPolicy {
    /// Builtins the worker backend offers; each profile's ceiling is intersected with them.
    pub offered_tools: Vec<OfferedTool>,
    pub scheduling: SchedulingPolicy,
    pub sources: Vec<Source>,
    pub agent_dir: PathBuf,
    pub cwd: PathBuf,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_trust: Option<TrustDecision>,
}

impl ProfilesView {
    pub fn new(loaded: Loaded) -> Self {
        Self {
            tool_policy: ToolPolicy {
                offered_tools: pi_offered_tools(),
                scheduling: loaded.profiles.scheduling,
                sources: loaded.profiles.sources.clone(),
                agent_dir: loaded.agent_dir,
                cwd: loaded.cwd,
                project_trust: loaded.trust,
            },
            profiles: loaded.profiles.profiles,
        }
    }
}
