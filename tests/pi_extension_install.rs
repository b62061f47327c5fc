//! The pi extension shipped in the binary: the table covers `extension/`, the copy on disk is
//! private, complete and byte-exact, a tampered copy is repaired, and concurrent installs agree.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use slate::worker::pi::extension::{
    ENTRY, FILES, WORKER_ENTRY, content_hash, install_into, is_intact,
};

fn temp(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("slate-extension-{name}-"))
        .tempdir()
        .unwrap()
}

fn extension_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("extension")
}

fn mode(path: &Path) -> u32 {
    fs::symlink_metadata(path).unwrap().mode() & 0o777
}

fn names(dir: &Path) -> BTreeSet<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn every_shipped_file_of_extension_is_in_the_table() {
    let mut on_disk = BTreeSet::new();
    for entry in fs::read_dir(extension_dir()).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type().unwrap().is_dir() {
            // Only the tests live in a subdirectory; anything else would not be shipped.
            assert_eq!(
                name, "test",
                "extension/{name}/ is neither shipped nor a test folder"
            );
            continue;
        }
        on_disk.insert(name);
    }
    let table: BTreeSet<String> = FILES.iter().map(|(n, _)| (*n).to_owned()).collect();
    assert_eq!(
        on_disk, table,
        "src/worker/pi/extension.rs FILES must list exactly the files of extension/ (tests excluded)"
    );
    for (name, content) in FILES {
        let disk = fs::read_to_string(extension_dir().join(name)).unwrap();
        assert_eq!(
            &disk, content,
            "{name}: the binary was built from another copy"
        );
    }
}

#[test]
fn every_relative_import_names_a_shipped_file() {
    let table: BTreeSet<&str> = FILES.iter().map(|(n, _)| *n).collect();
    for (name, content) in FILES {
        for line in content.lines() {
            let Some((_, rest)) = line.split_once("from \"./") else {
                continue;
            };
            let imported = rest.split('"').next().unwrap();
            assert!(
                table.contains(imported),
                "{name} imports ./{imported}, which is not shipped"
            );
        }
    }
}

/// The files `entry` loads: itself and every relative import, transitively.
fn import_closure(entry: &str) -> BTreeSet<&'static str> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![FILES.iter().find(|(n, _)| *n == entry).unwrap().0];
    while let Some(name) = todo.pop() {
        if !seen.insert(name) {
            continue;
        }
        let (_, content) = FILES.iter().find(|(n, _)| *n == name).unwrap();
        for line in content.lines() {
            if let Some((_, rest)) = line.split_once("from \"./") {
                let imported = rest.split('"').next().unwrap();
                todo.push(FILES.iter().find(|(n, _)| *n == imported).unwrap().0);
            }
        }
    }
    seen
}

#[test]
fn a_worker_loads_only_the_workers_part_of_the_extension() {
    let worker = import_closure(WORKER_ENTRY);
    let main = import_closure(ENTRY);
    for session_only in [
        "main_session.ts",
        "commands.ts",
        "widget.ts",
        "hub_overlay.ts",
        "handoff.ts",
        "reservation.ts",
        "install.ts",
    ] {
        assert!(
            !worker.contains(session_only),
            "{WORKER_ENTRY} loads {session_only}: {worker:?}"
        );
        assert!(
            main.contains(session_only),
            "{ENTRY} must load {session_only}"
        );
    }
    assert!(worker.contains("guards.ts") && worker.contains("tools.ts"));
    assert!(
        worker.len() * 2 < main.len(),
        "a worker loads {} of the main session's {} files",
        worker.len(),
        main.len()
    );
}

#[test]
fn the_extension_reports_slates_version() {
    let (_, index) = FILES.iter().find(|(n, _)| *n == "version.ts").unwrap();
    let expected = format!(
        "export const EXTENSION_VERSION = \"{}\";",
        env!("CARGO_PKG_VERSION")
    );
    assert!(
        index.lines().any(|l| l == expected),
        "extension/version.ts must say `{expected}`"
    );
}

