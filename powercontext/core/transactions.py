"""The two transaction rules every write service shares (docs/architecture.md, "Writes").

- A helper that writes on behalf of a public service runs inside the caller's transaction, so
  it asserts one is open instead of opening its own.
- A head (an Artifact's revision, a candidate's version) moves by compare-and-swap: one UPDATE
  that matches the expected value, and a row count other than 1 means another writer won. The
  same on SQLite and PostgreSQL, with no lock held across the read.
"""

from __future__ import annotations

from typing import Any

from django.db import models, transaction

from powercontext.core.exceptions import InvariantFailure


def require_transaction(what: str) -> None:
    """Raise ``InvariantFailure`` unless the caller has a transaction open."""
    if not transaction.get_connection().in_atomic_block:
        raise InvariantFailure(f"{what} must run inside the caller's transaction")


def compare_and_swap(model: type[models.Model], *, match: dict[str, Any], changes: dict[str, Any]) -> bool:
    """Apply ``changes`` to the one row matching ``match`` (which names the expected version);
    True when it moved, False when another writer moved it first (or it no longer matches)."""
    return model._default_manager.filter(**match).update(**changes) == 1
