"""SQLite database files are private (mode 0600) wherever they are (issue 20, N8; issue 33): the
embedded default's file, a ``DATABASE_URL=sqlite:///...`` file, and their ``-wal``, ``-shm`` and
``-journal`` companions. Memory, sources and sessions are nobody else's to read.

SQLite creates a companion with the database file's own mode (and sets it exactly, whatever the
umask), so a database file that is 0600 before the first connection keeps every companion 0600.
The settings therefore create a missing file as 0600 before Django connects
(``private_sqlite_files(create=True)``); every new connection checks again
(``core.apps``: ``connection_created``), for a file SQLite created itself (a test database, a
file removed while the server ran) and for companions an older version left readable. Paths
another user owns, read-only mounts and in-memory databases are left alone.

Standard library only: the settings import it before Django is set up.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

PRIVATE_FILE = 0o600
SQLITE_COMPANIONS = ("-wal", "-shm", "-journal")


def sqlite_file(name: object) -> Path | None:
    """The database file of a SQLite ``NAME`` setting; None for an in-memory or URI database."""
    if isinstance(name, Path):
        name = str(name)
    if not isinstance(name, str) or not name or name == ":memory:" or name.startswith("file:"):
        return None
    return Path(name)


def make_private(path: Path, mode: int) -> None:
    """``path`` (a file or directory, through a symlink too) gets ``mode`` when it exists, is
    ours and has another one; never raises."""
    try:
        status = path.stat()
        if status.st_uid == os.getuid() and stat.S_IMODE(status.st_mode) != mode:
            path.chmod(mode)
    except OSError:
        pass  # missing, a read-only or foreign mount: the operator's choice


def private_sqlite_files(database: Path, *, create: bool) -> None:
    """The SQLite file ``database`` and its existing companions 0600; with ``create``, a missing
    file is first created empty (a valid empty database) as 0600, so SQLite never creates it
    under the umask. A missing directory is left to SQLite's own error."""
    if create and not database.exists() and database.parent.is_dir():
        try:
            os.close(os.open(database, os.O_WRONLY | os.O_CREAT, PRIVATE_FILE))
        except OSError:
            pass  # not writable here: SQLite reports it when it connects
    for path in (database, *(database.with_name(database.name + suffix) for suffix in SQLITE_COMPANIONS)):
        make_private(path, PRIVATE_FILE)
