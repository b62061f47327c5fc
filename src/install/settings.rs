//! pi's `settings.json`: where it is, whether Slate can edit it, and the edit itself.
//!
//! Where (pi 1.6, `dist/config.js` `getAgentDir` and `core/settings-manager.js`): user
//! settings are `<agent dir>/settings.json`, the agent dir being `$PI_CODING_AGENT_DIR` when
//! set and non-empty (`~` and `~/…` expanded, a relative path taken from the current
//! directory), else `~/.pi/agent`; project settings are `<cwd>/.pi/settings.json`. pi loads
//! project settings only for a trusted project.
//!
//! What: pi reads the file with `JSON.parse` (an empty file counts as `{}`), and `extensions` is
//! an array of paths, files or directories (a directory loads its `index.ts`). Slate edits
//! the text in place ([`super::spans`]): one string added at the end of `extensions` (the
//! member created when missing) or removed again, every other byte kept. A file it cannot
//! edit without guessing is refused with the field named, and nothing is changed: text that
//! is not UTF-8 or not JSON, a byte order mark, a duplicate key anywhere, a top level that is
//! not an object, an `extensions` that is not an array.
//!
//! How: under pi's own lock (`proper-lockfile`: the directory `settings.json.lock`, stale
//! after 10 s), written to a temporary sibling and renamed over the file, which keeps its
//! permissions. A symlinked `settings.json` (a dotfiles checkout) is written through: the
//! link's target is replaced, the link stays.

use std::ffi::OsString;
use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use serde::{Deserialize, Serialize};

use super::InstallError;
use super::spans::{Document, array_elements, kind};
use crate::policy::Problem;

/// The settings file's name in pi's agent dir and in a project's `.pi/`.
pub const FILE_NAME: &str = "settings.json";
/// The member Slate edits.
pub const EXTENSIONS: &str = "extensions";
/// pi's lock is stale (taken over) after this long (`proper-lockfile`'s default).
const LOCK_STALE: Duration = Duration::from_secs(10);
/// How long to wait for a live lock of pi's before giving up.
const LOCK_WAIT: Duration = Duration::from_secs(2);

/// Which pi settings file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Scope {
    /// `$PI_CODING_AGENT_DIR/settings.json` (default `~/.pi/agent/settings.json`).
    User,
    /// `<cwd>/.pi/settings.json` (loaded by pi only for a trusted project).
    Project,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Project => "project",
        }
    }
}

/// What pi's paths depend on, read once at the edge (tests build their own).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostEnv {
    /// `$PI_CODING_AGENT_DIR`.
    pub agent_dir: Option<OsString>,
    /// The home directory (`$HOME`, else the user database), as pi's `os.homedir()`.
    pub home: Option<PathBuf>,
    /// The current directory.
    pub cwd: PathBuf,
}

impl HostEnv {
    pub fn from_env() -> Result<Self, InstallError> {
        let cwd = std::env::current_dir().map_err(|source| InstallError::Io {
            path: PathBuf::from("."),
            action: "read the current directory",
            source,
        })?;
        Ok(Self {
            agent_dir: std::env::var_os("PI_CODING_AGENT_DIR"),
            home: directories::BaseDirs::new().map(|d| d.home_dir().to_owned()),
            cwd,
        })
    }

    /// pi's agent dir (`getAgentDir`).
    pub fn agent_dir(&self) -> Result<PathBuf, InstallError> {
        let home = || {
            self.home.clone().ok_or(InstallError::NoHome(
                "no home directory, so no pi agent dir (~/.pi/agent); set PI_CODING_AGENT_DIR",
            ))
        };
        match self.agent_dir.as_ref().filter(|v| !v.is_empty()) {
            Some(value) => {
                let text = value.to_string_lossy();
                if text.starts_with("file://") {
                    return Err(InstallError::Usage(format!(
                        "PI_CODING_AGENT_DIR={text:?}: a file:// URL is not supported here; give the directory as a path"
                    )));
                }
                let path = if text == "~" {
                    home()?
                } else if let Some(rest) = text.strip_prefix("~/") {
                    home()?.join(rest)
                } else {
                    PathBuf::from(value)
                };
                Ok(self.cwd.join(path))
            }
            None => Ok(home()?.join(".pi").join("agent")),
        }
    }

    /// The settings file of `scope`.
    pub fn settings_path(&self, scope: Scope) -> Result<PathBuf, InstallError> {
        match scope {
            Scope::User => Ok(self.agent_dir()?.join(FILE_NAME)),
            Scope::Project => Ok(self.cwd.join(".pi").join(FILE_NAME)),
        }
    }
}

