//! The explicit task workspace (contract: "Explicit working directory").
//!
//! A task may name a `cwd`: an existing directory, relative to the **root** parent's cwd or
//! absolute. [`resolve_cwd`] canonicalizes it before admission allocates any identity; a
//! missing or non-directory path rejects the whole batch (the caller collects the problem).
//! Without one, a nested task inherits its immediate parent's workspace and a root task the
//! root cwd. Renewal never calls this again: it keeps the exact workspace on the snapshot.
//!
//! Spellings that pi's builtin path normalization would silently rewrite are refused rather
//! than reproduced: a leading `~` (home) or `@` (mention) shorthand, and non-breaking or other
//! Unicode space separators that pi folds into ASCII spaces. Ordinary absolute paths and `..`
//! keep their file-system meaning; this is a workspace selection, not a sandbox.
//!
//! Workers run in the workspace (pi's own cwd); when a command has to be rebound from another
//! directory, [`bash_cd_prefix`] produces the `cd -- <quoted> || exit $?` line that runs first,
//! so a failed `cd` never runs the command anywhere else.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::policy::Problem;
use crate::policy::fs_view::{FileKind, FsView};

/// True for the Unicode space separators (category `Zs`) other than the ASCII space, plus
/// U+FEFF ZERO WIDTH NO-BREAK SPACE: characters that look like (or hide as) a space but name
/// a different file. pi normalizes most of them to U+0020 before opening a path.
pub fn is_lookalike_space(c: char) -> bool {
    matches!(
        c,
        '\u{00A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' | '\u{FEFF}'
    )
}

/// The spelling rules shared by `cwd` and `taskFile`: every broken rule, in words.
///
/// * a leading `~` (`~`, `~/x`, `~user/x`): home shorthand is not expanded;
/// * a leading `@`: pi's mention prefix is not stripped;
/// * look-alike spaces ([`is_lookalike_space`]), each code point named once;
/// * NUL, which no path can contain.
pub fn shorthand_problems(spelling: &str) -> Vec<String> {
    let mut rules = Vec::new();
    if spelling.starts_with('~') {
        rules.push("`~` home shorthand is not expanded; spell the path out".to_owned());
    }
    if spelling.starts_with('@') {
        rules.push("a leading `@` shorthand is not stripped; spell the path without it".to_owned());
    }
    let mut spaces: Vec<char> = spelling
        .chars()
        .filter(|&c| is_lookalike_space(c))
        .collect();
    spaces.sort_unstable();
    spaces.dedup();
    if !spaces.is_empty() {
        let names: Vec<String> = spaces
            .iter()
            .map(|c| format!("U+{:04X}", u32::from(*c)))
            .collect();
        rules.push(format!(
            "contains {}: non-breaking and other Unicode spaces are refused, only the ASCII \
             space is accepted",
            names.join(", ")
        ));
    }
    if spelling.contains('\0') {
        rules.push("contains a NUL character".to_owned());
    }
    rules
}

/// Where the workspace came from, for the wording of problems.
enum Origin<'a> {
    Requested(&'a str),
    Parent,
    Root,
}

