"""The served contract: ``GET /v1/openapi.json`` (the repo's OpenAPI document as JSON) and
``GET /v1/docs`` (Redoc over it, its script a local static file from drf-spectacular-sidecar)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import yaml
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

CONTRACT_PATH = Path(__file__).resolve().parent / "contract" / "powercontext.openapi.yaml"


@functools.cache
def openapi_json() -> bytes:
    """The repo's OpenAPI document as JSON, converted once per process."""
    with CONTRACT_PATH.open(encoding="utf-8") as handle:
        document = yaml.safe_load(handle)
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def openapi_document(request: HttpRequest) -> HttpResponse:
    """``GET /v1/openapi.json``: the wire contract this server implements."""
    if request.method not in ("GET", "HEAD"):
        return HttpResponse(status=405, headers={"Allow": "GET, HEAD"})
    return HttpResponse(openapi_json(), content_type="application/json")


def api_docs(request: HttpRequest) -> HttpResponse:
    """``GET /v1/docs``: Redoc over the served document; its script is a local static file."""
    if request.method not in ("GET", "HEAD"):
        return HttpResponse(status=405, headers={"Allow": "GET, HEAD"})
    return render(request, "context_api/docs.html")
