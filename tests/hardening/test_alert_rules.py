"""The example Prometheus alert rules (deploy/prometheus/alerts.yml) load in Prometheus and fire
on the series they are about (``promtool``, from Debian's prometheus package)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

RULES = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"

pytestmark = pytest.mark.promtool


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    promtool = shutil.which("promtool")
    assert promtool is not None, "promtool is missing (apt-get install prometheus)"
    return subprocess.run(
        [promtool, *args], cwd=RULES, capture_output=True, text=True, timeout=60, check=False
    )


def test_the_alert_rules_are_valid() -> None:
    checked = _promtool("check", "rules", "alerts.yml")

    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 5 rules found" in checked.stdout


def test_each_alert_fires_on_its_series_and_not_on_healthy_ones() -> None:
    tested = _promtool("test", "rules", "alerts_test.yml")

    assert tested.returncode == 0, tested.stdout + tested.stderr