#[test]
fn installs_a_private_complete_copy_named_by_its_content() {
    let tmp = temp("fresh");
    let base = tmp.path().join("cache/extension");
    let entry = install_into(&base).unwrap();
    let dir = base.join(content_hash());
    assert_eq!(entry, dir.join(WORKER_ENTRY));
    assert!(entry.is_absolute());
    assert_eq!(content_hash().len(), 32);
    assert!(content_hash().bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(mode(&base), 0o700);
    assert_eq!(mode(&dir), 0o700);
    let expected: BTreeSet<String> = FILES.iter().map(|(n, _)| (*n).to_owned()).collect();
    assert_eq!(names(&dir), expected);
    for (name, content) in FILES {
        let path = dir.join(name);
        assert_eq!(mode(&path), 0o600, "{name}");
        assert_eq!(fs::read_to_string(&path).unwrap(), *content, "{name}");
    }
    assert_eq!(names(&base), BTreeSet::from([content_hash().to_owned()]));
}

#[test]
fn a_relative_base_still_gives_an_absolute_entry() {
    let tmp = temp("relative");
    let cwd = std::env::current_dir().unwrap();
    let relative = pathdiff(tmp.path(), &cwd);
    let entry = install_into(&relative.join("ext")).unwrap();
    assert!(entry.is_absolute(), "{}", entry.display());
    assert!(entry.is_file());
}

/// `path` relative to `base` (both absolute), via `..` components.
fn pathdiff(path: &Path, base: &Path) -> PathBuf {
    let depth = base.components().count() - 1;
    let mut out: PathBuf = std::iter::repeat_n("..", depth).collect();
    out.push(path.strip_prefix("/").unwrap());
    out
}

#[test]
fn an_intact_copy_is_reused_as_it_is() {
    let tmp = temp("reuse");
    let base = tmp.path().join("extension");
    install_into(&base).unwrap();
    let dir = base.join(content_hash());
    let inode = fs::metadata(&dir).unwrap().ino();
    let file_inode = fs::metadata(dir.join(ENTRY)).unwrap().ino();
    install_into(&base).unwrap();
    assert_eq!(fs::metadata(&dir).unwrap().ino(), inode);
    assert_eq!(fs::metadata(dir.join(ENTRY)).unwrap().ino(), file_inode);
}

/// Install, break the copy with `tamper`, install again: the copy is whole and exact again.
fn repaired_after(name: &str, tamper: impl FnOnce(&Path)) {
    let tmp = temp(name);
    let base = tmp.path().join("extension");
    install_into(&base).unwrap();
    let dir = base.join(content_hash());
    tamper(&dir);
    assert!(!is_intact(&dir), "{name}: the tampering went unnoticed");
    install_into(&base).unwrap();
    assert!(is_intact(&dir), "{name}: not repaired");
    assert!(fs::symlink_metadata(&dir).unwrap().is_dir());
    assert_eq!(
        names(&base),
        BTreeSet::from([content_hash().to_owned()]),
        "{name}: leftovers"
    );
}

#[test]
fn an_edited_file_is_repaired() {
    repaired_after("edited", |dir| {
        fs::write(
            dir.join("guards.ts"),
            "export function registerGuards() {}\n",
        )
        .unwrap();
    });
}

#[test]
fn a_truncated_file_is_repaired() {
    // What a crash after the rename but before the data reached the disk could leave.
    repaired_after("truncated", |dir| {
        fs::write(dir.join("control.ts"), "").unwrap();
    });
}

#[test]
fn a_missing_file_is_repaired() {
    repaired_after("missing", |dir| {
        fs::remove_file(dir.join("identity.ts")).unwrap();
    });
}

#[test]
fn an_added_file_is_repaired() {
    repaired_after("added", |dir| {
        fs::write(dir.join("evil.ts"), "process.exit(0)\n").unwrap();
        fs::set_permissions(dir.join("evil.ts"), fs::Permissions::from_mode(0o600)).unwrap();
    });
}

#[test]
fn loosened_permissions_are_repaired() {
    repaired_after("file-mode", |dir| {
        fs::set_permissions(dir.join(ENTRY), fs::Permissions::from_mode(0o644)).unwrap();
    });
    repaired_after("dir-mode", |dir| {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o755)).unwrap();
    });
}

