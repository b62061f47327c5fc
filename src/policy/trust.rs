//! Project trust: whether Slate may read the project's `.pi/delegation.json` and
//! `.pi/slate.json`. Slate never decides this itself; it follows pi's own decision
//! (DESIGN.md §6, pi `docs/security.md` "Understand project trust"), in pi's order:
//!
//! 1. a per-command override (`--approve` trusts, `--no-approve` does not) — no file is read;
//! 2. the **closest saved decision** in `<agentDir>/trust.json` for the canonical project
//!    directory or one of its ancestors (ancestry by path component: `/a/bc` is not under
//!    `/a/b`);
//! 3. else the `defaultProjectTrust` setting of `<agentDir>/settings.json` (default `"ask"`).
//!    Slate cannot show pi's trust prompt, so, like pi's print/JSON/RPC modes, only
//!    `"always"` trusts; `"ask"` and `"never"` do not.
//!
//! (pi's step between 1 and 2, user extensions handling `project_trust`, runs inside a pi
//! process and has no equivalent here.)
//!
//! # `trust.json` (pi 1.6.0 `core/trust-manager`)
//! A JSON object mapping a canonical absolute directory path to `true` (trusted), `false`
//! (not trusted) or `null` (no decision: the walk continues to the parent). A leading UTF-8
//! BOM is ignored. Anything else — invalid JSON, a non-object, any other value — makes pi
//! refuse the whole file, and makes this module report a [`Problem`]. pi looks keys up by
//! exact string, so a key that is not a normalized absolute path (relative, trailing `/`,
//! `//`, `.` or `..`) never matches; it is ignored here too, with a warning.
//!
//! # Malformed files are errors, not "untrusted"
//! [`decide_trust`] returns `Err` with every problem when `trust.json` or `settings.json`
//! is malformed, instead of a not-trusted decision with a warning:
//! * pi itself refuses an invalid trust store, so there is no pi decision to follow;
//! * project config can only *narrow* what the operator allows, so silently treating the
//!   project as untrusted would drop its restrictions and run with wider permissions than
//!   the project asked for — the unsafe direction;
//! * issue 3 asks commands to stop (exit 2) with every problem when a config file is invalid.
//!
//! Either way nothing is trusted: `Err` carries no decision. pi is lenient with
//! `settings.json` (it falls back to `"ask"` for an unknown value or unreadable file);
//! Slate is stricter so a typo like `"Always"` is reported rather than silently ignored.
//!
//! # When the decision is needed
//! pi asks for trust only when pi-protected resources exist (`.pi/settings.json`,
//! `.pi/extensions`, …) and otherwise treats the folder as trusted because nothing pi loads
//! is at stake. Slate does **not** borrow that shortcut: pi's list does not include Slate's
//! files, so a folder holding only `.pi/delegation.json` would be "trusted" without anyone
//! approving it. Slate's rule: the project files are read only after [`decide_trust`] says
//! trusted; callers may skip the decision when [`has_project_config`] finds neither file
//! (then nothing is read either way, and a broken `trust.json` does not fail a command that
//! reads no project config).

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fmt;
use std::io;
use std::path::{Component, Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::policy::Problem;
use crate::policy::fs_view::FsView;

/// The saved decisions, in the agent dir.
pub const TRUST_FILE: &str = "trust.json";
/// pi's global settings, in the agent dir (the only place `defaultProjectTrust` is honoured).
pub const SETTINGS_FILE: &str = "settings.json";
/// The project files that trust gates, relative to the project directory.
pub const PROJECT_CONFIG_FILES: [&str; 2] = [".pi/delegation.json", ".pi/slate.json"];
/// Larger agent-dir files are refused rather than read without bound.
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

const ENV_AGENT_DIR: &str = "PI_CODING_AGENT_DIR";
const SETTING_PATH: &str = "$.defaultProjectTrust";

/// pi's `defaultProjectTrust` setting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum DefaultProjectTrust {
    Always,
    Ask,
    Never,
}

impl DefaultProjectTrust {
    /// pi's default when the setting is absent.
    pub const DEFAULT: Self = Self::Ask;

    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "always" => Some(Self::Always),
            "ask" => Some(Self::Ask),
            "never" => Some(Self::Never),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Always => "always",
            Self::Ask => "ask",
            Self::Never => "never",
        }
    }

    /// The meaning without an interactive prompt: only `always` trusts.
    pub fn trusts_non_interactive(self) -> bool {
        match self {
            Self::Always => true,
            Self::Ask | Self::Never => false,
        }
    }
}

