"""Running a script in a fresh Python process on the embedded default (SQLite in a throwaway
data directory), as a newly started worker would: no database URL, broker or secret key from
the test run's environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
_INHERITED_NOT = {"DATABASE_URL", "CELERY_BROKER_URL", "SECRET_KEY", "SECRET_KEY_FILE"}


def fresh_env(data_dir: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in _INHERITED_NOT}
    env.update(
        DJANGO_SETTINGS_MODULE="powercontext.settings",
        POWERCONTEXT_DATA_DIR=str(data_dir),
        POWERCONTEXT_EMBED_WRITES="sync",
        PYTHONPATH=str(ROOT),
    )
    return env


def run_script(script: str, args: list[str], data_dir: Path) -> Any:
    """Run ``script`` with ``args``; it must succeed; returns the JSON of its last output line
    (None when it printed nothing)."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=ROOT,
        env=fresh_env(data_dir),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    return json.loads(lines[-1]) if lines else None
