//! The guard's round trip (issue 12, part 6: ≤ 1 ms median): one `guard {kind: "request"}`
//! on a worker generation's own connection, answered by the real control server, service and
//! coordinator (simulated worker, so no pi), as Slate's pi extension asks before every model
//! request. Measured from the client: write the request line, read the answer.
//!
//! Each allowed request counts against the generation's `requests` limit (at most 1000), so the
//! benchmark moves to a fresh generation every [`PER_GENERATION`] guards; admitting it is not
//! timed. A final pass prints the median and p99 of single round trips. Figures:
//! `docs/performance.md`.

#![allow(clippy::unwrap_used, reason = "benchmark fixtures fail loudly")]

#[path = "../tests/support/recording.rs"]
mod recording;
#[path = "../tests/support/service_fixture.rs"]
mod service_fixture;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use recording::{Capabilities, Recording};
use slate::control::methods::{GuardParams, method};
use slate::control::service::Service;
use slate::control::{Client, Handler, Metadata, Server, ServerConfig};
use slate::core::{ChildRef, Party, Reply, Role, TaskSpec};
use slate::policy::capabilities::pi_offered_tools;
use slate::policy::scheduling::SchedulingPolicy;
use slate::runtime::{RuntimeConfig, RuntimeHandle, spawn};
use slate::sim::{Script, Step};
use slate::worker::sim::ScriptBook;

/// Guards per generation, under the 1000-request ceiling.
const PER_GENERATION: u32 = 900;
/// Single round trips timed in the final pass.
const SAMPLES: usize = 5_000;

struct Fixture {
    _base: tempfile::TempDir,
    work: PathBuf,
    socket: PathBuf,
    rt: RuntimeHandle,
    capabilities: Capabilities,
}

impl Fixture {
    /// Must run inside the tokio runtime (it spawns the server).
    fn start() -> Self {
        let base = tempfile::Builder::new()
            .prefix("slate-guard-rtt-")
            .tempdir()
            .unwrap();
        for dir in ["work", "agent"] {
            std::fs::create_dir_all(base.path().join(dir)).unwrap();
        }
        let work = std::fs::canonicalize(base.path().join("work")).unwrap();
        let root_id = uuid::Uuid::new_v4();
        let config = RuntimeConfig {
            root_id,
            // The operator ceiling: the most guards one generation may be allowed.
            policy: SchedulingPolicy {
                requests: 1000,
                ..SchedulingPolicy::default()
            },
            id_seed: 5,
            delegation_dir: base.path().join("delegation"),
            event_log: false,
            kill_grace: Duration::from_millis(300),
        };
        // Every worker thinks for an hour: it stays running while it is asked about.
        let book = ScriptBook {
            scripts: Vec::new(),
            default: Script {
                setup_error: None,
                steps: vec![Step::Think(3_600_000)],
            },
            resumed: None,
        };
        let (backend, capabilities) = Recording::new(book);
        let (rt, _join) = spawn(config, Arc::new(backend)).unwrap();
        let loaded = service_fixture::loaded(&work, &base.path().join("agent"));
        let service: Arc<dyn Handler> = Arc::new(Service::new(
            rt.clone(),
            loaded,
            service_fixture::models(),
            pi_offered_tools(),
        ));
        let socket = base.path().join("run").join("c.sock");
        let metadata = Metadata {
            pid: std::process::id(),
            cwd: work.clone(),
            parent_id: root_id,
            started_at: slate::runtime::now_ms(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            socket: PathBuf::new(),
            events: None,
        };
        let server = Server::bind(&socket, metadata, ServerConfig::default()).unwrap();
        rt.actors().set_socket(&socket);
        tokio::spawn(server.run(service, std::future::pending()));
        Self {
            _base: base,
            work,
            socket,
            rt,
            capabilities,
        }
    }

    /// A fresh running generation and its own connection (as its extension connects).
    async fn generation(&self) -> (ChildRef, Client) {
        let task = TaskSpec::new("think", Role::Scout, self.work.display().to_string());
        let reply = self
            .rt
            .call(move |request| slate::core::Input::Admit {
                request,
                actor: Party::Root,
                tasks: vec![task],
                background: true,
            })
            .await
            .unwrap()
            .unwrap();
        let Reply::Admitted { children, .. } = reply else {
            panic!("not admitted: {reply:?}");
        };
        let child = children[0].child_ref();
        let deadline = Instant::now() + Duration::from_secs(10);
        let capability = loop {
            if let Some(c) = self.capabilities.lock().unwrap().get(&child).cloned() {
                break c;
            }
            assert!(Instant::now() < deadline, "{child} never started");
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        let client = Client::connect_as(&self.socket, Duration::from_secs(10), Some(&capability))
            .await
            .unwrap();
        (child, client)
    }

    /// Stop a spent generation, freeing its permit.
    async fn stop(&self, target: ChildRef) {
        self.rt
            .call(move |request| slate::core::Input::Stop {
                request,
                actor: Party::Root,
                target,
            })
            .await
            .unwrap()
            .unwrap();
    }
}

/// A connection and how many guards it has left.
struct Asker<'a> {
    fixture: &'a Fixture,
    current: Option<(ChildRef, Client)>,
    left: u32,
}

impl Asker<'_> {
    /// One timed round trip (a fresh generation first when this one's budget is spent).
    async fn ask(&mut self) -> Duration {
        if self.left == 0 || self.current.is_none() {
            if let Some((spent, _)) = self.current.take() {
                self.fixture.stop(spent).await;
            }
            self.current = Some(self.fixture.generation().await);
            self.left = PER_GENERATION;
        }
        self.left -= 1;
        let (_, client) = self.current.as_ref().unwrap();
        let started = Instant::now();
        let answer = client
            .request::<method::Guard>(&GuardParams::Request {})
            .await
            .unwrap();
        let took = started.elapsed();
        assert!(answer.allow, "{answer:?}");
        took
    }
}

fn guard_rtt(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let fixture = runtime.block_on(async { Fixture::start() });
    let mut asker = Asker {
        fixture: &fixture,
        current: None,
        left: 0,
    };
    c.bench_function("guard/request_round_trip", |b| {
        b.iter_custom(|iters| {
            runtime.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    total += asker.ask().await;
                }
                total
            })
        });
    });
    let mut samples: Vec<Duration> =
        runtime.block_on(async { single_round_trips(&mut asker, SAMPLES).await });
    samples.sort_unstable();
    let median = samples[samples.len() / 2];
    let p99 = samples[samples.len() * 99 / 100];
    println!(
        "guard round trip over {SAMPLES} single calls: median {:.3} ms, p99 {:.3} ms",
        median.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3
    );
}

async fn single_round_trips(asker: &mut Asker<'_>, n: usize) -> Vec<Duration> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(asker.ask().await);
    }
    out
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(5));
    targets = guard_rtt
}
criterion_main!(benches);
