"""Bearer-token authentication for the /v1 API."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from powercontext.core.exceptions import Forbidden, Unauthorized
from powercontext.core.models import ApiToken
from powercontext.core.tokens import api_token_mark_used, token_digest


def authenticate(request: Any) -> ApiToken | None:
    """Return the request's valid token, or None when none was sent and none is required.

    A malformed or unknown token is always 401, whatever the deployment requires.
    """
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if not header:
        if settings.POWERCONTEXT_REQUIRE_TOKEN:
            raise Unauthorized()
        return None
    scheme, _, value = header.partition(" ")
    value = value.strip()
    if scheme.lower() != "bearer" or not value:
        raise Unauthorized()
    token = (
        ApiToken.objects.select_related("user")
        .filter(digest=token_digest(value), revoked_at__isnull=True, user__is_active=True)
        .first()
    )
    if token is None:
        raise Unauthorized()
    api_token_mark_used(token=token)
    return token


REVIEW_PERMISSION = "review.review_candidate"


def require_reviewer(request: Any) -> ApiToken:
    """The request's token, whose user must be a reviewer. Reviewer actions need one in every
    mode.

    No token: 401. A token whose user lacks the review permission (e.g. a propose-only token):
    403.
    """
    token = authenticate(request)
    if token is None:
        raise Unauthorized()
    if not token.user.has_perm(REVIEW_PERMISSION):
        raise Forbidden()
    return token


def require_operator(request: Any) -> ApiToken | None:
    """The request's token for an operator operation (flush the background pipeline): an
    ``operator`` token or a reviewer's token, else 403. Without a token (allowed only where
    tokens are optional: the embedded, single-user default) the local caller is the operator."""
    token = authenticate(request)
    if token is None:
        return None
    if not is_operator(token):
        raise Forbidden()
    return token


def is_operator(token: ApiToken) -> bool:
    """Whether ``token`` may act as an operator: an ``operator`` token or a reviewer's token."""
    return token.role == ApiToken.Role.OPERATOR or token.user.has_perm(REVIEW_PERMISSION)
