//! Issue 4 ¶4–5 [Full output artifacts and previews; Storage and fleet observation]: the
//! session-dir layout, private task directories, temp-file + hard-link publication and the
//! append-only event log, against real directories under the system temp dir.

use std::collections::BTreeSet;
use std::fs::{self, File};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::json;
use slate::core::ids::ChildRef;
use slate::core::lifecycle::Status;
use slate::core::snapshot::{ChildSnapshot, RegistryEvent, RegistryEventKind, Telemetry, Window};
use slate::core::task::{Limits, Role};
use slate::store::StoreError;
use slate::store::artifacts::{PublishResult, TaskDir, create_task_dir, publish};
use slate::store::event_log::{EventLog, TornTail, read_history, retire_previous};
use slate::store::paths::{
    self, default_session_dir, delegation_dir, encode_cwd, event_log_path, fixed_child,
    parent_session_dir, resolve, task_dir,
};
use uuid::Uuid;

// --- Helpers -----------------------------------------------------------------------------------

/// A fresh directory under the system temp dir, removed (after restoring write access) on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "slate-store-test-{}-{n}-{name}",
            std::process::id()
        ));
        fs::create_dir(&path).expect("fresh scratch directory");
        Scratch(path)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

fn make_writable(dir: &Path) {
    let _ = fs::set_permissions(dir, fs::Permissions::from_mode(0o700));
    if let Ok(entries) = fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                make_writable(&entry.path());
            }
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        make_writable(&self.0);
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn mode(path: &Path) -> u32 {
    fs::symlink_metadata(path)
        .expect("entry exists")
        .permissions()
        .mode()
        & 0o777
}

