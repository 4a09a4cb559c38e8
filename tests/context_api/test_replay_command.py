"""manage.py replay_context: the endpoint's builder, in bulk, from JSON Lines."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from powercontext.prepare.builder import SCHEMA

ROOT = Path(__file__).resolve().parents[2]
REF = {"family": "memory", "artifact_id": "memory", "revision": 3}


def case(case_id: int, text: str, ref: dict[str, object] = REF) -> dict[str, object]:
    return {
        "case_id": case_id,
        "request": {"scope_id": "s", "query": "q", "max_bytes": 8000},
        "memory_ref": REF,
        "memory_hits": [
            {
                "memory_ref": ref,
                "entry_id": f"e{case_id}",
                "entry_version_id": f"v{case_id}",
                "text": text,
                "score": 0.5,
                "matched_by": ["fts"],
            }
        ],
        "experience_hits": [],
    }


def test_thousands_of_cases_come_back_in_order_in_one_process() -> None:
    cases = [case(i, f"note {i}") for i in range(3000)]
    cases[7] = case(7, "   ")  # a bad hit: skipped, so the pack is empty
    cases[11] = case(11, "wrong head", ref={**REF, "revision": 2})  # invariant failure
    stdin = "\n".join(json.dumps(c) for c in cases) + "\nnot json\n"

    result = subprocess.run(
        [sys.executable, "manage.py", "replay_context"],
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )

    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(lines) == 3001
    assert [line["case_id"] for line in lines[:3000]] == list(range(3000))
    assert lines[0]["response"]["schema"] == SCHEMA and lines[0]["response"]["status"] == "ready"
    assert '"content":"note 0"' in lines[0]["response"]["content"]
    assert lines[7]["response"] == {"schema": SCHEMA, "status": "empty", "content": None, "content_bytes": 0}
    assert lines[11]["error"] == "invariant" and "wrong head" not in lines[11]["message"]
    assert lines[3000]["case_id"] is None and lines[3000]["error"] == "invalid_case"
