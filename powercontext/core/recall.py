"""Artifact head reads: which Experience heads retrieval may recall.

The rule lives in one place, ``is_recallable``; the artifact kernel evaluates it whenever it
writes a head's state, revision or search text and stores the answer in ``Artifact.recallable``
(same write). Every recall read (full text, vectors, rebuild and verify, the Inbox's near-duplicate
check) filters on that column.
"""

from __future__ import annotations

from django.db import models

from powercontext.core.families import Family
from powercontext.core.models import Artifact

EXPERIENCE_FAMILY = Family.EXPERIENCE.value


def is_recallable(*, family: str, state: str, current_revision: int, searchable_text: str) -> bool:
    """An approved (a revision exists), active Experience head with search text."""
    return (
        family == EXPERIENCE_FAMILY
        and state == Artifact.State.ACTIVE
        and current_revision >= 1
        and searchable_text != ""
    )


def recallable_experience_heads() -> models.QuerySet[Artifact]:
    """Experience heads that retrieval may read (``Artifact.recallable``)."""
    return Artifact.objects.filter(recallable=True)
