"""Run the project in a child process with an environment the test controls completely.

Settings are read once per process, so the only honest way to test how they react to the
environment is a fresh interpreter. The child never inherits DATABASE_URL, CELERY_BROKER_URL,
SECRET_KEY or anything else from the test run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRINT_SECRET_KEY = (
    "import django; django.setup(); from django.conf import settings; print(settings.SECRET_KEY)"
)


def child_env(data_dir: Path, **variables: str) -> dict[str, str]:
    """A minimal environment: the embedded default in ``data_dir`` plus ``variables``."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "DJANGO_SETTINGS_MODULE": "powercontext.settings",
        "POWERCONTEXT_DATA_DIR": str(data_dir),
        "LOG_LEVEL": "WARNING",
        **variables,
    }


def run_python(code: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


def run_manage(*args: str, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
