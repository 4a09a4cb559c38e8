"""OPTIONS on /v1 and /health: a 200 with the ``Allow`` header and an empty body.

DRF advertises OPTIONS in every ``Allow`` header, so OPTIONS must be answered. The contract
defines no OPTIONS body, and DRF's default metadata would expose serializer and class names, so
the body is empty (DRF drops the Content-Type of an empty body).
"""

from __future__ import annotations

from typing import Any

from rest_framework.metadata import BaseMetadata


class AllowOnlyMetadata(BaseMetadata):
    def determine_metadata(self, request: Any, view: Any) -> None:
        return None
