//! End-to-end benchmark of `subagent-status` (process start, discovery, connect, `hello`,
//! `status`, render, exit) against a live `slate serve --backend sim` holding 1,000 retained
//! identities, with `/bin/true` spawned the same way as the baseline (issue 5, proof 3;
//! issue 11: the table within 3× `/bin/true`, `--json` within 5×).
//!
//! Setup starts a coordinator in a private temporary directory (own `XDG_RUNTIME_DIR` and
//! `PI_CODING_AGENT_DIR`), admits 1,000 background tasks in batches of 64 while keeping the
//! queue within 256, and waits until every one is disposed. Each benchmark then spawns its
//! process per iteration with stdout to a pipe that is read to the end. A final interleaved
//! pass times single invocations and prints their medians and the ratio to `/bin/true`.
//! Figures: `docs/performance.md`.

use std::hint::black_box;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use slate::control::methods::StatusParams;
use slate::control::{Client, Request};

const SLATE: &str = env!("CARGO_BIN_EXE_slate");
/// The `subagent-status` cargo built; `SLATE_BENCH_STATUS=PATH` measures another build of it
/// instead (e.g. the static one of `docs/performance.md`).
const STATUS_BUILT: &str = env!("CARGO_BIN_EXE_subagent-status");
const IDENTITIES: usize = 1_000;
const BATCH: usize = 64;
const QUEUE: usize = 256;
/// Interleaved rounds of the final single-invocation pass.
const ROUNDS: usize = 200;

struct Coordinator {
    base: tempfile::TempDir,
    work: PathBuf,
    socket: PathBuf,
    server: Option<Child>,
}

impl Coordinator {
    fn start() -> Self {
        let base = tempfile::Builder::new()
            .prefix("slate-status-e2e-")
            .tempdir()
            .expect("temporary directory");
        for d in ["work", "agent", "run"] {
            std::fs::create_dir_all(base.path().join(d)).expect("fixture directory");
        }
        std::fs::write(
            base.path().join("agent/delegation.json"),
            json!({"scheduling": {"concurrency": 16, "queue": QUEUE, "batch": BATCH}}).to_string(),
        )
        .expect("delegation.json");
        let work = base.path().join("work");
        let mut cmd = Command::new(SLATE);
        cmd.args(["serve", "--backend", "sim", "--model", "fake/m"])
            .current_dir(&work)
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        env(base.path(), &mut cmd);
        let mut server = cmd.spawn().expect("slate serve");
        let mut lines = BufReader::new(server.stdout.take().expect("server stdout")).lines();
        let mut line = || lines.next().expect("server line").expect("server line");
        let first = line();
        let second = line();
        assert!(first.starts_with("slate serve: parent "), "{first}");
        let socket = PathBuf::from(second.trim_start_matches("socket "));
        // Keep draining whatever else the server prints so it never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        Self {
            base,
            work,
            socket,
            server: Some(server),
        }
    }

    fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        cmd.current_dir(&self.work).stderr(Stdio::null());
        env(self.base.path(), &mut cmd);
        cmd
    }

    fn fleet(&self) -> Vec<Value> {
        let out = self
            .command(SLATE)
            .args(["--json", "status"])
            .output()
            .expect("slate status");
        assert!(out.status.success(), "slate status failed");
        let v: Value = serde_json::from_slice(&out.stdout).expect("status JSON");
        v["children"].as_array().cloned().unwrap_or_default()
    }

    /// Admit `IDENTITIES` background tasks, then wait until all are disposed.
    fn fill(&self) {
        let started = Instant::now();
        let file = self.base.path().join("batch.json");
        let mut admitted = 0;
        while admitted < IDENTITIES {
            let n = BATCH.min(IDENTITIES - admitted);
            loop {
                let queued = self
                    .fleet()
                    .iter()
                    .filter(|c| c["status"].as_str() == Some("queued"))
                    .count();
                if queued + n <= QUEUE {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            let tasks: Vec<Value> = (admitted..admitted + n)
                .map(|i| json!({"assignment": format!("Inventory module {i} of the tree"), "profile": "scout"}))
                .collect();
            std::fs::write(
                &file,
                json!({"tasks": tasks, "background": true}).to_string(),
            )
            .expect("batch file");
            let out = self
                .command(SLATE)
                .args(["--json", "delegate", "--background", "--file"])
                .arg(&file)
                .output()
                .expect("slate delegate");
            assert!(
                out.status.success(),
                "delegate refused: {}",
                String::from_utf8_lossy(&out.stdout)
            );
            admitted += n;
        }
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let children = self.fleet();
            if children.len() == IDENTITIES
                && children
                    .iter()
                    .all(|c| c["disposed"].as_bool() == Some(true))
            {
                break;
            }
            assert!(Instant::now() < deadline, "the fleet did not drain");
            std::thread::sleep(Duration::from_millis(250));
        }
        eprintln!(
            "status_e2e: {IDENTITIES} identities admitted and disposed in {:.1} s",
            started.elapsed().as_secs_f64()
        );
    }
}