/// Why the project is (not) trusted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "source", rename_all = "camelCase")]
pub enum TrustReason {
    /// `--approve` (`approve: true`) or `--no-approve` for this command.
    Override { approve: bool },
    /// The closest saved decision in `trust.json`, keyed by this directory.
    #[serde(rename_all = "camelCase")]
    Saved { dir: PathBuf },
    /// No saved decision applies: the `defaultProjectTrust` setting, read from
    /// `settings_file`, or pi's default (`ask`) when the file or the key is absent.
    #[serde(rename_all = "camelCase")]
    Default {
        setting: DefaultProjectTrust,
        settings_file: Option<PathBuf>,
    },
}

impl fmt::Display for TrustReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Override { approve: true } => f.write_str("override --approve"),
            Self::Override { approve: false } => f.write_str("override --no-approve"),
            Self::Saved { dir } => write!(f, "saved decision for {}", dir.display()),
            Self::Default {
                setting,
                settings_file,
            } => {
                write!(f, "defaultProjectTrust \"{}\"", setting.as_str())?;
                match settings_file {
                    Some(file) => write!(f, " in {}", file.display())?,
                    None => f.write_str(" (pi's default)")?,
                }
                match setting {
                    DefaultProjectTrust::Always => Ok(()),
                    DefaultProjectTrust::Ask => {
                        f.write_str(": Slate cannot ask, so it does not trust")
                    }
                    DefaultProjectTrust::Never => f.write_str(": never trusts without a decision"),
                }
            }
        }
    }
}

/// pi's decision for one project, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TrustDecision {
    pub trusted: bool,
    pub reason: TrustReason,
    /// Entries that can never apply (see the module doc); they did not affect the decision.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Problem>,
}

impl fmt::Display for TrustDecision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verdict = if self.trusted {
            "trusted"
        } else {
            "not trusted"
        };
        write!(f, "{verdict} ({})", self.reason)
    }
}

/// A closest saved decision: the directory it is keyed by and its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SavedDecision {
    pub dir: PathBuf,
    pub trusted: bool,
}

/// A parsed `trust.json`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrustStore {
    /// Every key with its decision (`None` for `null`); a repeated key keeps its last
    /// value, as `JSON.parse` does.
    entries: BTreeMap<String, Option<bool>>,
    /// Keys with a decision that pi can never match.
    pub warnings: Vec<Problem>,
}

impl TrustStore {
    /// Parse the bytes of `trust.json`; `file` names it in problems.
    ///
    /// # Errors
    /// Every problem: invalid UTF-8 or JSON, a non-object root, a value that is not `true`,
    /// `false` or `null`.
    pub fn parse(bytes: &[u8], file: &str) -> Result<Self, Vec<Problem>> {
        let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        let root = match serde_json::from_slice::<Value>(bytes) {
            Ok(Value::Object(root)) => root,
            Ok(other) => {
                return Err(vec![
                    Problem::new(
                        "$",
                        "must be a JSON object mapping canonical directory paths to true, \
                         false or null",
                    )
                    .json(&other)
                    .in_file(file),
                ]);
            }
            Err(e) => {
                return Err(vec![invalid_json(
                    file,
                    &e,
                    "pi refuses such a trust store",
                )]);
            }
        };
        let mut store = Self::default();
        let mut problems = Vec::new();
        for (key, value) in root {
            let at = key_path(&key);
            let decision = match value {
                Value::Bool(b) => Some(b),
                Value::Null => None,
                other => {
                    problems.push(
                        Problem::new(
                            at,
                            "must be true (trusted), false (not trusted) or null (no decision)",
                        )
                        .json(&other)
                        .in_file(file),
                    );
                    continue;
                }
            };
            if decision.is_some() && !is_normal_absolute(&key) {
                store.warnings.push(
                    Problem::new(
                        at,
                        "ignored: pi looks saved decisions up by exact canonical absolute path \
                         (no trailing `/`, `//`, `.` or `..`), so this key never matches",
                    )
                    .value(&key)
                    .in_file(file),
                );
            }
            store.entries.insert(key, decision);
        }
        if problems.is_empty() {
            Ok(store)
        } else {
            Err(problems)
        }
    }

    /// The decision for `key` exactly (`Some(None)` for a `null` entry).
    pub fn get(&self, key: &str) -> Option<Option<bool>> {
        self.entries.get(key).copied()
    }

