//! `events.jsonl`: one registry event (with its detached snapshot) per line, append-only.
//!
//! The log is evidence for `subagent-status` and the Hub after the runtime is gone. It is
//! never recovery: nothing reads it to revive, resume or re-admit work.
//!
//! How it ended is evidence too. A runtime that shuts down writes a last line
//! `{"type":"shutdown","at":MS}` ([`EventLog::close`]); while it runs, its file's modification
//! time is renewed at least every [`HEARTBEAT`] ([`EventLog::heartbeat`]). A log without the
//! closing line whose runtime no longer answers belongs to a coordinator that died (kill -9,
//! a crash, the machine stopped), and its modification time is its last sign of life: it
//! stopped answering within one [`HEARTBEAT`] after that ([`History::end`]).

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::error::StoreError;
use super::paths;
use super::private::{create_private_file, ensure_private_dir_chain, verify_file_mode};
use crate::core::Millis;
use crate::core::ids::ChildRef;
use crate::core::snapshot::{ChildSnapshot, RegistryEvent};

/// Most earlier logs one parent id keeps (`events.1.jsonl` …); past it a new runtime of that
/// parent does not start (nothing is deleted to make room).
pub const MAX_RETIRED_LOGS: u32 = 10_000;

/// Sets the log of an earlier runtime of the same parent id aside before a new one starts
/// (a pi session resumed after its coordinator exited: the parent id is the session's), so
/// the new runtime still begins a fresh log ([`EventLog::create`]) and the earlier one stays
/// as it was, renamed to the first free `events.<n>.jsonl` beside it (n from 1: a higher n is
/// a later runtime). The caller must be the only runtime of that parent (it holds the
/// parent's control socket). `Ok(None)` when there is no earlier log.
pub fn retire_previous(path: &Path) -> Result<Option<PathBuf>, StoreError> {
    let path = paths::resolve(path)?;
    match fs::symlink_metadata(&path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(StoreError::Inspect { path, source }),
        Ok(meta) if !meta.file_type().is_file() => {
            return Err(StoreError::RetireLog {
                to: path.clone(),
                path,
                source: io::Error::other("not a regular file; left alone"),
            });
        }
        Ok(_) => {}
    }
    let stem = path
        .file_stem()
        .map_or_else(|| "events".into(), |s| s.to_string_lossy().into_owned());
    for n in 1..=MAX_RETIRED_LOGS {
        let to = path.with_file_name(format!("{stem}.{n}.jsonl"));
        // A hard link never replaces an existing file: a taken name is skipped.
        match fs::hard_link(&path, &to) {
            Ok(()) => {
                fs::remove_file(&path).map_err(|source| StoreError::RetireLog {
                    path: path.clone(),
                    to: to.clone(),
                    source,
                })?;
                return Ok(Some(to));
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(source) => return Err(StoreError::RetireLog { path, to, source }),
        }
    }
    Err(StoreError::RetireLog {
        to: path.with_file_name(format!("{stem}.{MAX_RETIRED_LOGS}.jsonl")),
        path,
        source: io::Error::other(format!("{MAX_RETIRED_LOGS} earlier logs are kept already")),
    })
}

/// How often a running runtime renews its log's modification time (its sign of life).
pub const HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(5);

/// A log line that is not a registry event: the runtime's last words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase", deny_unknown_fields)]
enum Closing {
    /// The runtime shut down (every worker drained) at `at`, epoch milliseconds.
    Shutdown { at: Millis },
}

/// How the coordinator that wrote a log stopped, as every surface shows it (`status
/// --parent`, `--json`, `slate watch --lines`, the Hub). Always about a coordinator that no
/// longer answers: the states shown with it are its last known ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(
    tag = "state",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum CoordinatorEnd {
    /// It shut down and said so (the log's closing record) at `at` (epoch ms).
    ShutDown { at: Millis },
    /// It stopped without saying so (killed, crashed). `lastSignOfLife` (epoch ms) is the last
    /// moment it is known to have run: its log's last write or heartbeat, or when a live
    /// connection to it closed. Generations it showed as unfinished stopped with it.
    Died { last_sign_of_life: Millis },
}

impl CoordinatorEnd {
    /// The moment the last known states are frozen at (elapsed times count to here).
    pub fn at(self) -> Millis {
        match self {
            Self::ShutDown { at } => at,
            Self::Died { last_sign_of_life } => last_sign_of_life,
        }
    }

    /// One line for text output, e.g. `coordinator 9a7e… died: stopped answering by
    /// 2026-12-01 18:10:05 UTC (its last sign of life); last known states`.
    pub fn describe(self, parent_id: uuid::Uuid) -> String {
        match self {
            Self::ShutDown { at } => format!(
                "coordinator {parent_id} shut down at {}; final states",
                crate::store::session::iso_timestamp(at)
            ),
            Self::Died { last_sign_of_life } => format!(
                "coordinator {parent_id} died: it stopped answering by {} (its last sign of \
                 life); last known states, not live",
                crate::store::session::iso_timestamp(last_sign_of_life)
            ),
        }
    }
}

/// The writer side, owned by one runtime for its whole life.
#[derive(Debug)]
pub struct EventLog {
    path: PathBuf,
    file: File,
    /// A previous append failed part-way, so the file may end inside a line.
    torn: bool,
}

impl EventLog {
    /// Creates a new, empty log with mode 0600 (`O_APPEND|O_CREAT|O_EXCL`): a fresh runtime
    /// never continues an old log. Missing parent directories are created with 0700.
    pub fn create(path: &Path) -> Result<Self, StoreError> {
        let path = paths::resolve(path)?;
        if let Some(parent) = path.parent() {
            ensure_private_dir_chain(parent)?;
        }
        let file = create_private_file(&path, true).map_err(|source| {
            if source.kind() == io::ErrorKind::AlreadyExists {
                StoreError::Exists { path: path.clone() }
            } else {
                StoreError::CreateLog {
                    path: path.clone(),
                    source,
                }
            }
        })?;
        if let Err(e) = verify_file_mode(&file, &path) {
            // Empty and ours: removing it leaves the directory as it was.
            drop(file);
            let _ = fs::remove_file(&path);
            return Err(e);
        }
        Ok(Self {
            path,
            file,
            torn: false,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Renews the file's modification time (the runtime's sign of life; see [`HEARTBEAT`]).
    pub fn heartbeat(&self) -> Result<(), StoreError> {
        self.file
            .set_modified(std::time::SystemTime::now())
            .map_err(|source| StoreError::AppendLog {
                path: self.path.clone(),
                source,
            })
    }

    /// Writes the closing record: the runtime shut down at `at`. Nothing is appended after it.
    pub fn close(&mut self, at: Millis) -> Result<(), StoreError> {
        let mut line = Vec::with_capacity(48);
        if self.torn {
            line.push(b'\n');
        }
        crate::json::to_writer(&mut line, &Closing::Shutdown { at }).map_err(|source| {
            StoreError::EncodeEvent {
                path: self.path.clone(),
                source,
            }
        })?;
        line.push(b'\n');
        self.file
            .write_all(&line)
            .map_err(|source| StoreError::AppendLog {
                path: self.path.clone(),
                source,
            })
    }

    /// Writes the event as one JSON line with a single `write_all` on the unbuffered
    /// `O_APPEND` file, so each event reaches the kernel before this returns (no fsync).
    pub fn append(&mut self, event: &RegistryEvent) -> Result<(), StoreError> {
        let mut line = Vec::with_capacity(1024);
        if self.torn {
            // End the fragment a failed append may have left, so it stays one bad line
            // instead of corrupting this event too.
            line.push(b'\n');
        }
        crate::json::to_writer(&mut line, event).map_err(|source| StoreError::EncodeEvent {
            path: self.path.clone(),
            source,
        })?;
        line.push(b'\n');
        match self.file.write_all(&line).and_then(|()| self.file.flush()) {
            Ok(()) => {
                self.torn = false;
                Ok(())
            }
            Err(source) => {
                self.torn = true;
                Err(StoreError::AppendLog {
                    path: self.path.clone(),
                    source,
                })
            }
        }
    }
}

/// What a finished (or still running) runtime's log shows.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct History {
    /// The latest snapshot of each `UUID@generation`, in the order each was first seen.
    pub snapshots: Vec<ChildSnapshot>,
    /// Events read successfully.
    pub events: usize,
    /// Complete lines that were not a registry event (skipped).
    pub malformed: usize,
    /// 1-based number of the first such line.
    pub first_malformed_line: Option<usize>,
    /// A last line without its newline that is not valid JSON: the writer stopped mid-line
    /// or is still writing. Reported, not fatal.
    pub torn_tail: Option<TornTail>,
    /// The closing record's time: the runtime shut down (epoch ms).
    pub shut_down_at: Option<Millis>,
    /// The file's modification time when read (epoch ms): its writer's last sign of life.
    pub modified_at: Option<Millis>,
    index: HashMap<ChildRef, usize>,
}

/// The unfinished last line of a log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TornTail {
    /// 1-based line number.
    pub line: usize,
    pub bytes: usize,
}

impl History {
    /// How the log's coordinator stopped, for a coordinator that no longer answers: shut down
    /// when the log says so, else died at its last sign of life (the file's modification
    /// time; without one, the newest time a snapshot holds).
    pub fn end(&self) -> CoordinatorEnd {
        if let Some(at) = self.shut_down_at {
            return CoordinatorEnd::ShutDown { at };
        }
        let newest_snapshot = self
            .snapshots
            .iter()
            .map(|s| s.ended_at.unwrap_or(s.created_at))
            .max()
            .unwrap_or(0);
        CoordinatorEnd::Died {
            last_sign_of_life: self.modified_at.unwrap_or(newest_snapshot),
        }
    }

    /// The latest snapshot of exactly this generation.
    pub fn snapshot(&self, child: ChildRef) -> Option<&ChildSnapshot> {
        self.index.get(&child).map(|&i| &self.snapshots[i])
    }

    fn record(&mut self, event: RegistryEvent) {
        self.events += 1;
        let child = event.child.child_ref();
        if let Some(&i) = self.index.get(&child) {
            self.snapshots[i] = event.child;
        } else {
            self.index.insert(child, self.snapshots.len());
            self.snapshots.push(event.child);
        }
    }

    fn malformed_at(&mut self, line: usize) {
        self.malformed += 1;
        self.first_malformed_line.get_or_insert(line);
    }
}

/// Reads a log read-only, line by line. Only an unreadable file is an error: bad lines are
/// counted and a torn last line is reported in the result.
pub fn read_history(path: &Path) -> Result<History, StoreError> {
    let read_error = |source| StoreError::ReadLog {
        path: path.to_owned(),
        source,
    };
    let file = File::open(path).map_err(read_error)?;
    let mut history = History {
        modified_at: file
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .and_then(|d| Millis::try_from(d.as_millis()).ok()),
        ..History::default()
    };
    let mut reader = BufReader::new(file);
    let mut line = Vec::with_capacity(4096);
    let mut number = 0;
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line).map_err(read_error)? == 0 {
            break;
        }
        number += 1;
        let complete = line.last() == Some(&b'\n');
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<RegistryEvent>(&line) {
            Ok(event) => history.record(event),
            Err(_) if let Ok(Closing::Shutdown { at }) = serde_json::from_slice(&line) => {
                history.shut_down_at = Some(at);
            }
            Err(_) if !complete => {
                history.torn_tail = Some(TornTail {
                    line: number,
                    bytes: line.len(),
                });
            }
            Err(_) => history.malformed_at(number),
        }
    }
    Ok(history)
}