impl Drop for Coordinator {
    fn drop(&mut self) {
        let Some(mut server) = self.server.take() else {
            return;
        };
        let stopped = i32::try_from(server.id()).is_ok_and(|pid| {
            nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGTERM,
            )
            .is_ok()
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        while stopped && Instant::now() < deadline {
            if let Ok(Some(_)) = server.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = server.kill();
        let _ = server.wait();
    }
}

fn env(base: &Path, cmd: &mut Command) {
    cmd.env("PI_CODING_AGENT_DIR", base.join("agent"))
        .env("XDG_RUNTIME_DIR", base.join("run"))
        .env_remove("SLATE_SOCKET");
}

/// Spawn, read stdout to the end, wait.
fn run(cmd: &mut Command) -> Output {
    let out = cmd.stdout(Stdio::piped()).output().expect("spawn");
    assert!(out.status.success(), "{cmd:?} failed");
    out
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort_unstable();
    xs[xs.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn status_binary() -> String {
    std::env::var("SLATE_BENCH_STATUS").unwrap_or_else(|_| STATUS_BUILT.to_owned())
}

fn bench(c: &mut Criterion) {
    let coordinator = Coordinator::start();
    coordinator.fill();
    let status = status_binary();
    let status = status.as_str();
    eprintln!("status_e2e: measuring {status}");

    // Check once what is measured: the full table and the full JSON.
    let table = run(&mut coordinator.command(status));
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.starts_with("parent ")
            && text.contains(&format!("· {IDENTITIES} current generations")),
        "unexpected table: {}",
        text.lines().next().unwrap_or_default()
    );
    assert_eq!(text.lines().count(), IDENTITIES + 1);
    let json_out = run(coordinator.command(status).arg("--json"));
    let v: Value = serde_json::from_slice(&json_out.stdout).expect("status JSON");
    assert_eq!(v["children"].as_array().map(Vec::len), Some(IDENTITIES));
    eprintln!(
        "status_e2e: table {} bytes, JSON {} bytes",
        table.stdout.len(),
        json_out.stdout.len()
    );

    let mut group = c.benchmark_group("status_e2e");
    group
        .sample_size(50)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    group.bench_function("subagent_status", |b| {
        b.iter(|| black_box(run(&mut coordinator.command(status))));
    });
    group.bench_function("subagent_status_json", |b| {
        b.iter(|| black_box(run(coordinator.command(status).arg("--json"))));
    });
    group.bench_function("subagent_status_version", |b| {
        b.iter(|| black_box(run(coordinator.command(status).arg("--version"))));
    });
    group.bench_function("bin_true", |b| {
        b.iter(|| black_box(run(&mut coordinator.command("/bin/true"))));
    });

    // In process, on a runtime built once: connect + hello, and one `status` call on an open
    // connection (request, server snapshot, response, parse into a `Value`).
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let socket = coordinator.socket.clone();
    let connect = || async {
        Client::connect_path(&socket, Duration::from_secs(5))
            .await
            .expect("connect")
    };
    group.bench_function("in_process/connect_hello", |b| {
        b.iter(|| rt.block_on(async { black_box(connect().await) }));
    });
    let client = rt.block_on(connect());
    group.bench_function("in_process/status_call", |b| {
        b.iter(|| {
            rt.block_on(async {
                black_box(client.call("status", json!({})).await.expect("status"))
            })
        });
    });
    // The answers subagent-status reads, kept by the server while nothing changes: the
    // request, the comparison of 1,000 rows in the actor, the text written to the socket.
    // Its text is read, not parsed.
    for (name, params) in [
        (
            "in_process/summary_call",
            StatusParams {
                summary: true,
                ..StatusParams::default()
            },
        ),
        (
            "in_process/table_call",
            StatusParams {
                table: true,
                ..StatusParams::default()
            },
        ),
    ] {
        let request = Request::Status(params);
        group.bench_function(name, |b| {
            b.iter(|| {
                rt.block_on(async { black_box(client.send(&request).await.expect("status")) })
            });
        });
    }
    group.bench_function("in_process/runtime_build", |b| {
        b.iter(|| {
            black_box(
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("runtime"),
            )
        });
    });
    group.finish();

    single_invocations(&coordinator, status);
    drop(client);
    drop(rt);
    drop(coordinator);
}

/// Single invocations, interleaved so drift hits every series alike: medians and ratios.
fn single_invocations(coordinator: &Coordinator, status: &str) {
    let mut series: [Vec<Duration>; 4] = Default::default();
    for _ in 0..ROUNDS {
        for (i, slot) in series.iter_mut().enumerate() {
            let mut cmd = match i {
                0 => coordinator.command(status),
                1 => {
                    let mut cmd = coordinator.command(status);
                    cmd.arg("--json");
                    cmd
                }
                2 => {
                    let mut cmd = coordinator.command(status);
                    cmd.arg("--version");
                    cmd
                }
                _ => coordinator.command("/bin/true"),
            };
            let t = Instant::now();
            black_box(run(&mut cmd));
            slot.push(t.elapsed());
        }
    }
    let [human, json_runs, version, truth] = series.map(median);
    let table_ratio = human.as_secs_f64() / truth.as_secs_f64();
    let json_ratio = json_runs.as_secs_f64() / truth.as_secs_f64();
    let verdict = |ratio: f64, target: f64| if ratio <= target { "met" } else { "missed" };
    eprintln!(
        "status_e2e: medians of {ROUNDS} single invocations: subagent-status {:.2} ms, \
         --json {:.2} ms, --version {:.2} ms, /bin/true {:.2} ms; ratio to /bin/true: table \
         {table_ratio:.2} (target 3: {}), --json {json_ratio:.2} (target 5: {})",
        ms(human),
        ms(json_runs),
        ms(version),
        ms(truth),
        verdict(table_ratio, 3.0),
        verdict(json_ratio, 5.0),
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
