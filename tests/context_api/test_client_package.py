"""The client distribution (clients/python) installed the way a developer installs it on a laptop:
``pip install`` into a fresh virtualenv outside the checkout, with nothing of the service in it.

The virtualenv is built once per module from the package index (setuptools and httpx). This test
never skips: without the index the build fails, and so does the test, with pip's last lines.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.packaging

CLIENT_DIR = Path(__file__).resolve().parents[2] / "clients" / "python"
SCOPE = "client-package-scope"
NOTE = "Release builds are signed on the dedicated build host."
TIMEOUT = 0.5  # POWERCONTEXT_TIMEOUT_SECONDS for the server-down cases
# Interpreter start and imports on a loaded 2-core machine: what a run may take besides the timeout.
MARGIN = 2.5
CONSOLE_SCRIPTS = {
    "powercontext-codex-prompt-hook": "powercontext.codex.recall",
    "powercontext-codex-stop-hook": "powercontext.codex.feedback",
    "powercontext-claude-code-prompt-hook": "powercontext.claude_code.recall",
    "powercontext-claude-code-stop-hook": "powercontext.claude_code.feedback",
}


def _clean_env(**extra: str) -> dict[str, str]:
    """The caller's environment without anything that would let the service's code in."""

    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "DJANGO_SETTINGS_MODULE"}
        and not key.startswith("POWERCONTEXT_")
    }
    env.update(extra)
    return env


def _must(command: list[str], what: str, cwd: Path, timeout: float) -> None:
    result = subprocess.run(
        command, cwd=cwd, env=_clean_env(), capture_output=True, text=True, timeout=timeout, check=False
    )
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).splitlines()[-30:])
        pytest.fail(f"{what} failed (exit {result.returncode}):\n{tail}", pytrace=False)


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv outside the checkout with the client installed from a copy of
    clients/python (the build writes into its source folder; the checkout stays untouched)."""

    root = tmp_path_factory.mktemp("client-package")
    source = root / "source"
    shutil.copytree(
        CLIENT_DIR, source, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info", "dist")
    )
    target = root / "venv"
    _must([sys.executable, "-m", "venv", str(target)], "python -m venv", root, 120)
    _must(
        [
            str(target / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--no-input",
            "--quiet",
            str(source),
        ],
        "pip install clients/python",
        root,
        600,
    )
    return target


def run_hook(
    venv: Path, script: str, stdin: object, url: str, state: Path, **env: str
) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run an installed console script as Codex runs a hook: JSON on stdin, settings in the environment."""

    started = time.monotonic()
    result = subprocess.run(
        [str(venv / "bin" / script)],
        input=stdin if isinstance(stdin, str) else json.dumps(stdin),
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=state.parent,
        env=_clean_env(POWERCONTEXT_URL=url, POWERCONTEXT_STATE_DIR=str(state), **env),
        timeout=60,
        check=False,
    )
    return result, time.monotonic() - started


def prompt_input(cwd: Path, prompt: str) -> dict[str, object]:
    """Codex's UserPromptSubmit input."""

    return {
        "session_id": "019d036d-c7fa-72d2-b6fd-78878bfe34e4",
        "turn_id": "019d036d-c7fa-72d2-b6fd-000000000002",
        "transcript_path": None,
        "cwd": str(cwd),
        "hook_event_name": "UserPromptSubmit",
        "model": "gpt-5",
        "permission_mode": "default",
        "prompt": prompt,
    }


def stop_input(cwd: Path, message: str) -> dict[str, object]:
    """Codex's Stop input."""

    return {
        **prompt_input(cwd, ""),
        "hook_event_name": "Stop",
        "stop_hook_active": False,
        "last_assistant_message": message,
    }


def test_the_installed_package_imports_without_the_service(venv: Path, tmp_path: Path) -> None:
    version = tomllib.loads((CLIENT_DIR / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    probe = (
        "import importlib.metadata, importlib.util, json, powercontext_client, powercontext_hooks.codex_stop\n"
        "print(json.dumps({\n"
        "    'client': powercontext_client.__file__,\n"
        "    'version': importlib.metadata.version('powercontext-client'),\n"
        "    'missing': [m for m in ('django', 'rest_framework', 'context_api', 'powercontext')\n"
        "                if importlib.util.find_spec(m) is not None],\n"
        "    'client_class': powercontext_client.PowerContextClient.__name__,\n"
        "}))\n"
    )
    result = subprocess.run(
        [str(venv / "bin" / "python"), "-c", probe],
        cwd=tmp_path,
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert Path(found["client"]).is_relative_to(venv)  # the installed copy, not the checkout's
    assert found["version"] == version
    assert found["missing"] == []  # no Django, no service package in that virtualenv
    assert found["client_class"] == "PowerContextClient"


@pytest.mark.parametrize(("script", "component"), sorted(CONSOLE_SCRIPTS.items()))
def test_every_console_script_runs_its_hook(venv: Path, tmp_path: Path, script: str, component: str) -> None:
    result, _ = run_hook(venv, script, "not json", "http://127.0.0.1:9", tmp_path / "state")

    assert result.returncode == 0 and result.stdout == ""
    assert json.loads(result.stderr)["component"] == component
    assert json.loads(result.stderr)["outcome"] == "skipped"


@pytest.mark.django_db(transaction=True)
def test_the_codex_hooks_answer_a_prompt_and_report_its_use_against_a_live_server(
    venv: Path, live_server: Any, tmp_path: Path
) -> None:
    remembered = httpx.post(
        f"{live_server.url}/v1/memory/remember", json={"scope_id": SCOPE, "kind": "note", "text": NOTE}
    )
    remembered.raise_for_status()
    version_id = remembered.json()["entry"]["citation"]["entry_version_id"]
    settings = {"POWERCONTEXT_SCOPE_ID": SCOPE, "POWERCONTEXT_TIMEOUT_SECONDS": "10"}
    state = tmp_path / "state"

    prompt = "where are release builds signed?"
    answered, _ = run_hook(
        venv,
        "powercontext-codex-prompt-hook",
        prompt_input(tmp_path, prompt),
        live_server.url,
        state,
        **settings,
    )

    assert answered.returncode == 0 and answered.stderr == ""
    output = json.loads(answered.stdout)["hookSpecificOutput"]
    direct = httpx.post(
        f"{live_server.url}/v1/context/prepare", json={"scope_id": SCOPE, "query": prompt, "max_bytes": 8000}
    ).json()
    assert output == {"hookEventName": "UserPromptSubmit", "additionalContext": direct["content"]}
    assert NOTE in output["additionalContext"]

    message = f"Signed it on the build host, as {version_id} says."
    reported, _ = run_hook(
        venv,
        "powercontext-codex-stop-hook",
        stop_input(tmp_path, message),
        live_server.url,
        state,
        **settings,
    )

    assert reported.returncode == 0 and reported.stdout == ""
    assert json.loads(reported.stderr) == {
        "component": "powercontext.codex.feedback",
        "event": "context_feedback",
        "outcome": "recorded",
        "http_status": 200,
        "items": 1,
        "recorded": 1,
    }


@pytest.fixture(params=["refused", "silent"])
def down_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """A server that is down: a port nobody listens on, or one that accepts and never answers."""

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        if request.param == "silent":
            sock.listen(8)  # the kernel completes the handshake; nobody ever reads or answers
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_the_codex_hook_fails_open_within_its_budget_when_the_server_is_down(
    venv: Path, tmp_path: Path, down_url: str
) -> None:
    result, elapsed = run_hook(
        venv,
        "powercontext-codex-prompt-hook",
        prompt_input(tmp_path, "where are release builds signed?"),
        down_url,
        tmp_path / "state",
        POWERCONTEXT_SCOPE_ID=SCOPE,
        POWERCONTEXT_TIMEOUT_SECONDS=str(TIMEOUT),
    )

    assert result.returncode == 0
    assert result.stdout == ""
    assert json.loads(result.stderr) == {
        "component": "powercontext.codex.recall",
        "event": "context_prepare",
        "outcome": "server_unavailable",
    }
    assert elapsed < TIMEOUT + MARGIN
