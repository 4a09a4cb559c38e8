"""API token writes. Tokens are created by ``create_api_token``; operators revoke them in admin."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from powercontext.models import ApiToken


@transaction.atomic(durable=True)
def api_token_revoke(*, token_ids: Iterable[int], now: datetime | None = None) -> int:
    """Revoke the listed tokens that are still active; return how many were revoked.

    Idempotent: a token that is already revoked keeps its original ``revoked_at``. A revoked
    token is refused by ``context_api.auth.authenticate`` from its next request on. The digest is
    kept, so a revoked token can never be re-issued by accident.
    """
    when = now if now is not None else timezone.now()
    return ApiToken.objects.filter(pk__in=list(token_ids), revoked_at__isnull=True).update(revoked_at=when)