    /// The closest `true`/`false` entry for the canonical `dir` or an ancestor. `null`
    /// entries are skipped. Ancestors are whole path components (`Path::ancestors`), and each
    /// is compared with the keys as an exact string, as pi does. A directory whose path is
    /// not UTF-8 cannot equal a JSON key and is passed over.
    pub fn closest(&self, dir: &Path) -> Option<SavedDecision> {
        dir.ancestors().find_map(|ancestor| {
            let key = ancestor.to_str()?;
            let trusted = self.get(key)??;
            Some(SavedDecision {
                dir: ancestor.to_path_buf(),
                trusted,
            })
        })
    }
}

/// Parse `defaultProjectTrust` from the bytes of the agent dir's `settings.json`; other
/// settings are not Slate's business and are not checked. `Ok(None)` when the key is absent.
///
/// # Errors
/// Every problem: invalid UTF-8 or JSON (a leading BOM included: pi's settings loader fails
/// on it too and falls back to its defaults), a non-object root, a value other than
/// `"always"`, `"ask"` or `"never"`.
pub fn parse_settings(
    bytes: &[u8],
    file: &str,
) -> Result<Option<DefaultProjectTrust>, Vec<Problem>> {
    let root = match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(root)) => root,
        Ok(other) => {
            return Err(vec![
                Problem::new("$", "must be a JSON object")
                    .json(&other)
                    .in_file(file),
            ]);
        }
        Err(e) => {
            return Err(vec![invalid_json(
                file,
                &e,
                "pi ignores every setting in it, so defaultProjectTrust is unknown",
            )]);
        }
    };
    let Some(value) = root.get("defaultProjectTrust") else {
        return Ok(None);
    };
    match value.as_str().and_then(DefaultProjectTrust::from_name) {
        Some(setting) => Ok(Some(setting)),
        None => Err(vec![
            Problem::new(SETTING_PATH, "must be \"always\", \"ask\" or \"never\"")
                .json(value)
                .in_file(file),
        ]),
    }
}

/// pi's agent directory: `$PI_CODING_AGENT_DIR` when set and non-empty, else `~/.pi/agent`.
///
/// Like pi, `~` and a leading `~/` in the variable expand to `home` (`~user/…` does not),
/// and the result is normalized lexically (`.`/`..` folded, as Node's `path.resolve` does,
/// without following symlinks). Unlike pi, a relative value is refused: pi resolves it
/// against each process's own working directory, and Slate's workers run in other
/// directories than Slate, so it would name a different agent dir for each of them.
///
/// # Errors
/// A [`Problem`] naming `PI_CODING_AGENT_DIR` or `HOME`: a relative value, or a home
/// directory that is needed but missing or relative.
pub fn agent_dir(
    env_pi_coding_agent_dir: Option<&str>,
    home: Option<&Path>,
) -> Result<PathBuf, Problem> {
    let home_dir = |why: &str| -> Result<&Path, Problem> {
        match home {
            Some(h) if h.is_absolute() => Ok(h),
            Some(h) => Err(
                Problem::new("HOME", format!("must be an absolute path ({why})"))
                    .value(h.display()),
            ),
            None => Err(Problem::new("HOME", format!("is not set ({why})"))),
        }
    };
    let raw = match env_pi_coding_agent_dir.filter(|v| !v.is_empty()) {
        None => home_dir("the agent dir defaults to ~/.pi/agent")?.join(".pi/agent"),
        Some("~") => home_dir("PI_CODING_AGENT_DIR is `~`")?.to_path_buf(),
        Some(v) if v.starts_with("~/") => {
            home_dir("PI_CODING_AGENT_DIR starts with `~/`")?.join(&v[2..])
        }
        Some(v) if Path::new(v).is_absolute() => PathBuf::from(v),
        Some(v) => {
            return Err(Problem::new(
                ENV_AGENT_DIR,
                "must be an absolute path or start with `~/`: pi resolves a relative agent \
                 dir against each process's working directory, and Slate's workers run \
                 elsewhere",
            )
            .value(v));
        }
    };
    Ok(normalize_lexically(&raw))
}

/// The paths of the project files trust gates.
pub fn project_config_paths(project_dir: &Path) -> [PathBuf; 2] {
    PROJECT_CONFIG_FILES.map(|rel| project_dir.join(rel))
}

/// Whether either project file is present, so a trust decision is needed to read it. Any
/// answer other than "not found" counts as present (a dangling symlink, an unreadable
/// `.pi`): the decision is then required, never skipped.
pub fn has_project_config(project_dir: &Path, fs: &dyn FsView) -> bool {
    project_config_paths(project_dir).iter().any(
        |path| !matches!(fs.symlink_metadata(path), Err(e) if e.kind() == io::ErrorKind::NotFound),
    )
}

