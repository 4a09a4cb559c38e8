"""numpy, imported on first use instead of when a search module is imported.

The URL configuration imports the API, which imports prepare and these search modules: without
this, every process imports numpy (tens of milliseconds, more on a busy machine) on its first
request, a Review Inbox page included, though only vector search, the relevance floor and
embedding use it. Modules write ``np.dot(...)`` as before; type checkers see numpy itself::

    if TYPE_CHECKING:
        import numpy as np
    else:
        from powercontext.search.lazy_numpy import np
"""

from __future__ import annotations

import importlib
from typing import Any


class _LazyModule:
    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        value = getattr(importlib.import_module(self._name), attribute)
        setattr(self, attribute, value)  # later look-ups are plain attribute reads
        return value


np = _LazyModule("numpy")
