#!/usr/bin/env python3
"""Whole-process fan-out (issue 23 item 5; docs/performance.md, "Fan-out"): a real pi parent with
Slate installed calls `delegate_task` for N children (each a real pi worker answering the fake
LLM), against the same parent running N bare `pi -p` through its `bash` tool. The figure is the
parent's tool call from `tool_execution_start` to `tool_execution_end` (pi's JSON mode, stamped as
the lines arrive). Slate runs cold (`pool.size` 0) and pre-started (`pool.size` N); the parent
first sleeps 3 s in `bash` so the pool is full when it delegates.

Needs python3, a release build (`cargo build --release --bin slate`), the fake LLM example
(`cargo build --example fake_llm`) and pi 1.6 (`. ~/.cache/slate-pi/env`).

    benches/fanout.py                 # N = 1 2 4 8 16, 3 runs each
    RUNS=5 SIZES="1 8" benches/fanout.py
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
FAKE = os.environ.get("FAKE_LLM", str(HERE / "target/debug/examples/fake_llm"))
PI = os.environ["SLATE_PI"]
RUNS = int(os.environ.get("RUNS", "3"))
SIZES = [int(n) for n in os.environ.get("SIZES", "1 2 4 8 16").split()]
MODES = os.environ.get("MODES", "cold pooled bare").split()


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="slate-fanout."))
    fake = subprocess.Popen([FAKE], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    url = fake.stdout.readline().strip()
    try:
        print(f"{'N':>3} {'slate cold':>12} {'slate pooled':>13} {'bare pi -p':>11}   (median seconds, {RUNS} runs)")
        for n in SIZES:
            row = {}
            for mode in MODES:
                times = [run(work / f"{mode}-{n}-{i}", url, mode, n) for i in range(RUNS)]
                row[mode] = statistics.median(times)
            cells = [f"{row[m]:.3f}" if m in row else "-" for m in ["cold", "pooled", "bare"]]
            print(f"{n:>3} {cells[0]:>12} {cells[1]:>13} {cells[2]:>11}")
    finally:
        fake.terminate()
        if os.environ.get("KEEP"):
            print(f"kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def run(base: Path, url: str, mode: str, n: int) -> float:
    agent = base / "agent"
    env = pi_sandbox.make(base, url)
    env["PATH"] = f"{Path(SLATE).parent}:{os.environ['PATH']}"
    if mode == "bare":
        children = " ".join(
            f"{PI} -p --no-session 'SCENARIO:TEXT child {i}' >/dev/null &" for i in range(n)
        )
        call = "bash " + json.dumps({"command": f"{children} wait"})
    else:
        (agent / "delegation.json").write_text(json.dumps({"pool": {"size": n if mode == "pooled" else 0}}))
        subprocess.run([SLATE, "pi", "install"], env=env, check=True, stdout=subprocess.DEVNULL)
        tasks = [{"assignment": f"SCENARIO:TEXT child {i}", "profile": "scout"} for i in range(n)]
        call = "delegate_task " + json.dumps({"tasks": tasks})
    warm = os.environ.get("WARM") or str(3 + n)
    prompt = f"SCENARIO:CALLS fan-out\nCALL: bash {json.dumps({'command': f'sleep {warm}'})}\nCALL: {call}"
    parent = subprocess.Popen(
        [PI, "--mode", "json", prompt],
        cwd=base / "project",
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    order: list[str] = []
    started: dict[str, float] = {}
    took = None
    for line in parent.stdout:
        now = time.monotonic()
        try:
            event = json.loads(line)
        except ValueError:
            continue
        call = event.get("toolCallId")
        if event.get("type") == "tool_execution_start":
            order.append(call)
            started[call] = now
        elif event.get("type") == "tool_execution_end" and len(order) == 2 and call == order[1]:
            took = now - started[call]
            if event.get("isError"):
                sys.exit(f"{mode} {n}: the fan-out failed: {json.dumps(event)[:400]}")
    parent.wait()
    if took is None:
        sys.exit(f"{mode} {n}: no fan-out tool call was seen")
    return took


if __name__ == "__main__":
    main()
