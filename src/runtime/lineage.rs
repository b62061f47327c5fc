//! Where a peer process sits among a coordinator's processes: the fact behind who a control
//! connection speaks for (`control::caller`, `docs/protocol.md`, "Actors").
//!
//! The kernel keeps every process's parent, and a process cannot choose it: following
//! `/proc/<pid>/stat` parent links from the socket's peer up to init tells whether the peer
//! descends from one of this coordinator's live workers. That alone was not enough (issue 22,
//! item 1): a tool that `kill -9`ed its worker's containment process was reparented out of
//! the worker's tree, found no worker above it, and was taken for the operator. So:
//!
//! * a coordinator that runs its workers under containment processes makes itself their
//!   **child subreaper** (`worker::reaper`): whatever leaves a worker's tree — however it
//!   forks, double-forks, `setsid`s or kills its containment — is reparented to the
//!   coordinator, never to init. A strict descendant of such a coordinator that is not under
//!   a live worker is a leftover of a worker, and **speaks for nobody**;
//! * containment processes and such coordinators carry a **name** (`comm`, set by themselves
//!   with `PR_SET_NAME` / `/proc/self/comm`): [`CONTAINMENT_NAME`], [`COORDINATOR_NAME`]. A
//!   peer below either that is not this coordinator's live worker belongs to another Slate
//!   fleet (a worker of another coordinator of the same user, or its leftovers) and speaks
//!   for nobody here. Only a process itself (or its own threads) can set its `comm`, so a
//!   worker cannot strip the name off its ancestors; a process that takes the name itself
//!   only makes its own descendants speak for nobody;
//! * an ancestry that cannot be read (the peer exited after connecting and handed the socket
//!   on, or an ancestor vanished mid-walk) speaks for nobody. It was taken for the
//!   operator's before.
//!
//! The walk reads one small `/proc` file per ancestor (see `docs/performance.md`).

use crate::core::ChildRef;

/// The `comm` of a worker's containment process (`worker::contain`).
pub const CONTAINMENT_NAME: &str = "slate-contain";
/// The `comm` of a coordinator that is its workers' subreaper (`worker::reaper`).
pub const COORDINATOR_NAME: &str = "slate-coord";

/// How many parent links are followed at most (a loop in a racing `/proc` read ends too).
const MAX_ANCESTRY: usize = 1024;

/// Where a peer process stands, as far as authority goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lineage {
    /// It is, or descends from, the live worker process `pid` of generation `child`.
    Worker { child: ChildRef, pid: u32 },
    /// It speaks for nobody.
    Nobody(Nobody),
    /// Outside every worker: the operator's side (the user's shell, or this coordinator's own
    /// process).
    Outside,
}

/// Why a peer speaks for nobody.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Nobody {
    /// It descends from this coordinator, its workers' subreaper, but from none of its live
    /// workers: a leftover of a worker (its containment ended, or it outlived its worker).
    Orphan { peer: u32, coordinator: u32 },
    /// It descends from `ancestor`, a containment process or a coordinator (`name`) that is
    /// not a live worker of this one: another Slate fleet's process or leftover.
    OtherFleet {
        peer: u32,
        ancestor: u32,
        name: &'static str,
    },
    /// The `/proc` entry of `pid` (the peer or an ancestor) could not be read: it ended
    /// before it could be placed.
    Unreadable { peer: u32, pid: u32 },
}

impl Nobody {
    /// For the refusal: what was found.
    pub fn describe(&self) -> String {
        match self {
            Self::Orphan { peer, coordinator } => format!(
                "the peer process {peer} descends from this coordinator (pid {coordinator}) but from none of its live workers: a process a worker left behind (its containment process ended) speaks for nobody"
            ),
            Self::OtherFleet {
                peer,
                ancestor,
                name,
            } => format!(
                "the peer process {peer} descends from process {ancestor} ({name}), a worker or coordinator of another Slate fleet, and speaks for nobody here"
            ),
            Self::Unreadable { peer, pid } if peer == pid => format!(
                "the peer process {peer} ended before it could be identified (a connection handed on by a process that exited) and speaks for nobody"
            ),
            Self::Unreadable { peer, pid } => format!(
                "the ancestry of the peer process {peer} could not be read at process {pid}, so it speaks for nobody"
            ),
        }
    }
}

