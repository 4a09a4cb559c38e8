"""HTTP-level guards of the /v1 API, shared by every /v1 view (``V1Api``).

Browsers can reach the API on 127.0.0.1 from any web page, so /v1 refuses what only a browser
acting for another site would send: a foreign ``Origin``, ``Sec-Fetch-Site: cross-site``, and
bodies that are not JSON (an HTML form needs no CORS preflight for those). Token-level checks
(scopes, last use) live in ``auth`` and ``Operation.call`` instead, so every transport has them.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework.request import Request
from rest_framework.views import APIView

from powercontext.core.exceptions import InvalidRequest, OriginForbidden, UnsupportedMediaType

JSON_MEDIA_TYPE = "application/json"


def check_browser_origin(request: Any) -> None:
    """Refuse requests a browser sends on behalf of another site (403 ``origin_forbidden``).

    A browser page on any site can reach the API on 127.0.0.1, so a request that names a foreign
    ``Origin`` (one not in ``POWERCONTEXT_ALLOWED_ORIGINS``) or that the browser itself labels
    ``Sec-Fetch-Site: cross-site`` is refused before anything else happens. Agents, hooks and
    ``curl`` send neither header.
    """
    origin = request.META.get("HTTP_ORIGIN")
    if origin is not None:
        allowed = {o.lower() for o in settings.POWERCONTEXT_ALLOWED_ORIGINS}
        if origin.strip().rstrip("/").lower() not in allowed:
            raise OriginForbidden()
    if request.META.get("HTTP_SEC_FETCH_SITE", "").strip().lower() == "cross-site":
        raise OriginForbidden()


def check_json_body(request: Any) -> None:
    """A body-carrying request must declare ``application/json`` (parameters such as charset
    allowed), else 415. HTML forms can only send text/plain, urlencoded or multipart bodies
    without a CORS preflight, so this closes cross-site form posts. A POST with no body at all
    (and so no type) carries nothing to write; it gets the usual 422 for a missing JSON object."""
    if request.method != "POST":
        return
    media_type = request.META.get("CONTENT_TYPE", "").split(";", 1)[0].strip().lower()
    if media_type == JSON_MEDIA_TYPE or (not media_type and not _has_body(request)):
        return
    raise UnsupportedMediaType()


def _has_body(request: Any) -> bool:
    if "HTTP_TRANSFER_ENCODING" in request.META:
        return True
    length = request.META.get("CONTENT_LENGTH") or "0"
    return not length.isdigit() or int(length) > 0


def query_payload(request: Any) -> dict[str, Any]:
    """A GET operation's query string as a payload: each parameter at most once."""
    payload: dict[str, Any] = {}
    for name, values in request.GET.lists():
        if len(values) != 1:
            raise InvalidRequest(
                details={
                    "errors": [{"loc": ["query", name], "msg": "Must be given once.", "type": "repeated"}]
                }
            )
        payload[name] = values[0]
    return payload


class V1Api(APIView):
    """Base of every /v1 view: our envelope, no DRF authenticators, and the browser guards
    (Origin / Sec-Fetch-Site, JSON-only bodies) before any handler runs."""

    authentication_classes = ()
    permission_classes = ()

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        check_browser_origin(request)
        check_json_body(request)
        super().initial(request, *args, **kwargs)