/// A settings file as read: absent, or text Slate can edit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    pub path: PathBuf,
    /// `None`: the file does not exist.
    pub text: Option<String>,
}

impl Settings {
    /// Reads and checks the file (see the module docs).
    pub fn read(path: &Path) -> Result<Self, InstallError> {
        let bytes = match fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Ok(Self {
                    path: path.to_owned(),
                    text: None,
                });
            }
            Err(source) => {
                return Err(InstallError::Io {
                    path: path.to_owned(),
                    action: "read",
                    source,
                });
            }
        };
        let text = String::from_utf8(bytes)
            .map_err(|_| problem(path, "$", "is not UTF-8 text; pi reads settings as UTF-8"))?;
        check(&text).map_err(|p| InstallError::Settings(p.in_file(path.display().to_string())))?;
        Ok(Self {
            path: path.to_owned(),
            text: Some(text),
        })
    }

    /// Whether `extensions` holds exactly `entry`.
    pub fn has_entry(&self, entry: &str) -> bool {
        self.text
            .as_deref()
            .is_some_and(|text| first_entry(text, entry).is_some())
    }

    /// The text with `entry` appended to `extensions` (the member, or the whole file, created
    /// when missing). The caller checked [`Settings::has_entry`] first.
    pub fn with_entry(&self, entry: &str) -> String {
        let quoted = quote(entry);
        let text = match self.text.as_deref() {
            None | Some("") => return format!("{{\n  \"{EXTENSIONS}\": [{quoted}]\n}}\n"),
            Some(text) => text,
        };
        let Ok(Document::Object { span, members }) = Document::parse(text) else {
            // `read` checked it; nothing else builds a `Settings` with text.
            return text.to_owned();
        };
        let mut out = String::with_capacity(text.len() + quoted.len() + 32);
        if let Some(member) = members.iter().find(|m| m.key == EXTENSIONS) {
            let elements = array_elements(text, member.value.clone());
            if let (Some((first, _)), Some((last, _))) = (elements.first(), elements.last()) {
                // After the last element, separated as the first one is from `[`.
                let lead = &text[member.value.start + 1..first.start];
                let lead = if lead.is_empty() { " " } else { lead };
                out.push_str(&text[..last.end]);
                out.push(',');
                out.push_str(lead);
                out.push_str(&quoted);
                out.push_str(&text[last.end..]);
            } else {
                out.push_str(&text[..=member.value.start]);
                out.push_str(&quoted);
                out.push_str(&text[member.value.end - 1..]);
            }
            return out;
        }
        let entry_member = format!("\"{EXTENSIONS}\": [{quoted}]");
        if let (Some(first), Some(last)) = (members.first(), members.last()) {
            let lead = &text[span.start + 1..first.span.start];
            let lead = if lead.is_empty() { " " } else { lead };
            out.push_str(&text[..last.span.end]);
            out.push(',');
            out.push_str(lead);
            out.push_str(&entry_member);
            out.push_str(&text[last.span.end..]);
        } else {
            let inner = &text[span.start + 1..span.end - 1];
            out.push_str(&text[..=span.start]);
            if inner.contains('\n') {
                out.push_str("\n  ");
                out.push_str(&entry_member);
                out.push('\n');
            } else {
                out.push_str(&entry_member);
            }
            out.push_str(&text[span.end - 1..]);
        }
        out
    }

    /// The text without any `extensions` element equal to `entry` (each removed with its
    /// separator; everything else kept), or `None` when there is none.
    pub fn without_entry(&self, entry: &str) -> Option<String> {
        let mut text = self.text.clone()?;
        let mut removed = false;
        while let Some((container, elements, index)) = first_entry(&text, entry) {
            let this = elements[index].clone();
            let cut = if elements.len() == 1 {
                container.start + 1..container.end - 1
            } else if index + 1 < elements.len() {
                this.start..elements[index + 1].start
            } else {
                elements[index - 1].end..this.end
            };
            text.replace_range(cut, "");
            removed = true;
        }
        removed.then_some(text)
    }
}

/// The `extensions` array's span, its element spans, and the index of the first element
/// equal to `entry`.
#[allow(clippy::type_complexity, reason = "a private helper's tuple")]
fn first_entry(
    text: &str,
    entry: &str,
) -> Option<(std::ops::Range<usize>, Vec<std::ops::Range<usize>>, usize)> {
    let array = extensions_array(text)?;
    let elements = array_elements(text, array.clone());
    let index = elements
        .iter()
        .position(|(_, s)| s.as_deref() == Some(entry))?;
    Some((
        array,
        elements.into_iter().map(|(span, _)| span).collect(),
        index,
    ))
}

