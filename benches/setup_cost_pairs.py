"""Interleaved pairs for benches/setup_cost.sh: bare pi, then slate, N times, so that load
drifting on a shared machine hits both sides alike. Run from the script's project directory
(it needs one.json, sixteen.json and bare16.sh there). Prints medians and the median of the
pairwise ratios. With SLATE_BEFORE set (another slate binary), the pairs are that binary
against this one instead of bare pi against slate: an A/B of a change."""
import os
import statistics
import subprocess
import sys
import time


def timed(cmd):
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main():
    pi, slate, n = os.environ["SLATE_PI"], sys.argv[1], int(sys.argv[2])
    before = os.environ.get("SLATE_BEFORE")
    if before:
        label = "slate run before"
        cases = [
            ("1 task", [before, "run", "one.json"], [slate, "run", "one.json"]),
            ("16 tasks", [before, "run", "sixteen.json"], [slate, "run", "sixteen.json"]),
        ]
    else:
        label = "bare pi -p"
        cases = [
            ("1 task", [pi, "-p", "--no-session", "SCENARIO:TEXT say hello"], [slate, "run", "one.json"]),
            ("16 tasks", ["./bare16.sh"], [slate, "run", "sixteen.json"]),
        ]
    for name, bare, ours in cases:
        a, b = [], []
        for _ in range(n):
            a.append(timed(bare))
            b.append(timed(ours))
        pairs = statistics.median(y / x for x, y in zip(a, b))
        print(
            f"{name}: {label} median {statistics.median(a):.3f} s, slate run median "
            f"{statistics.median(b):.3f} s, ratio of medians "
            f"{statistics.median(b) / statistics.median(a):.3f}, median pairwise ratio {pairs:.3f}"
        )


main()
