"""The embedded data directory is 0700 and its SQLite database 0600 (issue 20, N8), and so is
every other SQLite database: a ``DATABASE_URL=sqlite:///...`` file and the ``-wal`` and ``-shm``
files SQLite creates beside it, whatever the process umask (issue 33)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from tests.hardening.processes import child_env, run_python

CONNECT = (
    "import django; django.setup(); from django.db import connection; "
    "connection.ensure_connection(); connection.cursor().execute('CREATE TABLE t (x)')"
)
# Under the usual umask, with the connection still open (SQLite removes -wal and -shm when the
# last connection closes): the modes of every file beside the database, as JSON. With
# REMOVE_DATABASE=1 the file the settings created is deleted first, so SQLite creates it (and its
# companions) itself.
MODES_WHILE_OPEN = """
import json, os, stat
os.umask(0o022)
import django
django.setup()
from pathlib import Path
from django.conf import settings
from django.db import connection
database = Path(settings.DATABASES["default"]["NAME"])
if os.environ.get("REMOVE_DATABASE") == "1":
    database.unlink()
with connection.cursor() as cursor:
    cursor.execute("CREATE TABLE t (x)")
    cursor.execute("INSERT INTO t VALUES (1)")
    print(json.dumps({p.name: stat.S_IMODE(p.stat().st_mode) for p in database.parent.iterdir()}))
"""


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def modes_while_open(data: Path, **variables: str) -> dict[str, int]:
    result = run_python(MODES_WHILE_OPEN, child_env(data, **variables))
    assert result.returncode == 0, result.stderr
    found: dict[str, int] = json.loads(result.stdout.strip().splitlines()[-1])
    return found


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


def test_the_default_database_wal_and_shm_are_private_under_umask_022(tmp_path: Path) -> None:
    found = modes_while_open(tmp_path / "data")

    assert {"powercontext.sqlite3", "powercontext.sqlite3-wal", "powercontext.sqlite3-shm"} <= set(found)
    assert {name: value for name, value in found.items() if name.startswith("powercontext.sqlite3")} == {
        "powercontext.sqlite3": 0o600,
        "powercontext.sqlite3-wal": 0o600,
        "powercontext.sqlite3-shm": 0o600,
    }


def test_a_database_url_sqlite_file_and_its_wal_and_shm_are_private(tmp_path: Path) -> None:
    """The documented ``DATABASE_URL=sqlite:///path``: the database, -wal and -shm are 0600
    (they were 0644); the directory is the operator's and keeps its mode."""
    directory = tmp_path / "elsewhere"
    directory.mkdir()
    directory.chmod(0o755)

    found = modes_while_open(tmp_path / "data", DATABASE_URL=f"sqlite:///{directory}/x.sqlite3")

    assert found == {"x.sqlite3": 0o600, "x.sqlite3-wal": 0o600, "x.sqlite3-shm": 0o600}
    assert mode(directory) == 0o755


def test_an_existing_world_readable_database_url_file_is_made_private(tmp_path: Path) -> None:
    directory = tmp_path / "elsewhere"
    directory.mkdir()
    database = directory / "x.sqlite3"
    database.touch()
    database.chmod(0o644)

    found = modes_while_open(tmp_path / "data", DATABASE_URL=f"sqlite:///{database}")

    assert found == {"x.sqlite3": 0o600, "x.sqlite3-wal": 0o600, "x.sqlite3-shm": 0o600}


def test_a_database_file_sqlite_creates_itself_is_made_private_when_connecting(tmp_path: Path) -> None:
    """A file missing when the settings ran (removed while the server runs, a test database):
    SQLite creates it and its companions under the umask; the connection hook fixes all three."""
    directory = tmp_path / "elsewhere"
    directory.mkdir()

    found = modes_while_open(
        tmp_path / "data", REMOVE_DATABASE="1", DATABASE_URL=f"sqlite:///{directory}/x.sqlite3"
    )

    assert found == {"x.sqlite3": 0o600, "x.sqlite3-wal": 0o600, "x.sqlite3-shm": 0o600}
