"""The front door: management commands start light, beat keeps its schedule out of the checkout."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

from powercontext.celery import DataDirScheduler
from powercontext.celery import app as celery_app

# Loaded on first use only: the embedding model's runtime and tokenizer, the MCP SDK. Commands
# that do not load the URLconf (``--help``, most commands) do not load NumPy or secret detectors.
HEAVY = ("onnxruntime", "tokenizers", "mcp")
# powercontext.search is an app (its package loads, its names on first use); its engines, its
# vectors and its rankings must not.
WITHOUT_URLS = (
    *HEAVY,
    "numpy",
    "detect_secrets",
    "powercontext.search.fulltext.engines",
    "powercontext.search.vectors",
    "powercontext.search.ranking",
)

_PROBE = """
import json, runpy, sys
sys.argv = ["manage.py", *sys.argv[1:]]
try:
    runpy.run_path("manage.py", run_name="__main__")
except SystemExit as stop:
    assert not stop.code, stop.code
print(json.dumps(sorted(name for name in {heavy!r} if name in sys.modules)))
"""


@pytest.mark.parametrize(("argv", "heavy"), [(["--help"], WITHOUT_URLS), (["check"], HEAVY)])
def test_management_commands_start_without_heavy_modules(argv: list[str], heavy: tuple[str, ...]) -> None:
    probe = _PROBE.format(heavy=heavy)
    done = subprocess.run(
        [sys.executable, "-c", probe, *argv],
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_beat_keeps_its_schedule_in_the_data_directory() -> None:
    expected = str(Path(settings.DATA_DIR) / "celerybeat-schedule")
    assert settings.CELERY_BEAT_SCHEDULE_FILENAME == expected
    assert celery_app.conf.beat_schedule_filename == expected
    assert celery_app.conf.beat_scheduler == "powercontext.celery:DataDirScheduler"


def test_beat_creates_the_directory_of_its_schedule(tmp_path: Path) -> None:
    filename = tmp_path / "not-yet" / "celerybeat-schedule"

    scheduler = DataDirScheduler(app=celery_app, schedule_filename=str(filename))
    try:
        assert "pipeline-scan" in scheduler.schedule
    finally:
        scheduler.close()

    assert [p.name for p in filename.parent.iterdir() if p.name.startswith("celerybeat-schedule")]