/// Resolve a task's workspace to a canonical, existing directory.
///
/// * `requested`: the task's `cwd`, if any — relative to `root_cwd` (the root parent's cwd,
///   also for nested tasks) or absolute;
/// * `parent_workspace`: the immediate parent's workspace for a nested task, `None` at the root;
/// * `path`: the JSON path of the field, e.g. `$.tasks[1].cwd`.
///
/// The default (parent's workspace, else root cwd) is canonicalized and checked too, so the
/// result is always a canonical directory. All spelling rules broken by one `cwd` are reported
/// together in one problem; the file system is not consulted for a refused spelling.
///
/// # Errors
/// One [`Problem`] naming `path`, the spelling and the rule: empty, shorthand or look-alike
/// spaces, missing, not a directory, unresolvable, or a canonical path that is not UTF-8
/// (snapshots, worker sessions and the bash prefix carry the workspace as text).
pub fn resolve_cwd(
    requested: Option<&str>,
    root_cwd: &Path,
    parent_workspace: Option<&Path>,
    fs: &dyn FsView,
    path: &str,
) -> Result<PathBuf, Problem> {
    let (candidate, origin) = match requested {
        Some(spelling) => {
            if spelling.is_empty() {
                return Err(Problem::new(
                    path,
                    "must be a non-empty directory path (omit `cwd` for the default workspace)",
                )
                .value("\"\""));
            }
            let rules = shorthand_problems(spelling);
            if !rules.is_empty() {
                return Err(Problem::new(path, rules.join("; ")).value(spelling));
            }
            (root_cwd.join(spelling), Origin::Requested(spelling))
        }
        None => match parent_workspace {
            Some(parent) => (parent.to_path_buf(), Origin::Parent),
            None => (root_cwd.to_path_buf(), Origin::Root),
        },
    };
    let problem = |rule: String| match origin {
        Origin::Requested(spelling) => Problem::new(path, rule).value(spelling),
        Origin::Parent => Problem::new(path, format!("the parent's workspace {rule}")),
        Origin::Root => Problem::new(path, format!("the root cwd {rule}")),
    };
    let shown = candidate.display();
    let canonical = fs.canonicalize(&candidate).map_err(|err| {
        problem(match err.kind() {
            std::io::ErrorKind::NotFound => {
                format!("must be an existing directory; {shown} does not exist")
            }
            std::io::ErrorKind::NotADirectory => {
                format!("must be a directory; a component of {shown} is not a directory")
            }
            _ => format!("must be an existing directory; {shown} cannot be resolved: {err}"),
        })
    })?;
    let meta = fs.metadata(&canonical).map_err(|err| {
        problem(format!(
            "must be an existing directory; {} cannot be inspected: {err}",
            canonical.display()
        ))
    })?;
    if meta.kind != FileKind::Dir {
        let kind = match meta.kind {
            FileKind::File => "a regular file",
            FileKind::Dir | FileKind::Symlink | FileKind::Other => "a special file",
        };
        return Err(problem(format!(
            "must be a directory; {} is {kind}",
            canonical.display()
        )));
    }
    if canonical.to_str().is_none() {
        return Err(problem(format!(
            "resolves to {}, which is not valid UTF-8; snapshots, worker sessions and the bash \
             prefix carry the workspace as text",
            canonical.display()
        )));
    }
    Ok(canonical)
}

/// What ends the `cd` line: a newline, so the original command follows on its own line(s)
/// byte for byte. Nothing in the command (a leading `;`, `&`, a comment, a here-document)
/// can attach to or swallow the `cd` line, and a syntax error in the command cannot stop the
/// `cd` check from running first.
pub const CD_SEPARATOR: &str = "\n";

/// The prefix used when the workspace cannot be spelled safely (empty, NUL, or not UTF-8 in
/// the `String` form): it refuses to run the command at all.
const REFUSE_PREFIX: &str =
    "printf '%s\\n' 'slate: the workspace path cannot be spelled for the shell' >&2; exit 1\n";

/// The rebinding prefix as bytes: `cd -- '<cwd>' || exit $?` and [`CD_SEPARATOR`], exact for
/// any Unix path.
///
/// POSIX single quotes keep every byte literal except `'` itself, which becomes `'\''`
/// (close, escaped quote, reopen); nothing inside — spaces, `"`, `$(…)`, backticks, `\`,
/// newlines, `!`, non-UTF-8 bytes — is expanded by `sh`, `dash`, `bash` or `zsh`. `--` ends
/// options so a leading `-` is a name. A relative path gets `./` in front, which also keeps
/// `cd` from consulting `CDPATH` and from reading a lone `-` as "the previous directory". An
/// empty path or one containing NUL yields a prefix that exits 1 without running anything.
pub fn bash_cd_prefix_bytes(cwd: &Path) -> Vec<u8> {
    let raw = cwd.as_os_str().as_bytes();
    if raw.is_empty() || raw.contains(&0) {
        return REFUSE_PREFIX.as_bytes().to_vec();
    }
    let mut out = Vec::with_capacity(raw.len() + 32);
    out.extend_from_slice(b"cd -- '");
    if !raw.starts_with(b"/") {
        out.extend_from_slice(b"./");
    }
    for &byte in raw {
        if byte == b'\'' {
            out.extend_from_slice(b"'\\''");
        } else {
            out.push(byte);
        }
    }
    out.extend_from_slice(b"' || exit $?");
    out.extend_from_slice(CD_SEPARATOR.as_bytes());
    out
}

/// [`bash_cd_prefix_bytes`] as text, for commands that travel as JSON strings (pi's RPC
/// `bash`). A path that is not UTF-8 cannot be carried there; it yields a prefix that exits 1
/// without running the command (fail closed — never run it in another directory).
/// [`resolve_cwd`] refuses such workspaces, so admitted tasks never hit this.
pub fn bash_cd_prefix(cwd: &Path) -> String {
    String::from_utf8(bash_cd_prefix_bytes(cwd)).unwrap_or_else(|_| REFUSE_PREFIX.to_owned())
}

/// `command` rebound to run in `cwd`: [`bash_cd_prefix`] followed by the command unchanged.
pub fn rebind_bash(cwd: &Path, command: &str) -> String {
    let mut out = bash_cd_prefix(cwd);
    out.push_str(command);
    out
}
