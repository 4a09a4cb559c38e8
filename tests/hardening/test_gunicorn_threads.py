"""gunicorn.conf.py runs threaded workers, POWERCONTEXT_GUNICORN_THREADS threads each; the
command line still wins."""

from __future__ import annotations

import gc
import runpy
import sys
from pathlib import Path

import pytest
from gunicorn.app.wsgiapp import WSGIApplication

ROOT = Path(__file__).resolve().parents[2]
CONF = str(ROOT / "gunicorn.conf.py")


def _gunicorn_config(monkeypatch: pytest.MonkeyPatch, *args: str) -> WSGIApplication:
    """gunicorn's own reading of the configuration file and command line (the application is
    not loaded)."""
    monkeypatch.setattr(sys, "argv", ["gunicorn", "-c", CONF, *args, "powercontext.wsgi"])
    return WSGIApplication("%(prog)s [OPTIONS] [APP_MODULE]")


def test_the_default_is_four_threads_per_gthread_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("POWERCONTEXT_GUNICORN_THREADS", raising=False)
    app = _gunicorn_config(monkeypatch)
    assert (app.cfg.worker_class_str, app.cfg.threads) == ("gthread", 4)


def test_the_environment_sets_the_threads_and_the_command_line_overrides_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("POWERCONTEXT_GUNICORN_THREADS", "6")
    assert _gunicorn_config(monkeypatch).cfg.threads == 6
    assert _gunicorn_config(monkeypatch, "--threads", "2").cfg.threads == 2


@pytest.mark.parametrize("value", ["0", "-1", "four", "2.5"])
def test_a_wrong_thread_count_stops_the_start(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("POWERCONTEXT_GUNICORN_THREADS", value)
    with pytest.raises(SystemExit, match="POWERCONTEXT_GUNICORN_THREADS"):
        runpy.run_path(CONF)


def test_a_warmed_up_worker_freezes_what_it_holds_out_of_the_collectors_reach(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from powercontext import warmup

    monkeypatch.setattr(warmup, "warm_up_worker", lambda: None)
    assert gc.get_freeze_count() == 0
    try:
        runpy.run_path(CONF)["post_worker_init"](None)
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
