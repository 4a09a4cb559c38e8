"""gunicorn's own error and access lines hold no request path or query string (issue 20)."""

from __future__ import annotations

import io
import json
import logging
import runpy
import sys
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest
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

    assert not any(atom in fmt for atom in ("%(r)s", "%(U)s", "%(q)s", "%(f)s", "}i)s", "}e)s"))
    # The one header atom: the request id of the response.
    assert fmt.count("%({") == 1 and "%({x-powercontext-request-id}o)s" in fmt
    assert settings["logger_class"] == "powercontext.core.gunicorn_logging.PrivateLogger"


def _access_line(logger: PrivateLogger, headers: list[tuple[str, str]]) -> None:
    response = SimpleNamespace(status="200 OK", headers=headers, sent=12)
    environ = {
        "REMOTE_ADDR": "10.0.0.7",
        "REQUEST_METHOD": "GET",
        "RAW_URI": SECRET_PATH,
        "PATH_INFO": "/v1/memory/search",
        "QUERY_STRING": SECRET_PATH.split("?", 1)[1],
        "SERVER_PROTOCOL": "HTTP/1.1",
    }
    logger.access(response, SimpleNamespace(headers=[]), environ, timedelta(milliseconds=7))


def _gunicorn_logger(monkeypatch: pytest.MonkeyPatch, log_format: str) -> tuple[PrivateLogger, io.StringIO]:
    monkeypatch.setenv("LOG_FORMAT", log_format)
    for name in ("gunicorn.error", "gunicorn.access"):  # gunicorn's loggers are global: restored after
        monkeypatch.setattr(logging.getLogger(name), "handlers", [])
        monkeypatch.setattr(logging.getLogger(name), "filters", [])
    cfg = Config()
    settings = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    cfg.set("logger_class", settings["logger_class"])
    cfg.set("access_log_format", settings["access_log_format"])
    cfg.set("accesslog", "-")
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", out)
    return PrivateLogger(cfg), out


def test_the_access_line_carries_the_request_id(monkeypatch: pytest.MonkeyPatch) -> None:
    logger, out = _gunicorn_logger(monkeypatch, "plain")

    _access_line(logger, [("X-PowerContext-Request-ID", "0123456789abcdef")])
    _access_line(logger, [])  # an answer gunicorn wrote itself: no id

    lines = out.getvalue().splitlines()
    assert lines[0].endswith('"GET" 200 12 7ms request_id=0123456789abcdef')
    assert lines[1].endswith("request_id=-")
    assert "secret" not in out.getvalue()


def test_json_mode_writes_gunicorns_access_and_error_lines_as_json(monkeypatch: pytest.MonkeyPatch) -> None:
    logger, out = _gunicorn_logger(monkeypatch, "json")

    _access_line(logger, [("X-PowerContext-Request-ID", "0123456789abcdef")])
    logger.info("Booting worker with pid: %s", 42)
    logger.error("Error handling request %s", SECRET_PATH)

    access, booting, failed = (json.loads(line) for line in out.getvalue().splitlines())
    assert access["logger"] == "gunicorn.access" and access["request_id"] == "0123456789abcdef"
    assert access["message"].endswith('"GET" 200 12 7ms request_id=0123456789abcdef')
    assert booting == {**booting, "logger": "gunicorn.error", "level": "INFO", "request_id": "-"}
    assert booting["message"] == "Booting worker with pid: 42"
    assert failed["message"] == "Error handling request (method and path withheld)"
    assert "secret" not in out.getvalue()