fn names(dir: &Path) -> BTreeSet<String> {
    fs::read_dir(dir)
        .expect("readable directory")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

fn uuid(n: u128) -> Uuid {
    Uuid::from_u128(0x0b6a_0000_0000_4000_8000_0000_0000_0000 + n)
}

fn parent_id() -> Uuid {
    Uuid::from_u128(0x9a7e_0000_0000_4000_8000_0000_0000_0001)
}

/// `<scratch>/delegation/<parent-id>` (not created).
fn parent_dir(scratch: &Scratch) -> PathBuf {
    delegation_dir(scratch.path(), parent_id())
}

fn new_task(scratch: &Scratch, n: u128) -> TaskDir {
    create_task_dir(&parent_dir(scratch), ChildRef::new(uuid(n), 1)).expect("task dir created")
}

fn path_string(path: &Path) -> String {
    path.to_str().expect("UTF-8 temp path").to_owned()
}

fn snapshot(n: u128, generation: u32) -> ChildSnapshot {
    ChildSnapshot {
        id: uuid(n),
        generation,
        parent_id: parent_id(),
        parent_generation: None,
        depth: 1,
        status: Status::Running,
        profile: Role::Scout,
        cwd: "/work".to_owned(),
        assignment: "look around".to_owned(),
        activity: None,
        progress: None,
        result: None,
        model: Some("fake/fake-model".to_owned()),
        effort: Some("off".to_owned()),
        requested_model: None,
        requested_effort: None,
        logical: None,
        prewalk: None,
        telemetry: Telemetry::default(),
        error: None,
        transcript: None,
        limits: Limits {
            deadline_ms: 1_800_000,
            requests: 100,
            tools: 100,
            depth: 2,
            spawns: 8,
        },
        limit_reason: None,
        tool_calls: 0,
        spawns: 0,
        writer_lease: false,
        disposed: false,
        created_at: 0,
        ended_at: None,
        outcome: None,
        artifacts: None,
        tools: Vec::new(),
        leaf_tools: Vec::new(),
        skills: Vec::new(),
        capability_denials: Vec::new(),
        pause_reason: None,
        retained_context: false,
        streaming: None,
        retry: None,
        delivered_at: None,
        window: Window {
            number: 1,
            started_at: 0,
            deadline_at: 1_800_000,
        },
    }
}

fn changed(child: ChildSnapshot) -> RegistryEvent {
    RegistryEvent {
        kind: RegistryEventKind::Changed,
        child,
        event: None,
    }
}

/// Whether the permission bits of a 0500 directory actually stop this process from creating
/// a file in it. Root (or `CAP_DAC_OVERRIDE`) bypasses them; the probe is removed again.
fn read_only_dirs_are_enforced(dir: &Path) -> bool {
    let probe = dir.join(".write-probe");
    match File::create(&probe) {
        Ok(_) => {
            fs::remove_file(&probe).expect("remove probe");
            false
        }
        Err(_) => true,
    }
}

// --- Paths (pi 1.6.0 `getDefaultSessionDirPath`) -----------------------------------------------

#[test]
fn cwd_encoding_matches_pi_including_special_characters() {
    let cases = [
        ("/", "----"),
        ("/home/me/proj", "--home-me-proj--"),
        ("/home/me/my proj", "--home-me-my proj--"),
        ("/a-b/c", "--a-b-c--"),
        ("/x/y:z\\w", "--x-y-z-w--"),
        ("/tmp/été/日本", "--tmp-été-日本--"),
        ("/tmp/.hidden/--x--", "--tmp-.hidden---x----"),
    ];
    for (cwd, expected) in cases {
        assert_eq!(encode_cwd(Path::new(cwd)), expected, "{cwd}");
    }
}

#[test]
fn session_dir_resolves_cwd_and_agent_dir_lexically_like_node() {
    let dir = default_session_dir(Path::new("/h/.pi/agent/"), Path::new("/w//x/./../y/"))
        .expect("absolute paths need no current directory");
    assert_eq!(dir, PathBuf::from("/h/.pi/agent/sessions/--w-y--"));
    assert_eq!(
        resolve(Path::new("/../a/..")).expect("absolute"),
        PathBuf::from("/")
    );
    let relative = resolve(Path::new("some/dir")).expect("current dir readable");
    assert_eq!(
        relative,
        std::env::current_dir()
            .expect("current dir")
            .join("some/dir")
    );
}

#[test]
fn a_configured_session_dir_replaces_pis_default() {
    let configured = parent_session_dir(
        Some(Path::new("/srv/s/./x")),
        Path::new("/a"),
        Path::new("/w"),
    )
    .expect("absolute");
    assert_eq!(configured, PathBuf::from("/srv/s/x"));
    let default = parent_session_dir(None, Path::new("/a"), Path::new("/w")).expect("absolute");
    assert_eq!(default, PathBuf::from("/a/sessions/--w--"));
}

#[test]
fn delegation_layout_names_parents_generations_and_the_event_log() {
    let session = Path::new("/s");
    let delegation = delegation_dir(session, parent_id());
    assert_eq!(
        delegation,
        PathBuf::from(format!("/s/delegation/{}", parent_id().hyphenated()))
    );
    assert_eq!(
        task_dir(&delegation, ChildRef::new(uuid(1), 1)),
        delegation.join(uuid(1).to_string())
    );
    assert_eq!(
        task_dir(&delegation, ChildRef::new(uuid(1), 3)),
        delegation.join(format!("{}-g3", uuid(1)))
    );
    assert_eq!(event_log_path(&delegation), delegation.join("events.jsonl"));
}

#[test]
fn fixed_names_are_checked_to_be_single_plain_components() {
    for name in [
        paths::RESULT_TEXT,
        paths::STRUCTURED_JSON,
        paths::EVENT_LOG,
        paths::AGENT_DIR,
        paths::TRANSCRIPTS_DIR,
    ] {
        assert_eq!(
            fixed_child(Path::new("/d"), name).expect("valid fixed name"),
            Path::new("/d").join(name)
        );
    }
    for name in ["", ".", "..", "a/b", "/etc", "a\0b"] {
        assert!(
            matches!(
                fixed_child(Path::new("/d"), name),
                Err(StoreError::InvalidFixedName { .. })
            ),
            "{name:?}"
        );
    }
}

// --- Task directories ------------------------------------------------------------------------

#[test]
fn task_dir_agent_and_transcripts_are_created_with_mode_0700() {
    let scratch = Scratch::new("modes");
    // The whole chain below the scratch dir is missing: it is created 0700 as well.
    let session = scratch.path().join("sessions").join("--w--");
    let parent = delegation_dir(&session, parent_id());
    let task = create_task_dir(&parent, ChildRef::new(uuid(1), 1)).expect("created");

    assert_eq!(task.path(), parent.join(uuid(1).to_string()));
    assert_eq!(task.child(), ChildRef::new(uuid(1), 1));
    for dir in [
        task.path().to_owned(),
        task.agent_dir(),
        task.transcripts_dir(),
        parent.clone(),
        session.join("delegation"),
        session.clone(),
    ] {
        assert!(dir.is_dir(), "{}", dir.display());
        assert_eq!(mode(&dir), 0o700, "{}", dir.display());
    }
    assert_eq!(names(task.path()), set(&["agent", "transcripts"]));
}

#[test]
fn an_existing_parent_chain_is_used_without_chmod() {
    let scratch = Scratch::new("chain");
    let parent = parent_dir(&scratch);
    fs::create_dir_all(&parent).expect("pre-existing parent");
    fs::set_permissions(&parent, fs::Permissions::from_mode(0o755)).expect("chmod setup");
    fs::set_permissions(
        parent.parent().expect("delegation"),
        fs::Permissions::from_mode(0o751),
    )
    .expect("chmod setup");

    let task = new_task(&scratch, 1);

    assert_eq!(mode(&parent), 0o755);
    assert_eq!(mode(parent.parent().expect("delegation")), 0o751);
    assert_eq!(mode(task.path()), 0o700);
}

#[test]
fn an_existing_task_dir_is_an_error_and_is_left_unchanged() {
    let scratch = Scratch::new("exists");
    let parent = parent_dir(&scratch);
    let existing = parent.join(uuid(1).to_string());
    fs::create_dir_all(&existing).expect("setup");
    fs::set_permissions(&existing, fs::Permissions::from_mode(0o755)).expect("chmod setup");
    fs::write(existing.join("result.txt"), "old").expect("setup");

    let err = create_task_dir(&parent, ChildRef::new(uuid(1), 1)).expect_err("must refuse");

    assert!(
        matches!(&err, StoreError::Exists { path } if *path == existing),
        "{err:?}"
    );
    assert!(err.to_string().contains(&uuid(1).to_string()), "{err}");
    assert_eq!(mode(&existing), 0o755);
    assert_eq!(names(&existing), set(&["result.txt"]));
    assert_eq!(
        fs::read_to_string(existing.join("result.txt")).expect("kept"),
        "old"
    );
}

#[test]
fn a_successor_generation_gets_its_own_directory_beside_the_first() {
    let scratch = Scratch::new("generations");
    let first = new_task(&scratch, 1);
    let second =
        create_task_dir(&parent_dir(&scratch), ChildRef::new(uuid(1), 2)).expect("generation 2");
    assert_eq!(
        second.path().file_name().expect("name").to_string_lossy(),
        format!("{}-g2", uuid(1))
    );
    assert_ne!(first.path(), second.path());
    assert_eq!(mode(second.path()), 0o700);
    // Creating generation 2 again is refused: nothing is reused.
    assert!(matches!(
        create_task_dir(&parent_dir(&scratch), ChildRef::new(uuid(1), 2)),
        Err(StoreError::Exists { .. })
    ));
}

#[test]
fn a_file_where_the_task_dir_goes_is_refused_and_kept() {
    let scratch = Scratch::new("partial");
    let parent = parent_dir(&scratch);
    fs::create_dir_all(&parent).expect("setup");
    // A file where the task directory will be is the simplest collision to arrange.
    let blocked = parent.join(uuid(2).to_string());
    fs::write(&blocked, "not a directory").expect("setup");
    let err = create_task_dir(&parent, ChildRef::new(uuid(2), 1)).expect_err("collision");
    assert!(matches!(err, StoreError::Exists { .. }), "{err:?}");
    assert_eq!(
        fs::read_to_string(&blocked).expect("kept"),
        "not a directory"
    );
}

// --- Publication -----------------------------------------------------------------------------

fn assert_clean(task: &TaskDir, expected: &[&str]) {
    assert_eq!(
        names(task.path()),
        set(expected),
        "no temporary names may remain in {}",
        task.path().display()
    );
}

#[test]
fn result_txt_holds_the_exact_bytes_with_mode_0600() {
    let texts = [
        "",
        "plain",
        "trailing spaces and newlines  \n\n",
        "\n",
        "  leading and trailing\t",
        "multibyte: été, 日本語, 😀, e\u{301}\r\n",
    ];
    let scratch = Scratch::new("exact");
    for (n, text) in (1..).zip(texts) {
        let task = new_task(&scratch, n);
        let result = publish(&task, text, None);
        assert!(result.is_complete(), "{:?}", result.errors);
        assert_eq!(
            result.artifacts.text,
            Some(path_string(&task.result_path()))
        );
        assert_eq!(result.artifacts.structured, None);
        assert_eq!(result.artifacts.error, None);
        assert_eq!(
            fs::read(task.result_path()).expect("written"),
            text.as_bytes()
        );
        assert_eq!(mode(&task.result_path()), 0o600);
        assert_clean(&task, &["agent", "transcripts", "result.txt"]);
    }
}

#[test]
fn structured_json_round_trips_the_value() {
    let scratch = Scratch::new("structured");
    let task = new_task(&scratch, 1);
    let value = json!({
        "verdict": "ok",
        "score": 0.125,
        "count": 18_446_744_073_709_551_615_u64,
        "negative": -7,
        "nested": {"list": [1, "two", null, true, {"k": []}]},
        "text": "line\nbreak \"quoted\" été 😀",
        "empty": {}
    });

    let result = publish(&task, "done", Some(&value));

    assert!(result.is_complete(), "{:?}", result.errors);
    let path = task.structured_path();
    assert_eq!(result.artifacts.structured, Some(path_string(&path)));
    let read: serde_json::Value =
        serde_json::from_slice(&fs::read(&path).expect("written")).expect("valid JSON");
    assert_eq!(read, value);
    assert_eq!(mode(&path), 0o600);
    assert_clean(
        &task,
        &["agent", "transcripts", "result.txt", "structured.json"],
    );
}

#[test]
fn a_pre_existing_result_txt_is_never_overwritten_and_the_temp_name_is_removed() {
    let scratch = Scratch::new("no-overwrite");
    let task = new_task(&scratch, 1);
    fs::write(task.result_path(), "earlier bytes").expect("setup");

    let result = publish(&task, "new text", Some(&json!({"a": 1})));

    assert_eq!(result.artifacts.text, None);
    let error = result.artifacts.error.clone().expect("explicit error");
    assert!(error.contains(&path_string(&task.result_path())), "{error}");
    assert!(error.contains("os error"), "{error}");
    assert!(matches!(
        result.errors.as_slice(),
        [StoreError::Publish { source, .. }] if source.kind() == std::io::ErrorKind::AlreadyExists
    ));
    assert_eq!(
        fs::read_to_string(task.result_path()).expect("kept"),
        "earlier bytes"
    );
    // The independent structured artifact is still published and referenced.
    assert_eq!(
        result.artifacts.structured,
        Some(path_string(&task.structured_path()))
    );
    assert_clean(
        &task,
        &["agent", "transcripts", "result.txt", "structured.json"],
    );
}

#[test]
fn text_stays_referenced_when_structured_publication_fails() {
    let scratch = Scratch::new("text-kept");
    let task = new_task(&scratch, 1);
    // A directory under the fixed name makes the link fail for any user, root included.
    fs::create_dir(task.structured_path()).expect("setup");

    let result = publish(&task, "the answer\n", Some(&json!({"answer": 42})));

    assert_eq!(
        result.artifacts.text,
        Some(path_string(&task.result_path()))
    );
    assert_eq!(
        fs::read(task.result_path()).expect("written"),
        b"the answer\n"
    );
    assert_eq!(result.artifacts.structured, None);
    let error = result.artifacts.error.clone().expect("explicit error");
    assert!(
        error.contains(&path_string(&task.structured_path())),
        "{error}"
    );
    assert!(!result.is_complete());
    assert!(
        task.structured_path().is_dir(),
        "the existing entry is untouched"
    );
    assert_clean(
        &task,
        &["agent", "transcripts", "result.txt", "structured.json"],
    );
}

/// Issue 4 faults: "a read-only task directory makes publication fail visibly".
///
/// As an ordinary user the task directory is made 0500 and creating the temporary file fails
/// with `EACCES`. Root (CI runs as root) ignores permission bits, so a probe decides: when the
/// 0500 directory is still writable, directories are pre-placed under both fixed names, and
/// publication then fails at the hard link with `EEXIST`, which root cannot bypass. Either way
/// nothing is referenced, each error names its file and the OS error, and no entry is added.
#[test]
fn a_read_only_task_dir_makes_publication_fail_visibly() {
    let scratch = Scratch::new("read-only");
    let task = new_task(&scratch, 1);
    fs::set_permissions(task.path(), fs::Permissions::from_mode(0o500)).expect("chmod");
    let enforced = read_only_dirs_are_enforced(task.path());
    let mut expected = vec!["agent", "transcripts"];
    if !enforced {
        fs::create_dir(task.result_path()).expect("setup as root");
        fs::create_dir(task.structured_path()).expect("setup as root");
        expected.extend(["result.txt", "structured.json"]);
    }

    let result: PublishResult = publish(&task, "text that cannot land", Some(&json!([1, 2])));

    fs::set_permissions(task.path(), fs::Permissions::from_mode(0o700)).expect("chmod back");
    assert_eq!(result.artifacts.text, None);
    assert_eq!(result.artifacts.structured, None);
    assert_eq!(result.errors.len(), 2, "{:?}", result.errors);
    let error = result.artifacts.error.clone().expect("explicit error");
    for path in [task.result_path(), task.structured_path()] {
        assert!(error.contains(&path_string(&path)), "{error}");
    }
    let os_error = if enforced {
        "Permission denied"
    } else {
        "File exists"
    };
    assert!(error.contains(os_error), "{error}");
    assert_clean(&task, &expected);
}

#[test]
fn publication_into_a_vanished_task_dir_fails_with_the_path() {
    let scratch = Scratch::new("vanished");
    let task = new_task(&scratch, 1);
    fs::remove_dir(task.agent_dir()).expect("setup");
    fs::remove_dir(task.transcripts_dir()).expect("setup");
    fs::remove_dir(task.path()).expect("setup");

    let result = publish(&task, "x", None);

    assert_eq!(result.artifacts.text, None);
    let error = result.artifacts.error.expect("explicit error");
    assert!(error.contains(&path_string(&task.result_path())), "{error}");
    assert!(!task.path().exists(), "nothing is recreated");
}

// --- Issue 14, item 7: crash leftovers -------------------------------------------------------

/// The env var that turns [`publication_child`] into the publisher the crash test kills.
const PUBLISH_CHILD_DIR: &str = "SLATE_TEST_PUBLISH_CHILD_DIR";
/// Large enough that writing it takes many milliseconds (the kill lands mid-write).
const CHILD_RESULT_BYTES: usize = 96 * 1024 * 1024;

/// Not a test of its own: run by [`crash_leftovers_7_kill_9_mid_publication_leaves_no_temp_file`]
/// as a child process (this test binary, filtered to this name, with the env var set), it
/// publishes one large `result.txt` into a fresh task directory and then waits to be killed.
#[test]
fn publication_child() {
    let Some(dir) = std::env::var_os(PUBLISH_CHILD_DIR) else {
        return;
    };
    let task = create_task_dir(Path::new(&dir), ChildRef::new(uuid(7), 1)).expect("task dir");
    let text = "x".repeat(CHILD_RESULT_BYTES);
    println!("publishing");
    let _ = std::io::stdout().flush();
    let _ = publish(&task, &text, None);
    std::thread::sleep(std::time::Duration::from_secs(60));
}

/// Whether process `pid` has a file in `dir` open (named, or an unnamed `O_TMPFILE` there,
/// which `/proc` shows as `<dir>/#<inode> (deleted)`): it is publishing into `dir`.
fn has_open_file_in(pid: u32, dir: &Path) -> bool {
    let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten()
        .any(|fd| fs::read_link(fd.path()).is_ok_and(|target| target.parent() == Some(dir)))
}

/// Issue 14, item 7: "after kill -9 during publication, full-size `.result.txt.<hex>.tmp`
/// files stay in task directories forever". A child process publishes a 96 MiB result and is
/// killed with SIGKILL while it holds the file it is writing open (seen in `/proc/<pid>/fd`):
/// the task directory then holds its own directories and at most a complete `result.txt`,
/// never a temporary file.
#[test]
fn crash_leftovers_7_kill_9_mid_publication_leaves_no_temp_file() {
    let scratch = Scratch::new("kill-mid-publication");
    let dir = parent_dir(&scratch);
    let mut child = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "publication_child",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(PUBLISH_CHILD_DIR, &dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("child starts");
    let mut out = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    loop {
        line.clear();
        let read = std::io::BufRead::read_line(&mut out, &mut line).expect("child output");
        assert!(read > 0, "the child ended before publishing");
        if line.contains("publishing") {
            break;
        }
    }
    let pid = child.id();
    let task = task_dir(&dir, ChildRef::new(uuid(7), 1));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !has_open_file_in(pid, &task) {
        assert!(
            std::time::Instant::now() < deadline,
            "the child never opened its artifact"
        );
        std::thread::yield_now();
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");

    let left = names(&task);
    let allowed = set(&["agent", "transcripts", "result.txt"]);
    assert!(
        left.is_subset(&allowed),
        "killed mid-publication, the task directory holds {left:?}"
    );
    if left.contains("result.txt") {
        assert_eq!(
            fs::metadata(task.join("result.txt")).expect("stat").len(),
            CHILD_RESULT_BYTES as u64,
            "a published result.txt is complete"
        );
    }
}

/// Issue 14, item 7, the fallback's half: a named temporary file a killed runtime left (on a
/// file system without `O_TMPFILE`) is removed when a runtime of that parent starts again;
/// files that only look similar, and the artifacts, are kept.
#[test]
fn crash_leftovers_7_a_killed_runtimes_named_temp_files_are_swept() {
    let scratch = Scratch::new("sweep");
    let task = new_task(&scratch, 1);
    let other = new_task(&scratch, 2);
    assert!(publish(&task, "kept", None).is_complete());
    let leftovers = [
        ".result.txt.0123456789abcdef.tmp",
        ".structured.json.fedcba9876543210.tmp",
    ];
    let kept = [
        ".result.txt.0123.tmp",
        "result.txt.0123456789abcdef.tmp",
        ".notes.txt.0123456789abcdef.tmp",
    ];
    for name in leftovers.iter().chain(&kept) {
        fs::write(task.path().join(name), "partial").expect("setup");
    }
    fs::write(other.path().join(leftovers[0]), "partial").expect("setup");

    let removed = slate::store::artifacts::sweep_leftovers(&parent_dir(&scratch));

    assert_eq!(removed, 3);
    let mut expected = vec!["agent", "transcripts", "result.txt"];
    expected.extend(kept);
    assert_clean(&task, &expected);
    assert_clean(&other, &["agent", "transcripts"]);
    assert_eq!(
        fs::read_to_string(task.result_path()).expect("kept"),
        "kept"
    );
}

// --- Event log ---------------------------------------------------------------------------------

#[test]
fn the_event_log_is_created_fresh_with_mode_0600() {
    let scratch = Scratch::new("log-create");
    let path = event_log_path(&parent_dir(&scratch));
    let log = EventLog::create(&path).expect("created with its parent chain");
    assert_eq!(log.path(), path);
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(&parent_dir(&scratch)), 0o700);
    assert_eq!(fs::metadata(&path).expect("exists").len(), 0);
    drop(log);

    // A fresh runtime never continues an old log.
    fs::write(&path, "old evidence\n").expect("setup");
    let err = EventLog::create(&path).expect_err("exists");
    assert!(matches!(err, StoreError::Exists { .. }), "{err:?}");
    assert_eq!(fs::read_to_string(&path).expect("kept"), "old evidence\n");
}

#[test]
fn an_earlier_runtimes_log_is_set_aside_under_the_first_free_number() {
    let scratch = Scratch::new("log-retire");
    let path = event_log_path(&parent_dir(&scratch));
    assert!(
        retire_previous(&path)
            .expect("nothing to set aside")
            .is_none(),
        "no earlier log: nothing happens"
    );
    fs::create_dir_all(path.parent().expect("a parent")).expect("setup");
    fs::write(&path, "first runtime\n").expect("setup");
    // A number already taken (by hand, or an earlier retirement) is skipped, never replaced.
    let taken = path.with_file_name("events.1.jsonl");
    fs::write(&taken, "kept as it is\n").expect("setup");
    let moved = retire_previous(&path)
        .expect("set aside")
        .expect("a new name");
    assert_eq!(moved, path.with_file_name("events.2.jsonl"));
    assert_eq!(
        fs::read_to_string(&moved).expect("moved"),
        "first runtime\n"
    );
    assert_eq!(fs::read_to_string(&taken).expect("kept"), "kept as it is\n");
    assert!(!path.exists());
    // The next runtime starts a fresh log at the old name.
    drop(EventLog::create(&path).expect("fresh"));
    assert_eq!(fs::metadata(&path).expect("exists").len(), 0);
    // Something other than a file at the log's name is left alone and named.
    fs::remove_file(&path).expect("setup");
    fs::create_dir(&path).expect("setup");
    let err = retire_previous(&path).expect_err("a directory");
    assert!(matches!(err, StoreError::RetireLog { .. }), "{err:?}");
    assert!(err.to_string().contains("not a regular file"), "{err}");
    assert!(path.is_dir());
}

#[test]
fn history_round_trips_latest_snapshots_and_reports_a_torn_last_line() {
    let scratch = Scratch::new("log-torn");
    let path = event_log_path(&parent_dir(&scratch));
    let mut log = EventLog::create(&path).expect("created");

    let a1 = snapshot(1, 1);
    let b1 = snapshot(2, 1);
    let a2 = snapshot(1, 2);
    let a1_done = ChildSnapshot {
        status: Status::Settled,
        result: Some("done".to_owned()),
        ..snapshot(1, 1)
    };
    for child in [a1, b1.clone(), a2.clone(), a1_done.clone()] {
        log.append(&changed(child)).expect("appended");
    }
    log.append(&RegistryEvent {
        kind: RegistryEventKind::Sdk,
        child: b1.clone(),
        event: Some(json!({"type": "tool_execution_start"})),
    })
    .expect("appended");
    drop(log);

    // Every line is one complete JSON object followed by a newline.
    let raw = fs::read_to_string(&path).expect("readable");
    assert_eq!(raw.lines().count(), 5);
    assert!(raw.ends_with('\n'));

    // The writer died mid-line.
    let mut file = fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .expect("reopen for the test");
    file.write_all(br#"{"type":"changed","child":{"id":"0b6a"#)
        .expect("torn write");
    drop(file);

    let history = read_history(&path).expect("readable despite the torn line");

    assert_eq!(history.events, 5);
    assert_eq!(history.malformed, 0);
    assert_eq!(
        history.torn_tail,
        Some(TornTail {
            line: 6,
            bytes: r#"{"type":"changed","child":{"id":"0b6a"#.len()
        })
    );
    // First-seen order: uuid(1)@1, uuid(2)@1, uuid(1)@2; uuid(1)@1 shows its latest state.
    assert_eq!(
        history.snapshots,
        vec![a1_done.clone(), b1.clone(), a2.clone()]
    );
    assert_eq!(history.snapshot(ChildRef::new(uuid(1), 1)), Some(&a1_done));
    assert_eq!(history.snapshot(ChildRef::new(uuid(1), 2)), Some(&a2));
    assert_eq!(history.snapshot(ChildRef::new(uuid(3), 1)), None);
}

#[test]
fn history_counts_a_malformed_middle_line_and_keeps_reading() {
    let scratch = Scratch::new("log-malformed");
    let path = scratch.path().join("events.jsonl");
    let good = serde_json::to_string(&changed(snapshot(1, 1))).expect("encodes");
    let later = serde_json::to_string(&changed(ChildSnapshot {
        status: Status::Failed,
        ..snapshot(1, 1)
    }))
    .expect("encodes");
    fs::write(&path, format!("{good}\nnot json at all\n\n{later}\n")).expect("setup");

    let history = read_history(&path).expect("readable");

    assert_eq!(history.events, 2);
    assert_eq!(history.malformed, 1);
    assert_eq!(history.first_malformed_line, Some(2));
    assert_eq!(history.torn_tail, None);
    assert_eq!(history.snapshots.len(), 1);
    assert_eq!(history.snapshots[0].status, Status::Failed);
}

#[test]
fn a_missing_log_is_a_read_error_naming_the_path() {
    let scratch = Scratch::new("log-missing");
    let path = scratch.path().join("events.jsonl");
    let err = read_history(&path).expect_err("missing");
    assert!(matches!(err, StoreError::ReadLog { .. }));
    assert!(err.to_string().contains(&path_string(&path)), "{err}");
}

#[test]
fn ten_thousand_events_are_appended_and_read_back_in_order() {
    const EVENTS: u32 = 10_000;
    const CHILDREN: u32 = 100;
    let scratch = Scratch::new("log-10k");
    let path = event_log_path(&parent_dir(&scratch));
    let mut log = EventLog::create(&path).expect("created");
    for i in 0..EVENTS {
        let child = ChildSnapshot {
            progress: Some(format!("step {i}")),
            tool_calls: i,
            ..snapshot(u128::from(i % CHILDREN), 1)
        };
        log.append(&changed(child)).expect("appended");
    }
    drop(log);

    // The raw lines are in append order.
    let raw = fs::read_to_string(&path).expect("readable");
    let order: Vec<u32> = raw
        .lines()
        .map(|line| {
            serde_json::from_str::<RegistryEvent>(line)
                .expect("each line is one event")
                .child
                .tool_calls
        })
        .collect();
    assert_eq!(order, (0..EVENTS).collect::<Vec<_>>());

    let history = read_history(&path).expect("readable");
    assert_eq!(history.events, EVENTS as usize);
    assert_eq!(history.malformed, 0);
    assert_eq!(history.torn_tail, None);
    assert_eq!(history.snapshots.len(), CHILDREN as usize);
    for (k, snap) in (0..CHILDREN).zip(&history.snapshots) {
        assert_eq!(snap.id, uuid(u128::from(k)), "first-seen order");
        let last = EVENTS - CHILDREN + k;
        assert_eq!(snap.tool_calls, last, "latest event wins");
        assert_eq!(
            snap.progress.as_deref(),
            Some(format!("step {last}").as_str())
        );
    }
}

/// Issue 14, item 4, the log's part: a runtime that shuts down says so in its last line, and
/// one that does not (killed) is read as died at its last sign of life, the file's
/// modification time, which its heartbeat renews.
#[test]
fn a_log_tells_a_shutdown_from_a_death_4() {
    use slate::store::event_log::CoordinatorEnd;
    let scratch = Scratch::new("log-end");
    let path = event_log_path(&parent_dir(&scratch));
    let mut log = EventLog::create(&path).expect("created");
    log.append(&changed(snapshot(1, 1))).expect("appended");

    // No closing line: died, at the file's modification time.
    let old = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_796_000_000);
    File::options()
        .append(true)
        .open(&path)
        .unwrap()
        .set_modified(old)
        .unwrap();
    let history = read_history(&path).expect("readable");
    assert_eq!(
        history.end(),
        CoordinatorEnd::Died {
            last_sign_of_life: 1_796_000_000_000
        }
    );
    // The heartbeat moves the sign of life to now.
    log.heartbeat().expect("heartbeat");
    let CoordinatorEnd::Died { last_sign_of_life } = read_history(&path).unwrap().end() else {
        panic!("still no closing line");
    };
    assert!(last_sign_of_life > 1_796_000_000_000);

    // The closing line: shut down, at the time it names; the events are all still read.
    log.close(1_796_000_123_456).expect("closed");
    let history = read_history(&path).expect("readable");
    assert_eq!(
        history.end(),
        CoordinatorEnd::ShutDown {
            at: 1_796_000_123_456
        }
    );
    assert_eq!((history.events, history.malformed), (1, 0));
}
