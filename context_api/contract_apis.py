"""The served contract: ``GET /v1/openapi.json`` (the repo's OpenAPI document as JSON) and
``GET /v1/docs`` (Redoc over it, its script a local static file from drf-spectacular-sidecar)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import yaml
from django.http import HttpResponse
from django.shortcuts import render
from rest_framework.request import Request
from rest_framework.views import APIView

CONTRACT_PATH = Path(__file__).resolve().parent / "contract" / "powercontext.openapi.yaml"


@functools.cache
def openapi_json() -> bytes:
    """The repo's OpenAPI document as JSON, converted once per process."""
    with CONTRACT_PATH.open(encoding="utf-8") as handle:
        document = yaml.safe_load(handle)
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


class _PublicGetView(APIView):
    """A read-only /v1 page: no authentication; other methods get the JSON 405 envelope and
    OPTIONS answers like every other /v1 route."""

    authentication_classes = ()
    permission_classes = ()


class OpenApiDocumentApi(_PublicGetView):
    def get(self, request: Request) -> HttpResponse:
        """``GET /v1/openapi.json``: the wire contract this server implements."""
        return HttpResponse(openapi_json(), content_type="application/json")


class ApiDocsApi(_PublicGetView):
    def get(self, request: Request) -> HttpResponse:
        """``GET /v1/docs``: Redoc over the served document; its script is a local static file."""
        return render(request, "context_api/docs.html")
