"""The per-session state the two hooks share: which citations the last injected prepared context
held, so the Stop hook can tell which of them the agent used (docs/agents/codex-hook.md).

One small JSON file per session, ``session-<sha256 of the session id>.json``, in a private
directory (mode 0700; files 0600, written atomically). It holds the scope the context was
prepared for, when it was saved and the items' citations, never their content or the prompt.
Files older than ``MAX_AGE_SECONDS`` are ignored and removed. Standard library only; every
function here swallows file-system errors (state is best effort, a hook never fails on it).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ENV_STATE_DIR = "POWERCONTEXT_STATE_DIR"
STATE_SUBDIR = ("powercontext", "hook-sessions")
FILE_PREFIX = "session-"
FILE_SUFFIX = ".json"
STATE_VERSION = 1

MAX_AGE_SECONDS = 24 * 60 * 60  # a turn does not last a day; older state is from a dead session
MAX_CITATIONS = 32  # the feedback operation's item limit; prepare returns at most 10 items
MAX_STATE_BYTES = 64 * 1024
MAX_FILES_SWEPT = 256  # stale-file cleanup looks at this many directory entries per write
MAX_ID_CHARS = 128
MAX_SCOPE_CHARS = 256

BEGIN_MARKER = "BEGIN_POWERCONTEXT_PREPARED_CONTEXT_V1"
END_MARKER = "END_POWERCONTEXT_PREPARED_CONTEXT_V1"
TRUST = "untrusted_history"
MEMORY_FAMILY = "memory"
EXPERIENCE_FAMILY = "experience"

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)

Citation = dict[str, Any]


@dataclass(frozen=True)
class SessionState:
    """The last prepared context of a session: its scope, when it was saved, its citations."""

    scope_id: str
    saved_at: int
    citations: list[Citation]


# --------------------------------------------------------------------------- citations


def _is_id(value: object) -> bool:
    """A contract id: 1-128 printable ASCII characters without spaces."""

    return (
        isinstance(value, str)
        and 0 < len(value) <= MAX_ID_CHARS
        and all("\x21" <= character <= "\x7e" for character in value)
    )


def _is_ref(value: object, family: str) -> bool:
    if not isinstance(value, dict) or set(value) != {"family", "artifact_id", "revision"}:
        return False
    revision = value["revision"]
    return (
        value["family"] == family
        and _is_id(value["artifact_id"])
        and isinstance(revision, int)
        and not isinstance(revision, bool)
        and revision >= 1
    )


def valid_citation(value: object) -> Citation | None:
    """``value`` when it is a Memory or Experience citation of the prepared-context shape."""

    if not isinstance(value, dict):
        return None
    if set(value) == {"memory_ref", "entry_id", "entry_version_id"}:
        if _is_ref(value["memory_ref"], MEMORY_FAMILY) and _is_id(value["entry_id"]):
            return value if _is_id(value["entry_version_id"]) else None
        return None
    if set(value) == {"artifact_ref"} and _is_ref(value["artifact_ref"], EXPERIENCE_FAMILY):
        return value
    return None


def envelope_items(content: str) -> list[dict[str, Any]]:
    """The items of a prepared context's envelope, decoded (their ``content`` is the exact item
    text), in order.

    The envelope is the one JSON line between the fixed begin marker (its first occurrence: the
    policy text before it is fixed, and item text inside the JSON cannot hold a raw newline) and
    the end marker that closes the content. The server writes neither marker's text raw inside
    the envelope, so splitting on the markers finds the same line. Anything unexpected gives no
    items; an item that is not an object is left out.
    """

    start = content.find(BEGIN_MARKER + "\n")
    end = content.rfind("\n" + END_MARKER)
    if start < 0 or end < 0 or not content.endswith(END_MARKER):
        return []
    start += len(BEGIN_MARKER) + 1
    if end < start:
        return []
    try:
        envelope = json.loads(content[start:end])
    except (ValueError, RecursionError):
        return []
    if not isinstance(envelope, dict) or envelope.get("trust") != TRUST:
        return []
    items = envelope.get("items")
    if not isinstance(items, list):
        return []
    return [item for item in items if isinstance(item, dict)]


def citations_of_content(content: str) -> list[Citation]:
    """The distinct citations of the items of a prepared context, in item order (anything
    unexpected gives none: ``envelope_items``)."""

    found: list[Citation] = []
    seen: set[str] = set()
    for item in envelope_items(content):
        citation = valid_citation(item.get("citation"))
        if citation is None:
            continue
        key = json.dumps(citation, sort_keys=True)
        if key not in seen and len(found) < MAX_CITATIONS:
            seen.add(key)
            found.append(citation)
    return found


def citation_ids(citation: Citation) -> tuple[str, ...]:
    """The ids whose mention counts as use: the entry version and entry ids of a Memory item,
    the artifact id of an Experience."""

    if "memory_ref" in citation:
        return (citation["entry_version_id"], citation["entry_id"])
    return (citation["artifact_ref"]["artifact_id"],)


# --------------------------------------------------------------------------- the state directory


def state_dir(environ: dict[str, str]) -> Path | None:
    """``POWERCONTEXT_STATE_DIR``, else ``$XDG_STATE_HOME/powercontext/hook-sessions``, else
    ``~/.local/state/powercontext/hook-sessions``; None when no absolute base is known."""

    explicit = (environ.get(ENV_STATE_DIR) or "").strip()
    if explicit:
        path = Path(explicit).expanduser()
        return path if path.is_absolute() else None
    xdg = (environ.get("XDG_STATE_HOME") or "").strip()
    if xdg and Path(xdg).is_absolute():
        return Path(xdg).joinpath(*STATE_SUBDIR)
    home = (environ.get("HOME") or "").strip()
    if not home:
        try:
            home = str(Path.home())
        except (RuntimeError, KeyError, OSError):
            return None
    if not Path(home).is_absolute():
        return None
    return Path(home, ".local", "state").joinpath(*STATE_SUBDIR)


def _private_dir(path: Path, *, create: bool) -> bool:
    """True when ``path`` is a directory only this user can use (mode 0700), creating it if asked.

    A symlink, another owner's directory or a non-directory is refused; a directory of ours with
    wider permissions is narrowed to 0700.
    """

    if create:
        with contextlib.suppress(FileExistsError):
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            path.mkdir(mode=0o700)
    try:
        info = path.lstat()
    except OSError:
        return False
    if not stat.S_ISDIR(info.st_mode):
        return False
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        return False
    if stat.S_IMODE(info.st_mode) != 0o700:
        os.chmod(path, 0o700)
    return True


def state_path(directory: Path, session_id: str) -> Path:
    digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()
    return directory / f"{FILE_PREFIX}{digest}{FILE_SUFFIX}"


def _sweep_stale(directory: Path, now: float, keep: Path) -> None:
    """Remove state files older than MAX_AGE_SECONDS (looks at MAX_FILES_SWEPT entries at most)."""

    with os.scandir(directory) as entries:
        for count, entry in enumerate(entries):
            if count >= MAX_FILES_SWEPT:
                break
            if not (entry.name.startswith(FILE_PREFIX) and entry.name.endswith(FILE_SUFFIX)):
                continue
            if entry.path == str(keep):
                continue
            with contextlib.suppress(OSError):
                if now - entry.stat(follow_symlinks=False).st_mtime > MAX_AGE_SECONDS:
                    os.unlink(entry.path)


def save(environ: dict[str, str], session_id: str, state: SessionState, now: float) -> bool:
    """Remember ``state`` as the session's last prepared context, replacing what was there;
    with no citations, forget it. True when the file system agreed."""

    try:
        directory = state_dir(environ)
        if directory is None:
            return False
        if not state.citations:
            clear(environ, session_id)
            return True
        if not _private_dir(directory, create=True):
            return False
        target = state_path(directory, session_id)
        record = {
            "v": STATE_VERSION,
            "scope_id": state.scope_id,
            "saved_at": state.saved_at,
            "citations": state.citations[:MAX_CITATIONS],
        }
        _write_private(target, json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
        with contextlib.suppress(OSError):
            _sweep_stale(directory, now, target)
        return True
    except (OSError, ValueError):
        return False


def _write_private(target: Path, data: bytes) -> None:
    """Write ``data`` to ``target`` atomically as a 0600 file (a temporary file, then rename)."""

    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temporary)
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            if hasattr(os, "fchmod"):
                os.fchmod(handle.fileno(), 0o600)  # whatever the umask
            handle.write(data)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def load(environ: dict[str, str], session_id: str, now: float) -> SessionState | None:
    """The session's last prepared context, or None when there is none, it is older than
    MAX_AGE_SECONDS, or the file is not one this hook wrote."""

    try:
        directory = state_dir(environ)
        if directory is None or not _private_dir(directory, create=False):
            return None
        path = state_path(directory, session_id)
        descriptor = os.open(path, os.O_RDONLY | _O_NOFOLLOW)
        with os.fdopen(descriptor, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode) or (hasattr(os, "getuid") and info.st_uid != os.getuid()):
                return None
            data = handle.read(MAX_STATE_BYTES + 1)
        if len(data) > MAX_STATE_BYTES:
            return None
        state = json.loads(data.decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(state, dict) or state.get("v") != STATE_VERSION:
        return None
    scope_id, saved_at, raw = state.get("scope_id"), state.get("saved_at"), state.get("citations")
    if not isinstance(scope_id, str) or not scope_id.strip() or len(scope_id) > MAX_SCOPE_CHARS:
        return None
    if not isinstance(saved_at, int) or isinstance(saved_at, bool) or not isinstance(raw, list):
        return None
    if now - saved_at > MAX_AGE_SECONDS:
        clear(environ, session_id)
        return None
    citations = [c for c in (valid_citation(value) for value in raw[:MAX_CITATIONS]) if c is not None]
    return SessionState(scope_id, saved_at, citations)


def clear(environ: dict[str, str], session_id: str) -> None:
    """Forget the session's state (no error when there is none)."""

    with contextlib.suppress(OSError, ValueError):
        directory = state_dir(environ)
        if directory is not None:
            os.unlink(state_path(directory, session_id))


def forget(environ: dict[str, str], session_id: str, reported: list[Citation], now: float) -> None:
    """Drop ``reported`` from the session's state (keeping when it was saved); the file goes
    when nothing is left."""

    state = load(environ, session_id, now)
    if state is None:
        return
    remaining = [citation for citation in state.citations if citation not in reported]
    if remaining:
        save(environ, session_id, SessionState(state.scope_id, state.saved_at, remaining), now)
    else:
        clear(environ, session_id)
