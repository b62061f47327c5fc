//! The pi extension's own unit tests (`extension/test/*.test.ts`), run by `node --test` as part
//! of `cargo test`, so the README's one test command covers the TypeScript too.
//!
//! They need Node ≥ 22.18 (TypeScript by type stripping): `$SLATE_PI_NODE`, else the
//! `SLATE_PI_NODE` line of `ci/install-pi.sh`'s env file, else `node` on `PATH` when it is
//! new enough. Without one the test prints `SKIPPED: …` and passes, except under `CI=true`,
//! where it fails.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

#[path = "support/pi_env.rs"]
mod pi_env;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The oldest Node that runs `.ts` files without flags.
const NODE_MIN: (u32, u32) = (22, 18);

fn node_version(node: &Path) -> Option<(u32, u32)> {
    let out = Command::new(node).arg("--version").output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let mut parts = text.trim().trim_start_matches('v').split('.');
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

fn from_env_file() -> Option<PathBuf> {
    let text = std::fs::read_to_string(pi_env::env_file()?).ok()?;
    let line = text.lines().find_map(|l| {
        l.trim()
            .strip_prefix("export ")
            .unwrap_or(l.trim())
            .strip_prefix("SLATE_PI_NODE=")
    })?;
    Some(PathBuf::from(
        line.trim().trim_matches('\'').trim_matches('"'),
    ))
}

/// A Node that can run the suite, or why not.
fn node() -> Result<PathBuf, String> {
    let candidates = std::env::var_os("SLATE_PI_NODE")
        .map(PathBuf::from)
        .into_iter()
        .chain(from_env_file())
        .chain(std::iter::once(PathBuf::from("node")));
    let mut seen = Vec::new();
    for node in candidates {
        match node_version(&node) {
            Some(v) if v >= NODE_MIN => return Ok(node),
            Some((major, minor)) => seen.push(format!("{} is {major}.{minor}", node.display())),
            None => seen.push(format!("{} does not run", node.display())),
        }
    }
    Err(seen.join("; "))
}

/// A Node for `what`, or `None` after saying loudly that `what` did not run (a failure under
/// `CI=true`).
fn node_or_skip(what: &str) -> Option<PathBuf> {
    match node() {
        Ok(node) => Some(node),
        Err(why) => {
            assert!(
                !pi_env::in_ci(),
                "no Node >= {}.{} for {what} ({why})",
                NODE_MIN.0,
                NODE_MIN.1
            );
            eprintln!(
                "SKIPPED: no Node >= {}.{} ({why}); {what} did not run",
                NODE_MIN.0, NODE_MIN.1
            );
            None
        }
    }
}

#[test]
fn the_extensions_node_test_suite_passes() {
    let Some(node) = node_or_skip("the extension's node --test suite") else {
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(&node)
        .args(["--test", "extension/test/*.test.ts"])
        .current_dir(root)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "node --test failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A glob that matched nothing would pass vacuously.
    let passed = stdout
        .lines()
        .find_map(|l| l.strip_prefix("# pass "))
        .and_then(|n| n.trim().parse::<u32>().ok())
        .unwrap_or(0);
    assert!(passed >= 40, "only {passed} extension tests ran:\n{stdout}");
}

/// A worker presents the hash of its files at `hello` (`extension/own_hash.ts`): computed by
/// node over an installed copy it is the binary's `content_hash` (so a coordinator accepts its
/// own workers), and one changed byte makes it another.
#[test]
fn a_workers_own_hash_is_the_binarys_content_hash_23() {
    let Some(node) = node_or_skip("the worker's own-hash check") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let entry = slate::worker::pi::extension::install_into(dir.path()).unwrap();
    let installed = entry.parent().unwrap().to_owned();
    let hash = || {
        let module = installed.join("own_hash.ts");
        let script = format!(
            "import {{ ownHash }} from {:?}; console.log(ownHash())",
            module.to_str().unwrap()
        );
        let out = Command::new(&node)
            .args(["--input-type=module", "-e", &script])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    let embedded = slate::worker::pi::extension::content_hash();
    assert_eq!(hash(), embedded);
    let render = installed.join("render.ts");
    let mut text = std::fs::read_to_string(&render).unwrap();
    text.push('\n');
    std::fs::write(&render, text).unwrap();
    assert_ne!(hash(), embedded, "a changed file changes the hash");
}
