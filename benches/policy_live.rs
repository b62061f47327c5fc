//! What reading the policy at every invocation costs: `LivePolicy::current` when nothing
//! changed (one `stat` per watched file), against a full resolution (what a changed file
//! costs, and what every check costs while the policy is invalid), for an operator file alone
//! and for an operator file plus a trusted project's file. Figures: `docs/performance.md`.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use slate::config::live::{LivePolicy, RACY_WINDOW};
use slate::config::load_in;

struct Dirs {
    _base: tempfile::TempDir,
    cwd: PathBuf,
    agent: PathBuf,
}

fn dirs(project: bool) -> Dirs {
    let base = tempfile::tempdir().expect("temp dir");
    let cwd = base.path().join("work");
    let agent = base.path().join("agent");
    std::fs::create_dir_all(cwd.join(".pi")).expect("dirs");
    std::fs::create_dir_all(&agent).expect("dirs");
    std::fs::write(
        agent.join("delegation.json"),
        r#"{"scheduling": {"concurrency": 4, "requests": 50},
            "general": {"tools": ["read", "grep", "find", "ls"], "spawn": ["scout"]}}"#,
    )
    .expect("operator file");
    let cwd = std::fs::canonicalize(cwd).expect("canonical");
    if project {
        std::fs::write(
            cwd.join(".pi/delegation.json"),
            r#"{"scheduling": {"concurrency": 2}, "general": {"spawn": []}}"#,
        )
        .expect("project file");
        std::fs::write(
            agent.join("trust.json"),
            serde_json::json!({ cwd.display().to_string(): true }).to_string(),
        )
        .expect("trust file");
    }
    Dirs {
        _base: base,
        cwd,
        agent,
    }
}

fn case(c: &mut Criterion, name: &str, project: bool) {
    let d = dirs(project);
    // Stamps younger than the racy window are checked by content; age them first.
    std::thread::sleep(RACY_WINDOW + Duration::from_millis(100));
    let live = LivePolicy::watch_in(&d.cwd, &d.agent, None).expect("valid policy");
    let _ = live.current().expect("valid policy");
    c.bench_function(&format!("policy_current_unchanged_{name}"), |b| {
        b.iter(|| black_box(live.current().expect("valid")));
    });
    c.bench_function(&format!("policy_full_resolution_{name}"), |b| {
        b.iter(|| black_box(load_in(Path::new(&d.cwd), &d.agent, None).expect("valid")));
    });
}

fn benches(c: &mut Criterion) {
    case(c, "operator", false);
    case(c, "operator_and_project", true);
}

criterion_group! {
    name = policy_live;
    config = Criterion::default().sample_size(50).measurement_time(Duration::from_secs(3));
    targets = benches
}
criterion_main!(policy_live);
