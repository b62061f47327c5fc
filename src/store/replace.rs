//! The one way Slate replaces a whole small file (its install files and record, pi's settings,
//! a coordinator's discovery metadata, the pi version cache): write a temporary sibling with
//! `tempfile` (a fresh random name, created exclusively), set its mode, `fsync`, rename over
//! the target. A reader sees the old file or the new one, never a part; a failure leaves the
//! target as it was and removes the temporary (dropping it does).
//!
//! Artifacts are not written here: they must refuse an existing name and have no name until
//! complete (`store::artifacts`, `O_TMPFILE` and `linkat`).

use std::fs;
use std::io::{self, Write as _};
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

/// `path` := `bytes` with permission bits `mode` (exactly, whatever the umask).
pub fn replace(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    let mut temp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .tempfile_in(dir)?;
    temp.as_file()
        .set_permissions(fs::Permissions::from_mode(mode & 0o7777))?;
    temp.write_all(bytes)?;
    temp.as_file().sync_all()?;
    temp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::replace;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn replaces_whole_with_the_mode_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.json");
        std::fs::write(&path, "old").unwrap();
        replace(&path, b"new", 0o600).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o600);
        replace(&path, b"newer", 0o644).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o644);
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("f.json")]);
    }

    #[test]
    fn a_failed_replace_leaves_the_target_and_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("d");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("keep"), "x").unwrap();
        assert!(
            replace(&target, b"new", 0o600).is_err(),
            "a non-empty directory is not replaced"
        );
        assert!(target.join("keep").is_file());
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("d")]);
    }
}
