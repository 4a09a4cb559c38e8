"""The in-process vector cache: per-scope entries (Memory matrices, Experience rows) under one
bound in bytes (``POWERCONTEXT_VECTOR_CACHE_MB``), least recently used scopes first; an entry
larger than the whole bound is used by the call that read it and not kept."""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from django.conf import settings

if TYPE_CHECKING:
    import numpy as np
else:
    from powercontext.search.lazy_numpy import np

MIB = 1024 * 1024

_V = TypeVar("_V")


def cache_bound_bytes() -> int:
    """The bound of both caches together, in bytes (``POWERCONTEXT_VECTOR_CACHE_MB``)."""
    return int(settings.POWERCONTEXT_VECTOR_CACHE_MB) * MIB


def nbytes(*parts: object) -> int:
    """The memory an entry holds: its arrays' buffers, and its other fields as Python objects
    (a tuple of ints counts the tuple and each int)."""
    total = 0
    for part in parts:
        if isinstance(part, np.ndarray):
            total += part.nbytes
        elif isinstance(part, tuple):
            total += sys.getsizeof(part) + sum(sys.getsizeof(item) for item in part)
        else:
            total += sys.getsizeof(part)
    return total


class _Entries:
    """The entries of both caches in one least-recently-used order, keyed by (cache, scope id),
    each with its size in bytes (computed once, when put). The lock guards the dict and the sum;
    the values are immutable."""

    def __init__(self) -> None:
        self.entries: OrderedDict[tuple[str, str], tuple[Any, int]] = OrderedDict()
        self.bytes = 0
        self.too_large = 0  # entries not kept because each alone was larger than the bound
        self.evictions = 0  # entries dropped to make room, since the process started
        self.lock = threading.Lock()

    def pop(self, key: tuple[str, str]) -> None:
        """Remove one entry; the caller holds the lock."""
        _, size = self.entries.pop(key)
        self.bytes -= size

    def put(self, key: tuple[str, str], value: Any, size: int) -> None:
        bound = cache_bound_bytes()
        with self.lock:
            if key in self.entries:
                self.pop(key)
            if size <= bound:
                self.entries[key] = (value, size)
                self.bytes += size
            else:
                self.too_large += 1
            evicted: list[str] = []
            while self.bytes > bound:
                oldest = next(iter(self.entries))
                self.pop(oldest)
                evicted.append(oldest[0])
            self.evictions += len(evicted)
            held = self.bytes
        for listener in _listeners:
            listener(evicted, held)

    def clear(self) -> None:
        with self.lock:
            self.entries.clear()
            self.bytes = 0
            self.too_large = 0


# Called after every put, outside the lock, with the names of the caches whose entries it
# evicted (least recently used first; a cache name, never a scope id) and the bytes now held:
# ``context_api.metrics`` counts them for ``/metrics``.
_listeners: list[Callable[[list[str], int], None]] = []


def on_put(listener: Callable[[list[str], int], None]) -> None:
    """Register ``listener`` (once per process; registering it again changes nothing)."""
    if listener not in _listeners:
        _listeners.append(listener)


_entries = _Entries()


class ScopeLRU(Generic[_V]):
    """One cache's view of ``_entries``: its values per scope."""

    def __init__(self, name: str, size: Callable[[_V], int]) -> None:
        self._name = name
        self._size = size

    def get(self, scope_id: str) -> _V | None:
        key = (self._name, scope_id)
        with _entries.lock:
            found = _entries.entries.get(key)
            if found is None:
                return None
            _entries.entries.move_to_end(key)
            value: _V = found[0]
            return value

    def __getitem__(self, scope_id: str) -> _V:
        with _entries.lock:
            value: _V = _entries.entries[(self._name, scope_id)][0]
            return value

    def __contains__(self, scope_id: object) -> bool:
        with _entries.lock:
            return (self._name, scope_id) in _entries.entries

    def __len__(self) -> int:
        with _entries.lock:
            return sum(1 for name, _ in _entries.entries if name == self._name)

    def put(self, scope_id: str, value: _V) -> None:
        _entries.put((self._name, scope_id), value, self._size(value))

    def clear(self) -> None:
        with _entries.lock:
            for key in [key for key in _entries.entries if key[0] == self._name]:
                _entries.pop(key)


def cache_stats() -> dict[str, int]:
    """What the vector cache of this process holds: ``bytes`` (Memory and Experience entries
    together) against ``bound_bytes``, the ``scopes`` with an entry (counts only, no ids), and
    ``too_large``: entries not kept since the last clear because each alone exceeded the bound."""
    with _entries.lock:
        return {
            "bytes": _entries.bytes,
            "bound_bytes": cache_bound_bytes(),
            "scopes": len({scope for _, scope in _entries.entries}),
            "too_large": _entries.too_large,
        }


def clear_cache() -> None:
    _entries.clear()
