"""gunicorn's own error and access lines hold no request path or query string (issue 20)."""

from __future__ import annotations

import io
import logging
import runpy
from pathlib import Path

from gunicorn.config import Config

from powercontext.core.gunicorn_logging import PrivateLogger

ROOT = Path(__file__).resolve().parents[2]
SECRET_PATH = "/v1/memory/search?scope_id=team-secret&query=the+prod+password"


def _logger() -> tuple[PrivateLogger, io.StringIO]:
    cfg = Config()
    settings = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    cfg.set("logger_class", settings["logger_class"])
    cfg.set("access_log_format", settings["access_log_format"])
    logger = PrivateLogger(cfg)
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    logger.error_log.handlers = [handler]
    return logger, out


def test_the_worker_timeout_and_crash_lines_withhold_the_request() -> None:
    logger, out = _logger()
    try:
        raise SystemExit(1)  # what a worker killed at its timeout raises inside the request
    except SystemExit:
        logger.exception("Error handling request %s %s", "GET", SECRET_PATH)
    logger.warning(f"Invalid request from ip=10.0.0.1: Invalid HTTP request line: 'GET {SECRET_PATH} HTTP/9'")
    logger.error("Error handling request %s", SECRET_PATH)

    text = out.getvalue()
    assert "Error handling request (method and path withheld)" in text and "SystemExit" in text
    assert "team-secret" not in text and "password" not in text and "/v1/memory" not in text


def test_the_access_log_format_names_no_path_query_or_referrer() -> None:
    settings = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    fmt = settings["access_log_format"]

    assert not any(atom in fmt for atom in ("%(r)s", "%(U)s", "%(q)s", "%(f)s", "%({"))
    assert settings["logger_class"] == "powercontext.core.gunicorn_logging.PrivateLogger"