/// The fields of `/proc/<pid>/stat` Slate reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcStat {
    pub comm: String,
    /// `R`, `S`, `Z`, …
    pub state: char,
    pub ppid: u32,
    pub pgrp: u32,
}

/// `/proc/<pid>/stat`, parsed; `None` when it cannot be read (no such process).
pub fn proc_stat(pid: u32) -> Option<ProcStat> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&stat)
}

/// The parent of `pid`.
pub fn parent_pid(pid: u32) -> Option<u32> {
    proc_stat(pid).map(|s| s.ppid)
}

/// `pid (comm) state ppid pgrp …`: `comm` may hold spaces and parentheses, so it runs to
/// the last `)`.
fn parse_stat(stat: &str) -> Option<ProcStat> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = stat.get(open + 1..close)?.to_owned();
    let mut fields = stat.get(close + 1..)?.split_ascii_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some(ProcStat {
        comm,
        state,
        ppid,
        pgrp,
    })
}

/// Where the coordinator process `own` sees the peer `peer` (the rules in the module
/// comment). `worker` names the live worker generation whose process is `pid`, if any;
/// `adopts` says whether `own` is its workers' subreaper; `stat` reads a process.
pub fn place(
    peer: u32,
    own: u32,
    adopts: bool,
    worker: impl Fn(u32) -> Option<ChildRef>,
    stat: impl Fn(u32) -> Option<ProcStat>,
) -> Lineage {
    let mut current = peer;
    for _ in 0..MAX_ANCESTRY {
        if let Some(child) = worker(current) {
            return Lineage::Worker {
                child,
                pid: current,
            };
        }
        if current == own {
            // The coordinator's own process (its Hub, its MCP session) is the operator's; a
            // process below it that no live worker holds can only be a worker's leftover
            // when the coordinator adopts them, and is an embedder's own child otherwise.
            return if current != peer && adopts {
                Lineage::Nobody(Nobody::Orphan {
                    peer,
                    coordinator: own,
                })
            } else {
                Lineage::Outside
            };
        }
        let Some(stat) = stat(current) else {
            return Lineage::Nobody(Nobody::Unreadable { peer, pid: current });
        };
        for name in [CONTAINMENT_NAME, COORDINATOR_NAME] {
            if stat.comm == name {
                return Lineage::Nobody(Nobody::OtherFleet {
                    peer,
                    ancestor: current,
                    name,
                });
            }
        }
        // Init, or a process whose parent is outside this pid namespace: the top.
        if stat.ppid == 0 {
            return Lineage::Outside;
        }
        current = stat.ppid;
    }
    Lineage::Nobody(Nobody::Unreadable { peer, pid: current })
}

/// Every process id in `/proc`.
pub fn proc_pids() -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
        .collect()
}

/// Every process below `root` (zombies included), from the parent links in `/proc`.
pub fn descendants(root: u32) -> Vec<u32> {
    let mut children: std::collections::HashMap<u32, Vec<u32>> = std::collections::HashMap::new();
    for pid in proc_pids() {
        if let Some(parent) = parent_pid(pid) {
            children.entry(parent).or_default().push(pid);
        }
    }
    let mut out = Vec::new();
    let mut todo = vec![root];
    while let Some(pid) = todo.pop() {
        for &child in children.get(&pid).into_iter().flatten() {
            out.push(child);
            todo.push(child);
        }
    }
    out.retain(|&p| p > 0);
    out
}

