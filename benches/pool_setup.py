#!/usr/bin/env python3
"""Setup time of a pi worker, cold against pre-started (issue 23; docs/performance.md, "Pre-started
workers"): from `slate delegate --background` to the worker's first model request at the fake
LLM, with the coordinator (`slate serve`) keeping no pre-started process (`pool.size` 0) and one
(`pool.size` 1). Also the same measure for bare `pi -p` (process start to its first request).

Needs python3, a release build (`cargo build --release --bin slate`) and pi 1.6
(`. ~/.cache/slate-pi/env`). Runs are interleaved per round (cold, pooled, bare), after warm-ups.

    benches/pool_setup.py            # 15 rounds
    RUNS=30 benches/pool_setup.py
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pi_sandbox

HERE = Path(__file__).resolve().parent.parent
SLATE = os.environ.get("SLATE_BIN", str(HERE / "target/release/slate"))
PI = os.environ["SLATE_PI"]
RUNS = int(os.environ.get("RUNS", "15"))
PORT = int(os.environ.get("PORT", "18093"))


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="slate-pool-setup."))
    log = work / "requests.jsonl"
    fake = subprocess.Popen(
        [sys.executable, str(HERE / "../shared/pi/fake_llm.py"), "--port", str(PORT), "--log", str(log)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    coordinators = []
    try:
        time.sleep(0.5)
        sides = {}
        for name, size in [("cold", 0), ("pooled", 1)]:
            base = work / name
            side_env = pi_sandbox.make(base, f"http://127.0.0.1:{PORT}/v1")
            agent = base / "agent"
            (agent / "delegation.json").write_text(json.dumps({"pool": {"size": size}}))
            serve = subprocess.Popen(
                [SLATE, "serve"],
                cwd=base / "project",
                env=side_env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            coordinators.append(serve)
            parent = serve.stdout.readline().split()[-1]
            sides[name] = (base, side_env, parent)
        bare_env = sides["cold"][1]
        results: dict[str, list[float]] = {"cold": [], "pooled": [], "bare pi -p": []}
        for i in range(RUNS + 2):
            for name, (base, side_env, parent) in sides.items():
                time.sleep(1.5)  # the pool refills; the machine settles
                marker = f"{name}-{i}-{time.time_ns()}"
                start = time.time()
                subprocess.run(
                    [SLATE, "--json", "delegate", "--background", "--parent", parent, f"SCENARIO:TEXT {marker}"],
                    cwd=base / "project",
                    env=side_env,
                    check=True,
                    stdout=subprocess.DEVNULL,
                )
                at = first_request(log, marker)
                if i >= 2:
                    results[name].append(at - start)
            marker = f"bare-{i}-{time.time_ns()}"
            start = time.time()
            bare = subprocess.Popen(
                [PI, "-p", "--no-session", "-ne", "--no-mcp", f"SCENARIO:TEXT {marker}"],
                cwd=sides["cold"][0] / "project",
                env=bare_env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            at = first_request(log, marker)
            bare.wait()
            if i >= 2:
                results["bare pi -p"].append(at - start)
        bare_median = statistics.median(results["bare pi -p"])
        for name, times in results.items():
            median = statistics.median(times)
            print(
                f"{name:12} median {median * 1000:7.1f} ms  min {min(times) * 1000:7.1f}  "
                f"max {max(times) * 1000:7.1f}  ({median / bare_median:.2f}x bare pi)"
            )
    finally:
        for serve in coordinators:
            serve.terminate()
            serve.wait(timeout=30)
        fake.terminate()
        shutil.rmtree(work, ignore_errors=True)


def first_request(log: Path, marker: str, timeout: float = 30.0) -> float:
    """The time the fake LLM logged the first request carrying `marker`."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if log.exists():
            for line in log.read_text().splitlines():
                if marker in line:
                    try:
                        return float(json.loads(line)["t"])
                    except ValueError:
                        break  # a line still being written: read again
        time.sleep(0.002)
    raise SystemExit(f"no request for {marker} within {timeout} s")


if __name__ == "__main__":
    main()
