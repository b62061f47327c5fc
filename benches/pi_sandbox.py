"""A private pi sandbox for the benchmark scripts: an agent dir pointing pi at the fake LLM,
HOME, cache and runtime dirs of its own, and the hermetic environment both sides run in."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def make(base: Path, base_url: str) -> dict[str, str]:
    """Create the sandbox under `base` (`agent/`, `home/`, `project/`, `run/`, `cache/`) for the
    fake LLM at `base_url` (`http://127.0.0.1:PORT/v1`) and return its environment."""
    agent = base / "agent"
    for d in ["agent", "home", "project", "run", "cache"]:
        (base / d).mkdir(parents=True)
    os.chmod(base / "run", 0o700)
    models = (HERE / "tests/support/agent_template/models.json").read_text()
    (agent / "models.json").write_text(models.replace("http://127.0.0.1:18080/v1", base_url))
    shutil.copy(HERE / "tests/support/agent_template/settings.json", agent / "settings.json")
    return dict(
        os.environ,
        PI_CODING_AGENT_DIR=str(agent),
        PI_OFFLINE="1",
        PI_SKIP_VERSION_CHECK="1",
        PI_TELEMETRY="0",
        HOME=str(base / "home"),
        XDG_CACHE_HOME=str(base / "cache"),
        XDG_RUNTIME_DIR=str(base / "run"),
    )