/// Whether this process is a child subreaper (`PR_GET_CHILD_SUBREAPER`); `false` where that
/// does not exist.
pub fn this_process_adopts() -> bool {
    #[cfg(target_os = "linux")]
    {
        nix::sys::prctl::get_child_subreaper().unwrap_or(false)
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn child(n: u128) -> ChildRef {
        ChildRef::new(uuid::Uuid::from_u128(n), 1)
    }

    /// A process table: pid → (comm, ppid).
    fn table(rows: &[(u32, &str, u32)]) -> impl Fn(u32) -> Option<ProcStat> {
        let rows: HashMap<u32, ProcStat> = rows
            .iter()
            .map(|&(pid, comm, ppid)| {
                let stat = ProcStat {
                    comm: comm.to_owned(),
                    state: 'S',
                    ppid,
                    pgrp: pid,
                };
                (pid, stat)
            })
            .collect();
        move |pid| rows.get(&pid).cloned()
    }

    #[test]
    fn stat_fields_are_read_after_the_last_parenthesis() {
        let s = parse_stat("42 (a) b) c) S 7 40 40 0").unwrap();
        assert_eq!(
            (s.comm.as_str(), s.state, s.ppid, s.pgrp),
            ("a) b) c", 'S', 7, 40)
        );
        assert_eq!(parse_stat("42 (sh) Z 1 1 1").unwrap().state, 'Z');
        assert_eq!(parse_stat("garbage"), None);
    }

    /// init(1) ← shell(10) ← coordinator(20) ← containment(30) ← pi(31) ← bash(32);
    /// another fleet: coordinator(60) ← containment(61) ← pi(62); the user's cli(11).
    const TREE: &[(u32, &str, u32)] = &[
        (1, "init", 0),
        (10, "bash", 1),
        (11, "slate", 10),
        (20, COORDINATOR_NAME, 10),
        (30, CONTAINMENT_NAME, 20),
        (31, "node", 30),
        (32, "bash", 31),
        (40, "bash", 20),
        (60, COORDINATOR_NAME, 1),
        (61, CONTAINMENT_NAME, 60),
        (62, "node", 61),
        (70, "sleep", 60),
    ];

    #[test]
    fn a_workers_processes_are_that_worker_and_the_users_are_the_operators() {
        let workers = |pid| (pid == 30).then(|| child(1));
        let at = |peer| place(peer, 20, true, workers, table(TREE));
        let worker = Lineage::Worker {
            child: child(1),
            pid: 30,
        };
        assert_eq!(at(32), worker);
        assert_eq!(at(30), worker);
        assert_eq!(at(11), Lineage::Outside, "the user's CLI");
        assert_eq!(at(20), Lineage::Outside, "the coordinator's own clients");
    }

    #[test]
    fn a_leftover_below_a_subreaper_coordinator_speaks_for_nobody() {
        // bash(40): a worker's tool reparented to the coordinator after its containment died.
        let nobody = Lineage::Nobody(Nobody::Orphan {
            peer: 40,
            coordinator: 20,
        });
        assert_eq!(place(40, 20, true, |_| None, table(TREE)), nobody);
        // Not a subreaper (a program embedding the runtime): its children are its own.
        assert_eq!(
            place(40, 20, false, |_| None, table(TREE)),
            Lineage::Outside
        );
        // The containment that is no live worker any more (ended, or not yet reported).
        let at = place(32, 20, true, |_| None, table(TREE));
        assert!(
            matches!(
                at,
                Lineage::Nobody(Nobody::OtherFleet {
                    ancestor: 30,
                    name: CONTAINMENT_NAME,
                    ..
                })
            ),
            "{at:?}"
        );
    }

    #[test]
    fn another_fleets_workers_and_leftovers_speak_for_nobody_here() {
        for (peer, ancestor, name) in [(62, 61, CONTAINMENT_NAME), (70, 60, COORDINATOR_NAME)] {
            assert_eq!(
                place(peer, 20, true, |_| None, table(TREE)),
                Lineage::Nobody(Nobody::OtherFleet {
                    peer,
                    ancestor,
                    name
                }),
            );
        }
    }

    #[test]
    fn an_ancestry_that_cannot_be_read_speaks_for_nobody() {
        assert_eq!(
            place(99, 20, true, |_| None, table(TREE)),
            Lineage::Nobody(Nobody::Unreadable { peer: 99, pid: 99 })
        );
        // A chain through a vanished parent.
        let broken = table(&[(5, "bash", 4)]);
        assert_eq!(
            place(5, 20, true, |_| None, broken),
            Lineage::Nobody(Nobody::Unreadable { peer: 5, pid: 4 })
        );
        // A loop ends.
        let looped = table(&[(5, "a", 6), (6, "b", 5)]);
        assert!(matches!(
            place(5, 20, true, |_| None, looped),
            Lineage::Nobody(Nobody::Unreadable { .. })
        ));
    }

    #[test]
    fn this_process_is_placed_from_the_real_proc() {
        let me = std::process::id();
        // Seen by a coordinator that is some other process: this test runs outside it.
        assert_eq!(
            place(me, u32::MAX, true, |_| None, proc_stat),
            Lineage::Outside
        );
        assert!(proc_stat(me).is_some_and(|s| s.state != 'Z'));
    }
}