fn extensions_array(text: &str) -> Option<std::ops::Range<usize>> {
    match Document::parse(text).ok()? {
        Document::Object { members, .. } => members
            .into_iter()
            .find(|m| m.key == EXTENSIONS)
            .map(|m| m.value)
            .filter(|v| text.as_bytes().get(v.start) == Some(&b'[')),
        Document::Other(_) => None,
    }
}

/// `entry` as a JSON string (Slate's writer: no raw control).
fn quote(entry: &str) -> String {
    crate::json::to_string(entry).unwrap_or_else(|_| format!("{entry:?}"))
}

fn problem(path: &Path, field: &str, rule: &str) -> InstallError {
    InstallError::Settings(Problem::new(field, rule).in_file(path.display().to_string()))
}

/// Whether `text` is a settings document Slate can edit; the first reason it is not.
pub fn check(text: &str) -> Result<(), Problem> {
    if text.starts_with('\u{feff}') {
        return Err(Problem::new(
            "$",
            "starts with a byte order mark (U+FEFF); Slate edits settings only as plain UTF-8 \
             without one (save the file without the BOM and run the command again)",
        ));
    }
    if text.is_empty() {
        return Ok(()); // pi reads an empty file as `{}`
    }
    let document = Document::parse(text).map_err(|e| {
        let rule = match &e {
            super::spans::SpanError::Syntax(message) => {
                format!("is not valid JSON ({message}); pi cannot read it either")
            }
            super::spans::SpanError::DuplicateKey { .. } => format!(
                "{e}: pi keeps only the last one, so Slate will not guess which to edit \
                 (remove the duplicate)"
            ),
        };
        Problem::new(e.path(), rule)
    })?;
    match document {
        Document::Object { members, .. } => {
            if let Some(member) = members.iter().find(|m| m.key == EXTENSIONS) {
                let first = text.as_bytes()[member.value.start];
                if first != b'[' {
                    return Err(Problem::new(
                        format!("$.{EXTENSIONS}"),
                        format!(
                            "must be an array of extension paths (strings), not {} {}",
                            article(kind(first)),
                            kind(first)
                        ),
                    )
                    .value(&text[member.value.clone()]));
                }
            }
            Ok(())
        }
        Document::Other(kind) => Err(Problem::new(
            "$",
            format!(
                "the top level must be an object, not {} {kind}",
                article(kind)
            ),
        )),
    }
}

fn article(kind: &str) -> &'static str {
    if kind.starts_with(['a', 'o']) {
        "an"
    } else {
        "a"
    }
}

/// pi's settings lock (`<settings>.lock`, a directory), held while Slate reads and writes.
pub struct Lock {
    path: PathBuf,
}

impl Lock {
    /// Takes the lock, creating missing parent directories (each one created is added to
    /// `created`, outermost first). A lock older than 10 s is stale and taken over; a live one
    /// is waited for up to 2 s.
    pub fn acquire(settings: &Path, created: &mut Vec<PathBuf>) -> Result<Self, InstallError> {
        let parent = settings.parent().unwrap_or(Path::new("/"));
        create_dirs(parent, created)?;
        let mut name = settings.as_os_str().to_owned();
        name.push(".lock");
        let path = PathBuf::from(name);
        let started = Instant::now();
        loop {
            match fs::create_dir(&path) {
                Ok(()) => return Ok(Self { path }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    let stale = fs::metadata(&path)
                        .and_then(|m| m.modified())
                        .is_ok_and(|t| {
                            SystemTime::now()
                                .duration_since(t)
                                .is_ok_and(|age| age > LOCK_STALE)
                        });
                    if stale {
                        let _ = fs::remove_dir(&path);
                        continue;
                    }
                    if started.elapsed() > LOCK_WAIT {
                        return Err(InstallError::Locked(path));
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(source) => {
                    return Err(InstallError::Io {
                        path,
                        action: "create the settings lock",
                        source,
                    });
                }
            }
        }
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = fs::remove_dir(&self.path);
    }
}

/// Creates `dir` and its missing parents (mode from the umask, as pi's `mkdirSync`), adding
/// each one created to `created`, outermost first.
pub fn create_dirs(dir: &Path, created: &mut Vec<PathBuf>) -> Result<(), InstallError> {
    let mut missing = Vec::new();
    let mut at = Some(dir);
    while let Some(d) = at {
        if fs::symlink_metadata(d).is_ok() {
            break;
        }
        missing.push(d.to_owned());
        at = d.parent();
    }
    for d in missing.into_iter().rev() {
        match fs::create_dir(&d) {
            Ok(()) => created.push(d),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(source) => {
                return Err(InstallError::Io {
                    path: d,
                    action: "create",
                    source,
                });
            }
        }
    }
    Ok(())
}

/// Replaces the file at `path` (through a symlink) with `text` (`store::replace`), with the old
/// file's permissions; a new file is 0600 (it is the user's own configuration).
pub fn write(path: &Path, text: &str) -> Result<(), InstallError> {
    let io_error = |path: &Path, action: &'static str| {
        let path = path.to_owned();
        move |source| InstallError::Io {
            path,
            action,
            source,
        }
    };
    let target = match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            fs::canonicalize(path).map_err(io_error(path, "follow the symlink"))?
        }
        _ => path.to_owned(),
    };
    let old_mode = fs::metadata(&target).ok().map(|m| m.permissions().mode());
    crate::store::replace::replace(&target, text.as_bytes(), old_mode.unwrap_or(0o600))
        .map_err(io_error(&target, "write"))
}

