"""API token writes: create (``create_api_token``), mark used, revoke (admin)."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from powercontext.core.models import ApiToken

SCOPE_MAX_CHARS = 256


def token_digest(token: str) -> str:
    """The stored form of a token: its SHA-256, hex."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> str:
    return f"pct_{secrets.token_urlsafe(32)}"


@transaction.atomic(durable=True)
def api_token_create(
    *, user: Any, name: str = "", scopes: Iterable[str] = (), role: str = ApiToken.Role.AGENT
) -> tuple[ApiToken, str]:
    """Create a token for ``user``; return the row and the secret (shown once, never stored).

    ``scopes``: the scope ids the token may read and write; empty means every scope. Each must
    be a non-blank string of at most 256 characters (ValueError otherwise); duplicates collapse.
    ``role``: ``agent`` (read, capture, remember, revise, propose) or ``operator`` (also retire
    Memory entries and flush the pipeline); see ``ApiToken``.
    """
    if role not in ApiToken.Role.values:
        raise ValueError("a token's role is agent or operator")
    allowed = list(dict.fromkeys(scopes))
    for scope in allowed:
        if not isinstance(scope, str) or not scope.strip() or len(scope) > SCOPE_MAX_CHARS:
            raise ValueError("a scope must be a non-blank string of at most 256 characters")
    secret = new_token()
    token = ApiToken.objects.create(
        user=user, name=name, digest=token_digest(secret), prefix=secret[:8], scopes=allowed, role=role
    )
    return token, secret


# ``last_used_at`` is an operator's hint ("is this token still in use?"), not an audit log: it is
# written at most once per interval per token, so requests do not each cost a write.
LAST_USED_INTERVAL = timedelta(seconds=60)


def api_token_mark_used(*, token: ApiToken, now: datetime | None = None) -> bool:
    """Record that ``token`` was used; return whether a row was written.

    Skips the write when the loaded row shows a use within ``LAST_USED_INTERVAL``; otherwise one
    conditional UPDATE (``last_used_at IS NULL OR last_used_at < now - interval``), so concurrent
    requests write at most once per interval whatever they loaded.
    """
    when = now if now is not None else timezone.now()
    cutoff = when - LAST_USED_INTERVAL
    if token.last_used_at is not None and token.last_used_at >= cutoff:
        return False
    written = (
        ApiToken.objects.filter(pk=token.pk)
        .filter(Q(last_used_at__isnull=True) | Q(last_used_at__lt=cutoff))
        .update(last_used_at=when)
    )
    if written:
        token.last_used_at = when
    return bool(written)


@transaction.atomic(durable=True)
def api_token_revoke(*, token_ids: Iterable[int], now: datetime | None = None) -> int:
    """Revoke the listed tokens that are still active; return how many were revoked.

    Idempotent: a token that is already revoked keeps its original ``revoked_at``. A revoked
    token is refused by ``context_api.auth.authenticate`` from its next request on. The digest is
    kept, so a revoked token can never be re-issued by accident.
    """
    when = now if now is not None else timezone.now()
    return ApiToken.objects.filter(pk__in=list(token_ids), revoked_at__isnull=True).update(revoked_at=when)
