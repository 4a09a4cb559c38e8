"""The served contract: ``GET /v1/openapi.json`` (the repo's OpenAPI document as JSON) and
``GET /v1/docs`` (Redoc over it, its script a local static file from drf-spectacular-sidecar)."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import yaml
from django.http import HttpResponse
from django.shortcuts import render
from rest_framework.request import Request
from rest_framework.views import APIView

CONTRACT_DIR = Path(__file__).resolve().parent / "contract"
CONTRACT_PATH = CONTRACT_DIR / "powercontext.openapi.yaml"
# Addenda: operations the server implements beyond the main document, each a complete OpenAPI
# document of its own (its paths plus the components they reference).
ADDENDUM_PATHS = (
    CONTRACT_DIR / "powercontext-pipeline.openapi.yaml",
    CONTRACT_DIR / "powercontext-recovery.openapi.yaml",
    CONTRACT_DIR / "powercontext-feedback.openapi.yaml",
    CONTRACT_DIR / "powercontext-review.openapi.yaml",
)


def _load(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as handle:
        document: dict[str, Any] = yaml.safe_load(handle)
    return document


def served_document() -> dict[str, Any]:
    """The main contract with every addendum's paths and components merged in.

    A path or component both documents define must be identical (an addendum repeats the
    shared components it references); a disagreement is a contract error, raised here."""
    document = _load(CONTRACT_PATH)
    for addendum_path in ADDENDUM_PATHS:
        addendum = _load(addendum_path)
        for route, item in addendum["paths"].items():
            if document["paths"].setdefault(route, item) != item:
                raise ValueError(f"{addendum_path.name}: path {route} differs from the main contract")
        components = document.setdefault("components", {})
        for section, entries in addendum.get("components", {}).items():
            merged = components.setdefault(section, {})
            for name, value in entries.items():
                if merged.setdefault(name, value) != value:
                    raise ValueError(f"{addendum_path.name}: components.{section}.{name} differs")
    return document


@functools.cache
def openapi_json() -> bytes:
    """The served OpenAPI document (main contract plus addenda) as JSON, built once per process."""
    return json.dumps(served_document(), ensure_ascii=False, separators=(",", ":")).encode("utf-8")


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
