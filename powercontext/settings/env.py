"""Reading the environment for the settings: typed values with clear errors, the secret key of
the embedded default, and the private data directory. Plain functions; no Django setting is read
here."""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from django.core.exceptions import ImproperlyConfigured

from powercontext.core.private_files import make_private, private_sqlite_files

NumberT = TypeVar("NumberT", int, float)


def _set_value(name: str) -> str | None:
    """The variable's raw value, or None when it is unset or blank (the setting's default)."""
    raw = os.environ.get(name)
    return None if raw is None or raw.strip() == "" else raw


def env_bool(name: str, default: bool) -> bool:
    raw = _set_value(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (true/false), got {raw!r}")


def env_list(name: str, default: list[str]) -> list[str]:
    raw = _set_value(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def _env_number(
    name: str,
    default: NumberT,
    parse: Callable[[str], NumberT],
    valid: Callable[[NumberT], bool],
    expected: str,
) -> NumberT:
    raw = _set_value(name)
    if raw is None:
        return default
    try:
        value: NumberT | None = parse(raw.strip())
    except ValueError:
        value = None
    if value is None or not valid(value):
        raise ImproperlyConfigured(f"{name} must be {expected}, got {raw!r}")
    return value


def env_fraction(name: str, default: float) -> float:
    """A float in [0, 1] from the environment."""
    return _env_number(name, default, float, lambda value: 0.0 <= value <= 1.0, "a number from 0 to 1")


def env_int(name: str, default: int, *, minimum: int = 0) -> int:
    return _env_number(name, default, int, lambda value: value >= minimum, f"an integer >= {minimum}")


def env_proxy_ssl_header(name: str) -> tuple[str, str] | None:
    """``X-Forwarded-Proto,https`` (or Django's ``HTTP_X_FORWARDED_PROTO,https``) -> a META pair."""
    raw = _set_value(name)
    if raw is None:
        return None
    header, _, value = (part.strip() for part in raw.partition(","))
    if not re.fullmatch(r"[A-Za-z0-9_-]+", header) or not value:
        raise ImproperlyConfigured(f"{name} must look like 'X-Forwarded-Proto,https', got {raw!r}")
    meta = header.upper().replace("-", "_")
    return (meta if meta.startswith("HTTP_") else f"HTTP_{meta}", value)


def read_secret_file(path: Path, name: str) -> str:
    try:
        key = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ImproperlyConfigured(f"{name} cannot be read: {path} ({exc.strerror})") from exc
    if not key:
        raise ImproperlyConfigured(f"{name} is empty: {path}")
    return key


def generated_secret_key(path: Path) -> str:
    """The embedded default's key: generated on the first start, then read from ``path``.

    The file is written complete under a temporary name (mode 0600) and hard-linked into place,
    which fails if it already exists: processes starting together (gunicorn workers) all end
    up reading the one key that won, never a half-written file.
    """
    if not path.exists():
        temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                    handle.write(secrets.token_urlsafe(64) + "\n")
                    handle.flush()
                    os.fsync(handle.fileno())
                try:
                    os.link(temporary, path)
                except FileExistsError:
                    pass
            finally:
                temporary.unlink(missing_ok=True)
        except OSError as exc:
            raise ImproperlyConfigured(
                f"Cannot store a generated secret key at {path} ({exc.strerror}): make "
                "POWERCONTEXT_DATA_DIR writable, or set SECRET_KEY or SECRET_KEY_FILE."
            ) from exc
    return read_secret_file(path, "the generated secret key file")


def private_files(data_dir: Path, database: Path) -> None:
    """The embedded data directory 0700 and its SQLite files 0600 (issue 20, N8): Memory, sources
    and sessions are nobody else's to read (``powercontext.core.private_files``, which every
    SQLite database path goes through). Paths another user owns are left alone."""
    make_private(data_dir, 0o700)
    private_sqlite_files(database, create=True)