#[test]
fn a_file_swapped_for_a_symlink_is_repaired() {
    repaired_after("file-symlink", |dir| {
        let elsewhere = dir.parent().unwrap().parent().unwrap().join("other.ts");
        fs::write(&elsewhere, FILES[0].1).unwrap();
        fs::remove_file(dir.join(FILES[0].0)).unwrap();
        symlink(&elsewhere, dir.join(FILES[0].0)).unwrap();
    });
}

#[test]
fn a_directory_swapped_for_a_symlink_is_replaced_and_its_target_left_alone() {
    let tmp = temp("dir-symlink");
    let base = tmp.path().join("extension");
    install_into(&base).unwrap();
    let dir = base.join(content_hash());
    // A full, byte-exact copy somewhere else, linked in its place: still not ours to trust.
    let elsewhere = tmp.path().join("elsewhere");
    fs::rename(&dir, &elsewhere).unwrap();
    symlink(&elsewhere, &dir).unwrap();
    assert!(!is_intact(&dir));
    install_into(&base).unwrap();
    assert!(fs::symlink_metadata(&dir).unwrap().is_dir());
    assert!(is_intact(&dir));
    assert!(
        is_intact(&elsewhere),
        "the symlink's target was not touched"
    );
}

#[test]
fn a_file_in_place_of_the_directory_is_replaced() {
    let tmp = temp("file-in-place");
    let base = tmp.path().join("extension");
    fs::create_dir_all(&base).unwrap();
    fs::write(base.join(content_hash()), "not a directory").unwrap();
    install_into(&base).unwrap();
    assert!(is_intact(&base.join(content_hash())));
}

#[test]
fn an_old_crash_leftover_is_removed_and_a_fresh_one_kept() {
    let tmp = temp("stale");
    let base = tmp.path().join("extension");
    fs::create_dir_all(&base).unwrap();
    let old = base.join(".tmp-deadbeef-1-0");
    let fresh = base.join(".tmp-deadbeef-2-0");
    for d in [&old, &fresh] {
        fs::create_dir(d).unwrap();
        fs::write(d.join("index.ts"), "half").unwrap();
    }
    let two_hours_ago = SystemTime::now() - Duration::from_secs(7200);
    fs::File::open(&old)
        .unwrap()
        .set_modified(two_hours_ago)
        .unwrap();
    install_into(&base).unwrap();
    assert!(!old.exists(), "a crashed install's leftover stays forever");
    assert!(
        fresh.exists(),
        "a concurrent install's temporary directory was removed"
    );
}

#[test]
fn concurrent_installs_agree_and_leave_nothing_behind() {
    let tmp = temp("concurrent");
    let base = tmp.path().join("extension");
    for round in 0..3 {
        if round == 1 {
            // Every thread now races to repair the same broken copy.
            fs::write(base.join(content_hash()).join(ENTRY), "broken").unwrap();
        }
        let entries: Vec<PathBuf> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8).map(|_| s.spawn(|| install_into(&base))).collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap().unwrap())
                .collect()
        });
        assert!(entries.windows(2).all(|w| w[0] == w[1]), "{entries:?}");
        assert!(is_intact(&base.join(content_hash())), "round {round}");
        assert_eq!(
            names(&base),
            BTreeSet::from([content_hash().to_owned()]),
            "round {round}"
        );
    }
}

/// The table is in byte order of the names: the order `hash_files` takes them in, and the order
/// a worker sorts its directory's names into to present the same hash (`own_hash.ts`).
#[test]
fn the_shipped_table_is_in_name_order_23() {
    let names: Vec<&str> = FILES.iter().map(|(n, _)| *n).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted);
}
