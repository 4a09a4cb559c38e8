"""JSON Schemas for the MCP tools, taken from the HTTP contract (OpenAPI 3.0) in the repo: the
served document, i.e. the main contract with its addenda merged in (``context_api.contract_apis``).

A tool's ``inputSchema`` is its operation's request body schema and its ``outputSchema`` the 2xx
response schema, with every ``$ref`` resolved inline so each schema is self-contained. OpenAPI
3.0's ``nullable`` becomes a JSON Schema ``null`` type; fields, limits and patterns are kept. An
object without an explicit ``additionalProperties`` gets ``false``, so an unknown argument is
always an error (the contract already says so almost everywhere; free-form ``metadata`` keeps its
explicit ``true``).
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

from context_api.contract_apis import served_document

# OpenAPI-only keywords with no JSON Schema meaning.
_DROPPED = {"nullable", "example", "discriminator", "xml", "externalDocs"}


@cache
def contract() -> dict[str, Any]:
    return served_document()


def _lookup(document: dict[str, Any], ref: str) -> Any:
    if not ref.startswith("#/"):
        raise ValueError(f"only local references are supported: {ref}")
    node: Any = document
    for part in ref[2:].split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def to_json_schema(node: Any, document: dict[str, Any], seen: tuple[str, ...] = ()) -> Any:
    """Resolve ``$ref``s and translate one OpenAPI 3.0 schema node to JSON Schema (2020-12)."""
    if isinstance(node, list):
        return [to_json_schema(item, document, seen) for item in node]
    if not isinstance(node, dict):
        return node
    nullable = node.get("nullable") is True
    if "$ref" in node:
        ref = node["$ref"]
        if ref in seen:
            raise ValueError(f"recursive schema reference: {ref}")
        resolved = to_json_schema(_lookup(document, ref), document, (*seen, ref))
        siblings = {k: v for k, v in node.items() if k not in _DROPPED and k != "$ref"}
        out: dict[str, Any] = {**resolved, **to_json_schema(siblings, document, seen)}
        return {"anyOf": [out, {"type": "null"}]} if nullable else out
    out = {}
    for key, value in node.items():
        if key in _DROPPED:
            continue
        if key == "properties":
            out[key] = {name: to_json_schema(sub, document, seen) for name, sub in value.items()}
        elif key in {"items", "not", "additionalProperties", "allOf", "anyOf", "oneOf"}:
            out[key] = to_json_schema(value, document, seen)
        else:
            out[key] = copy.deepcopy(value)
    if out.get("type") == "object" and "additionalProperties" not in out:
        out["additionalProperties"] = False
    if nullable:
        if "type" in out:
            out["type"] = [out["type"], "null"]
            if "enum" in out and None not in out["enum"]:
                out["enum"] = [*out["enum"], None]
        else:
            return {"anyOf": [out, {"type": "null"}]}
    return out


def _operation(operation_id: str) -> dict[str, Any]:
    for item in contract()["paths"].values():
        for method in item.values():
            if isinstance(method, dict) and method.get("operationId") == operation_id:
                return method
    raise KeyError(f"operation {operation_id} is not in the contract")


@cache
def input_schema(operation_id: str) -> dict[str, Any]:
    body = _operation(operation_id)["requestBody"]["content"]["application/json"]["schema"]
    schema: dict[str, Any] = to_json_schema(body, contract())
    return schema


@cache
def output_schema(operation_id: str) -> dict[str, Any] | None:
    """The success response schema, or None when the contract's is not an object (MCP wants one)."""
    responses = _operation(operation_id)["responses"]
    for status in sorted(responses):
        if str(status).startswith("2"):
            content = responses[status].get("content", {}).get("application/json")
            if content is None:
                return None
            schema: dict[str, Any] = to_json_schema(content["schema"], contract())
            return schema if schema.get("type") == "object" else None
    return None
