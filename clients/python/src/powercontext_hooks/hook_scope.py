"""The scope id the Codex hook sends (docs/agents/codex-hook.md): an explicit
``POWERCONTEXT_SCOPE_ID``, else ``git:<normalized origin remote>``, else
``local:<sha256 of the project path>``; long values are hashed to fit the contract's 256
characters. Standard library only, like the hook.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

ENV_SCOPE_ID = "POWERCONTEXT_SCOPE_ID"
MAX_SCOPE_CHARS = 256  # scope_id maxLength.
GIT_TIMEOUT_SECONDS = 0.5
_GIT_URL_SCHEMES = frozenset({"http", "https", "ssh", "git", "git+ssh", "ssh+git"})


def _env(environ: dict[str, str], name: str) -> str | None:
    value = environ.get(name)
    if value is None or not value.strip():
        return None
    return value.strip()


# --------------------------------------------------------------------------- scope resolution


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _normalize_remote_path(path: str) -> str:
    segments = [segment for segment in path.replace("\\", "/").split("/") if segment]
    normalized = "/".join(segments)
    if normalized.endswith(".git"):
        normalized = normalized[: -len(".git")].rstrip("/")
    return normalized


def normalize_git_remote(remote: str) -> str | None:
    """Turn a network git remote into ``host[:port]/path`` (e.g. ``github.com/owner/repo``).

    Credentials, a ``.git`` suffix and trailing slashes are dropped; only the host is lowercased.
    Local paths and ``file://`` remotes return None (they name nothing outside this machine).
    """

    value = remote.strip()
    if not value or any(character.isspace() for character in value):
        return None
    if "://" in value:
        try:
            parts = urlsplit(value)
            hostname = parts.hostname
            port = parts.port
        except ValueError:
            return None
        if parts.scheme.lower() not in _GIT_URL_SCHEMES or not hostname:
            return None
        host = hostname.lower()
        if ":" in host:  # IPv6 literal
            host = f"[{host}]"
        if port is not None:
            host = f"{host}:{port}"
        path = _normalize_remote_path(parts.path)
        return f"{host}/{path}" if path else None
    # scp-like syntax: [user@]host:path. Anything with a slash before the first colon is a local path.
    head, colon, tail = value.partition(":")
    if not colon or "/" in head or "\\" in head:
        return None
    host = head.rpartition("@")[2].lower()
    if not host or (len(host) == 1 and host.isalpha()):  # empty host, or a Windows drive letter
        return None
    path = _normalize_remote_path(tail)
    return f"{host}/{path}" if path else None


def _git(cwd: str, *args: str) -> str | None:
    env = dict(os.environ)
    env["GIT_TERMINAL_PROMPT"] = "0"
    try:
        completed = subprocess.run(
            ["git", "-C", cwd, *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_SECONDS,
            env=env,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    if completed.returncode != 0:
        return None
    return completed.stdout.strip() or None


def _bounded(prefix: str, value: str) -> str:
    candidate = f"{prefix}{value}"
    if len(candidate) <= MAX_SCOPE_CHARS:
        return candidate
    return f"{prefix}sha256:{_sha256(value.encode('utf-8', 'surrogatepass'))}"


def resolve_scope_id(cwd: str, environ: dict[str, str]) -> str:
    """Explicit POWERCONTEXT_SCOPE_ID, else ``git:<origin remote>``, else ``local:<sha256 of the project path>``."""

    explicit = _env(environ, ENV_SCOPE_ID)
    if explicit is not None:
        return _bounded("", explicit)
    remote = _git(cwd, "remote", "get-url", "origin")
    normalized = normalize_git_remote(remote) if remote else None
    if normalized:
        return _bounded("git:", normalized)
    # No usable remote: the work-tree root when inside a repository (stable across subdirectories),
    # otherwise the working directory itself.
    root = _git(cwd, "rev-parse", "--show-toplevel") or cwd
    resolved = Path(root).resolve(strict=False)
    return f"local:{_sha256(os.fsencode(resolved))}"
