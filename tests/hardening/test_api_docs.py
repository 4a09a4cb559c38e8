"""docs/api.md is generated from the served contract with an example for every operation, and the
docs stay inside the repository (no outside links, every relative link resolves)."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from django.conf import settings
from django.test import Client

from context_api.mcp.schema import to_json_schema

ROOT = Path(settings.BASE_DIR)
_spec = importlib.util.spec_from_file_location("api_docs", ROOT / "scripts" / "api_docs.py")
assert _spec is not None and _spec.loader is not None
api_docs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(api_docs)


@pytest.fixture(scope="module")
def served() -> dict[str, Any]:
    response = Client().get("/v1/openapi.json")
    assert response.status_code == 200
    document: dict[str, Any] = json.loads(response.content)
    return document


@pytest.fixture(scope="module")
def examples() -> dict[str, Any]:
    loaded: dict[str, Any] = api_docs.load_examples()
    return loaded


def _validator(schema: dict[str, Any], document: dict[str, Any]) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(to_json_schema(schema, document))


def test_every_served_operation_has_exactly_one_example(
    served: dict[str, Any], examples: dict[str, Any]
) -> None:
    served_ids = {operation["operationId"] for _, _, operation in api_docs.operations(served)}
    assert "flush_memory" in served_ids
    assert set(examples["operations"]) == served_ids


def test_every_example_validates_against_its_schemas(
    served: dict[str, Any], examples: dict[str, Any]
) -> None:
    for method, _path, operation in api_docs.operations(served):
        example = examples["operations"][operation["operationId"]]
        request = api_docs._request_schema(operation)
        if request is not None:
            _validator(request, served).validate(example["request"])
        else:
            assert "request" not in example, operation["operationId"]
        for parameter in operation.get("parameters", []):
            value = example["query"].get(parameter["name"])
            if value is not None or parameter.get("required"):
                _validator(parameter["schema"], served).validate(value)
        status = str(example["status"])
        assert status.startswith("2") and status in operation["responses"], operation["operationId"]
        response = api_docs._response_schema(operation["responses"][status], served)
        _validator(response, served).validate(example["response"])
        assert method in ("get", "post")


def test_the_error_examples_use_the_envelope(served: dict[str, Any], examples: dict[str, Any]) -> None:
    envelope = {"$ref": "#/components/schemas/ErrorResponse"}
    for error in examples["errors"].values():
        _validator(envelope, served).validate(error["response"])


def test_docs_api_md_is_what_the_script_renders(served: dict[str, Any], examples: dict[str, Any]) -> None:
    current = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    assert current == api_docs.render(served, examples), "docs/api.md is stale: run scripts/api_docs.py"


def _documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _prose(text: str) -> str:
    """The text outside fenced code blocks and inline code spans (where examples, not links, live)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    return re.sub(r"`[^`\n]*`", "", text)


def test_the_docs_link_nowhere_outside_the_repository() -> None:
    for path in _documents():
        text = path.read_text(encoding="utf-8")
        outside = [
            url
            for url in re.findall(r"https?://[^\s)>'\"]+", _prose(text))
            if not re.match(r"https?://(localhost|127\.0\.0\.1|\[::1\])[:/]", url)
        ]
        assert outside == [], f"{path.relative_to(ROOT)} links outside the repository: {outside}"
        assert "../shared" not in text, f"{path.relative_to(ROOT)} points to ../shared"


# Written on another branch of issue 18 (the decision record); drop this once it has landed.
ON_OTHER_BRANCHES = {ROOT / "docs" / "decisions.md"}


def test_every_relative_link_in_the_docs_resolves() -> None:
    for path in _documents():
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target):
                continue
            resolved = (path.parent / target).resolve()
            assert resolved.exists() or resolved in ON_OTHER_BRANCHES, (
                f"{path.relative_to(ROOT)}: broken link {target}"
            )


def test_the_readme_stays_short() -> None:
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 250


def _heading_anchors(text: str) -> set[str]:
    """The anchors of a Markdown file: GitHub's slug of every heading (``-1``, ``-2`` … for
    repeats) and explicit ``<a id="…">`` / ``<a name="…">`` anchors."""
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    for heading in re.findall(
        r"^#{1,6}\s+(.+?)\s*#*\s*$", re.sub(r"^```.*?^```", "", text, flags=re.M | re.S), flags=re.M
    ):
        heading = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
        base = api_docs.slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        anchors.add(base if count == 0 else f"{base}-{count}")
    anchors.update(re.findall(r"<a\s+(?:id|name)=\"([^\"]+)\"", text))
    return anchors


def test_the_slug_is_githubs() -> None:
    assert api_docs.slug("get_liveness") == "get_liveness"
    assert api_docs.slug("Upgrading (0.8 → 0.9): what to run") == "upgrading-08--09-what-to-run"
    assert _heading_anchors("# A\n## A\n```\n# not a heading\n```\n") == {"a", "a-1"}


def test_every_anchor_link_in_the_docs_resolves() -> None:
    documents = [
        ROOT / "README.md",
        *sorted((ROOT / "docs").glob("*.md")),
        *sorted((ROOT / "docs" / "agents").glob("*.md")),
    ]
    broken = []
    for path in documents:
        for target, anchor in re.findall(
            r"\]\(([^)#\s]*)#([^)\s]+)\)", _prose(path.read_text(encoding="utf-8"))
        ):
            if re.match(r"[a-z]+:", target):
                continue
            linked = (path.parent / target).resolve() if target else path
            if linked.suffix != ".md" or not linked.exists():
                continue  # a missing file is the relative-link test's failure
            if anchor not in _heading_anchors(linked.read_text(encoding="utf-8")):
                broken.append(f"{path.relative_to(ROOT)}: {target}#{anchor}")
    assert broken == []