/// Removes the file at `path` (a symlink itself, not its target: the link is what was
/// created) and then each directory of `created` that is empty, innermost first.
pub fn remove(path: &Path, created: &[PathBuf]) -> Result<(), InstallError> {
    match fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(source) => {
            return Err(InstallError::Io {
                path: path.to_owned(),
                action: "remove",
                source,
            });
        }
    }
    remove_empty_dirs(created);
    Ok(())
}

/// Removes each directory of `created` that is empty now, innermost first.
pub fn remove_empty_dirs(created: &[PathBuf]) {
    for dir in created.iter().rev() {
        // Only an empty directory goes: anything someone put there since stays.
        let _ = fs::remove_dir(dir);
    }
}

#[cfg(test)]
mod tests {
    use super::{HostEnv, Scope, Settings, check};
    use std::path::PathBuf;

    const ENTRY: &str = "/home/u/.local/share/slate/pi-extension";

    fn settings(text: Option<&str>) -> Settings {
        Settings {
            path: PathBuf::from("/x/settings.json"),
            text: text.map(str::to_owned),
        }
    }

    /// Adding then removing gives back the original text, byte for byte.
    fn round_trip(text: &str) -> String {
        check(text).unwrap_or_else(|p| panic!("{text}: {p}"));
        let before = settings(Some(text));
        assert!(!before.has_entry(ENTRY), "{text}");
        let added = before.with_entry(ENTRY);
        check(&added).unwrap_or_else(|p| panic!("{added}: {p}"));
        let after = settings(Some(&added));
        assert!(after.has_entry(ENTRY), "{added}");
        let value: serde_json::Value = serde_json::from_str(&added).unwrap();
        assert_eq!(
            value["extensions"].as_array().unwrap().last().unwrap(),
            ENTRY,
            "{added}"
        );
        added
    }

