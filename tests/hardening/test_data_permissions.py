"""The embedded data directory is 0700 and its SQLite database 0600 (issue 20, N8)."""

from __future__ import annotations

import stat
from pathlib import Path

from tests.hardening.processes import child_env, run_python

CONNECT = (
    "import django; django.setup(); from django.db import connection; "
    "connection.ensure_connection(); connection.cursor().execute('CREATE TABLE t (x)')"
)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_data_directory_and_database_are_private(tmp_path: Path) -> None:
    data = tmp_path / "fresh"

    result = run_python(CONNECT, child_env(data))

    assert result.returncode == 0, result.stderr
    assert mode(data) == 0o700
    assert mode(data / "powercontext.sqlite3") == 0o600
    assert all(mode(p) & 0o077 == 0 for p in data.iterdir())


def test_an_existing_world_readable_database_is_made_private(tmp_path: Path) -> None:
    data = tmp_path / "old"
    data.mkdir(mode=0o755)
    data.chmod(0o755)
    database = data / "powercontext.sqlite3"
    database.touch()
    database.chmod(0o644)

    result = run_python(CONNECT, child_env(data))

    assert result.returncode == 0, result.stderr
    assert mode(data) == 0o700 and mode(database) == 0o600
