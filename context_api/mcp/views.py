"""The /mcp endpoint: hand the request to the transport and render its answer."""

from __future__ import annotations

import json

from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt


@csrf_exempt  # bearer tokens, no cookies; Origin is checked by the transport
def mcp_endpoint(request: HttpRequest) -> HttpResponse:
    # Imported on the first /mcp request, not with the URLconf: the MCP SDK's types take about a
    # second to build, which every management command that runs the system checks would pay.
    from context_api.mcp import transport

    answer = transport.handle(request)
    if answer.body is None:
        response = HttpResponse(status=answer.status)
    else:
        content = json.dumps(answer.body, ensure_ascii=False, separators=(",", ":"))
        response = HttpResponse(content, status=answer.status, content_type="application/json")
    for name, value in answer.headers.items():
        response[name] = value
    return response