/// pi's trust decision for `project_dir` (see the module doc for the order).
///
/// `project_dir` is canonicalized through `fs` (a symlinked spelling resolves to its
/// target, as pi's lookup does); `agent_dir` comes from [`agent_dir`]; `override_` is
/// `Some(true)` for `--approve`, `Some(false)` for `--no-approve`. An override decides alone:
/// no file is read and no path resolved.
///
/// # Errors
/// Every problem: an unresolvable project directory, an unreadable or malformed
/// `trust.json` or `settings.json`. A missing file is not a problem (no saved decision,
/// default `ask`). Nothing is trusted on error.
pub fn decide_trust(
    project_dir: &Path,
    agent_dir: &Path,
    override_: Option<bool>,
    fs: &dyn FsView,
) -> Result<TrustDecision, Vec<Problem>> {
    if let Some(approve) = override_ {
        return Ok(TrustDecision {
            trusted: approve,
            reason: TrustReason::Override { approve },
            warnings: Vec::new(),
        });
    }
    let mut problems = Vec::new();

    let project = fs
        .canonicalize(project_dir)
        .map_err(|e| {
            problems.push(
                Problem::new(
                    "cwd",
                    format!("the project directory cannot be resolved: {e}"),
                )
                .value(project_dir.display()),
            );
        })
        .ok();

    let trust_file = agent_dir.join(TRUST_FILE);
    let trust_name = trust_file.display().to_string();
    let store = read_optional(fs, &trust_file, &mut problems).and_then(|bytes| {
        TrustStore::parse(&bytes, &trust_name)
            .map_err(|p| problems.extend(p))
            .ok()
    });

    let settings_file = agent_dir.join(SETTINGS_FILE);
    let settings_name = settings_file.display().to_string();
    let setting = read_optional(fs, &settings_file, &mut problems).and_then(|bytes| {
        parse_settings(&bytes, &settings_name)
            .map_err(|p| problems.extend(p))
            .ok()
            .flatten()
    });

    let Some(project) = project.filter(|_| problems.is_empty()) else {
        return Err(problems);
    };
    let (saved, warnings) = match store {
        Some(store) => (store.closest(&project), store.warnings),
        None => (None, Vec::new()),
    };
    let (trusted, reason) = match (saved, setting) {
        (Some(saved), _) => (saved.trusted, TrustReason::Saved { dir: saved.dir }),
        (None, Some(setting)) => (
            setting.trusts_non_interactive(),
            TrustReason::Default {
                setting,
                settings_file: Some(settings_file),
            },
        ),
        (None, None) => (
            DefaultProjectTrust::DEFAULT.trusts_non_interactive(),
            TrustReason::Default {
                setting: DefaultProjectTrust::DEFAULT,
                settings_file: None,
            },
        ),
    };
    Ok(TrustDecision {
        trusted,
        reason,
        warnings,
    })
}

/// The file's bytes, `None` when it does not exist; other failures become problems.
fn read_optional(fs: &dyn FsView, path: &Path, problems: &mut Vec<Problem>) -> Option<Vec<u8>> {
    match fs.read_at_most(path, MAX_FILE_BYTES + 1) {
        Ok(bytes) if bytes.len() as u64 > MAX_FILE_BYTES => {
            problems.push(
                Problem::new("$", format!("is larger than {MAX_FILE_BYTES} bytes"))
                    .in_file(path.display().to_string()),
            );
            None
        }
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => {
            problems.push(
                Problem::new("$", format!("cannot be read: {e}"))
                    .in_file(path.display().to_string()),
            );
            None
        }
    }
}

fn invalid_json(file: &str, e: &serde_json::Error, consequence: &str) -> Problem {
    Problem::new("$", format!("is not valid JSON ({e}); {consequence}")).in_file(file)
}

/// `$["<key>"]`: object keys here are paths, so the dotted form would be ambiguous.
fn key_path(key: &str) -> String {
    format!("$[{}]", Value::String(key.to_owned()))
}

/// True when `key` is spelled exactly as a canonical absolute path could be.
fn is_normal_absolute(key: &str) -> bool {
    let path = Path::new(key);
    path.is_absolute()
        && !path.components().any(|c| c == Component::ParentDir)
        && path.components().collect::<PathBuf>().as_os_str() == OsStr::new(key)
}

/// Fold `.`, `..` and repeated separators without touching the file system (`..` at the
/// root stays at the root), like Node's `path.resolve` on an absolute path.
fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}