    #[test]
    fn the_entry_goes_at_the_end_of_extensions_keeping_the_formatting() {
        let pretty = "{\n  \"theme\": \"dark\",\n  \"extensions\": [\n    \"/a\"\n  ]\n}\n";
        assert_eq!(
            round_trip(pretty),
            format!(
                "{{\n  \"theme\": \"dark\",\n  \"extensions\": [\n    \"/a\",\n    \"{ENTRY}\"\n  ]\n}}\n"
            )
        );
        assert_eq!(
            round_trip(r#"{"extensions":["/a","/b"]}"#),
            format!(r#"{{"extensions":["/a","/b", "{ENTRY}"]}}"#)
        );
        // Where the array had elements, removing gives back the very bytes.
        for text in [pretty, r#"{"extensions":["/a","/b"]}"#] {
            let added = settings(Some(text)).with_entry(ENTRY);
            assert_eq!(settings(Some(&added)).without_entry(ENTRY).unwrap(), text);
        }
        assert_eq!(
            round_trip("{\"extensions\": [ ]}"),
            format!("{{\"extensions\": [\"{ENTRY}\"]}}")
        );
    }

    #[test]
    fn a_missing_member_is_added_after_the_last_one() {
        assert_eq!(
            round_trip("{\n  \"theme\": \"dark\"\n}\n"),
            format!("{{\n  \"theme\": \"dark\",\n  \"extensions\": [\"{ENTRY}\"]\n}}\n")
        );
        assert_eq!(
            round_trip(r#"{"a":1}"#),
            format!(r#"{{"a":1, "extensions": ["{ENTRY}"]}}"#)
        );
        assert_eq!(
            round_trip("{}"),
            format!(r#"{{"extensions": ["{ENTRY}"]}}"#)
        );
        assert_eq!(
            round_trip("{\n}\n"),
            format!("{{\n  \"extensions\": [\"{ENTRY}\"]\n}}\n")
        );
        let created = settings(None).with_entry(ENTRY);
        assert_eq!(
            created,
            format!("{{\n  \"extensions\": [\"{ENTRY}\"]\n}}\n")
        );
        assert_eq!(settings(Some("")).with_entry(ENTRY), created);
    }

    #[test]
    fn removing_takes_out_only_slates_element_and_its_separator() {
        let edited = format!(
            "{{\n  \"extensions\": [\n    \"/a\",\n    \"{ENTRY}\",\n    \"/b\"\n  ],\n  \"theme\": \"light\"\n}}\n"
        );
        assert_eq!(
            settings(Some(&edited)).without_entry(ENTRY).unwrap(),
            "{\n  \"extensions\": [\n    \"/a\",\n    \"/b\"\n  ],\n  \"theme\": \"light\"\n}\n"
        );
        let last = format!(r#"{{"extensions": ["/a", "{ENTRY}"]}}"#);
        assert_eq!(
            settings(Some(&last)).without_entry(ENTRY).unwrap(),
            r#"{"extensions": ["/a"]}"#
        );
        let only = format!(r#"{{"extensions": [ "{ENTRY}" ]}}"#);
        assert_eq!(
            settings(Some(&only)).without_entry(ENTRY).unwrap(),
            r#"{"extensions": []}"#
        );
        let twice = format!(r#"{{"extensions": ["{ENTRY}", "/a", "{ENTRY}"]}}"#);
        assert_eq!(
            settings(Some(&twice)).without_entry(ENTRY).unwrap(),
            r#"{"extensions": ["/a"]}"#
        );
        assert_eq!(
            settings(Some(r#"{"extensions": ["/a"]}"#)).without_entry(ENTRY),
            None
        );
        assert_eq!(settings(None).without_entry(ENTRY), None);
        // An escaped spelling of the same path is the same string to pi.
        let escaped = r#"{"extensions": ["\/home\/u\/.local\/share\/slate\/pi-extension"]}"#;
        assert!(settings(Some(escaped)).has_entry(ENTRY));
    }

    #[test]
    fn what_slate_will_not_edit_is_refused_naming_the_field() {
        let cases = [
            ("\u{feff}{}", "$", "byte order mark"),
            ("{\"a\": 1,}", "$", "not valid JSON"),
            ("   ", "$", "not valid JSON"),
            ("[]", "$", "must be an object, not an array"),
            ("{\"extensions\": \"/x\"}", "$.extensions", "not a string"),
            ("{\"extensions\": {}}", "$.extensions", "not an object"),
            (
                "{\"extensions\": [], \"extensions\": [\"/x\"]}",
                "$.extensions",
                "more than once",
            ),
            ("{\"a\": {\"b\": 1, \"b\": 2}}", "$.a.b", "more than once"),
        ];
        for (text, path, rule) in cases {
            let problem = check(text).expect_err(text);
            assert_eq!(problem.path, path, "{text}");
            assert!(problem.rule.contains(rule), "{text}: {}", problem.rule);
        }
        assert!(check("").is_ok());
        assert!(check("{\"extensions\": [1, null]}").is_ok());
    }

    #[test]
    fn settings_paths_resolve_as_pi_resolves_them() {
        let env = |agent: Option<&str>| HostEnv {
            agent_dir: agent.map(Into::into),
            home: Some(PathBuf::from("/home/u")),
            cwd: PathBuf::from("/work/p"),
        };
        let user = |agent| env(agent).settings_path(Scope::User).unwrap();
        assert_eq!(user(None), PathBuf::from("/home/u/.pi/agent/settings.json"));
        assert_eq!(
            user(Some("")),
            PathBuf::from("/home/u/.pi/agent/settings.json")
        );
        assert_eq!(user(Some("/a/b")), PathBuf::from("/a/b/settings.json"));
        assert_eq!(user(Some("~")), PathBuf::from("/home/u/settings.json"));
        assert_eq!(
            user(Some("~/pi")),
            PathBuf::from("/home/u/pi/settings.json")
        );
        assert_eq!(
            user(Some("rel/agent")),
            PathBuf::from("/work/p/rel/agent/settings.json")
        );
        assert!(env(Some("file:///a")).settings_path(Scope::User).is_err());
        assert_eq!(
            env(None).settings_path(Scope::Project).unwrap(),
            PathBuf::from("/work/p/.pi/settings.json")
        );
        let homeless = HostEnv {
            home: None,
            ..env(None)
        };
        assert!(homeless.settings_path(Scope::User).is_err());
        assert!(homeless.settings_path(Scope::Project).is_ok());
    }
}
