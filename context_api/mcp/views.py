"""The /mcp endpoint: hand the request to the transport and render its answer."""

from __future__ import annotations

import json

from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from context_api.mcp import transport


@csrf_exempt  # bearer tokens, no cookies; Origin is checked by the transport
def mcp_endpoint(request: HttpRequest) -> HttpResponse:
    answer = transport.handle(request)
    if answer.body is None:
        response = HttpResponse(status=answer.status)
    else:
        content = json.dumps(answer.body, ensure_ascii=False, separators=(",", ":"))
        response = HttpResponse(content, status=answer.status, content_type="application/json")
    for name, value in answer.headers.items():
        response[name] = value
    return response
