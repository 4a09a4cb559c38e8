"""The purity "lint rule": pure modules import only the standard library and other pure modules.

House style: the prepared-context builder, its replay and the text analyzer take plain data and
return plain data. They must not reach for Django, settings, the clock, randomness, the
environment, logging or the network, so this test reads their source (it never imports them) and
fails on any such import, including dynamic ``__import__`` / ``importlib`` tricks.
"""

from __future__ import annotations

import ast
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

_CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["powercontext"]
# The one list of pure modules (also read by scripts/typecheck.sh for mypy --strict).
PURE_MODULES = {path.removesuffix(".py").replace("/", "."): ROOT / path for path in _CONFIG["pure-modules"]}
# Third-party libraries vetted as pure (deterministic, no I/O), listed next to the modules.
PURE_DEPENDENCIES = frozenset(_CONFIG["pure-dependencies"])

# Standard-library modules that bring in the clock, randomness, the environment, I/O or logging.
FORBIDDEN_STDLIB = {
    "os",
    "time",
    "datetime",
    "random",
    "secrets",
    "logging",
    "socket",
    "subprocess",
    "importlib",
    "pathlib",
    "shutil",
    "tempfile",
    "threading",
    "asyncio",
    "urllib",
    "http",
    "sqlite3",
    "uuid",
    "zoneinfo",
}
FORBIDDEN_CALLS = {"__import__", "open", "eval", "exec", "compile", "input", "breakpoint"}


def imported_modules(tree: ast.AST, module: str) -> list[str]:
    """Absolute names of everything a module imports (relative imports resolved)."""
    package = module.rpartition(".")[0]
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                anchor = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{anchor}.{base}" if base else anchor
                # "from . import x" may import submodule x.
                if not node.module:
                    names.extend(f"{base}.{alias.name}" for alias in node.names)
                    continue
            names.append(base)
    return names


def violations(source: str, module: str) -> list[str]:
    tree = ast.parse(source)
    found = []
    for name in imported_modules(tree, module):
        top = name.split(".")[0]
        if name in PURE_MODULES or any(name.startswith(pure + ".") for pure in PURE_MODULES):
            continue
        if top in PURE_DEPENDENCIES:
            continue
        if top == "django" or top == "rest_framework":
            found.append(f"imports {name} (Django)")
        elif top in FORBIDDEN_STDLIB:
            found.append(f"imports {name} (clock, randomness, environment or I/O)")
        elif top not in sys.stdlib_module_names:
            found.append(f"imports {name} (neither the standard library nor a pure module)")
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FORBIDDEN_CALLS:
            found.append(f"calls {node.func.id}()")
    return found


def test_the_pure_module_list_names_existing_files():
    assert {
        "powercontext.prepare.builder",
        "powercontext.search.fulltext.analyzer",
        "powercontext.core.families",
    } <= set(PURE_MODULES)
    assert all(path.is_file() for path in PURE_MODULES.values())


@pytest.mark.parametrize("module", sorted(PURE_MODULES))
def test_pure_modules_import_nothing_impure(module):
    path = PURE_MODULES[module]

    assert violations(path.read_text(encoding="utf-8"), module) == []


@pytest.mark.parametrize(
    "source",
    [
        "import django",
        "from django.conf import settings",
        "from django.utils import timezone",
        "import rest_framework",
        "import os",
        "import os.path",
        "from os import environ",
        "import time",
        "from time import monotonic",
        "import datetime",
        "from datetime import datetime",
        "import random",
        "import logging",
        "import socket",
        "import importlib",
        "import requests",
        "from powercontext import models",
        "from powercontext.core.models import Artifact",
        "from . import services",
        "from .models import Artifact",
        "def f():\n    import os",
        "__import__('os')",
        "open('/etc/passwd')",
    ],
)
def test_the_rule_catches_impure_imports(source):
    assert violations(source, "powercontext.search.fulltext.analyzer")


@pytest.mark.parametrize(
    "source",
    [
        "from __future__ import annotations",
        "import json",
        "import unicodedata",
        "from bisect import bisect_right",
        "from collections.abc import Sequence",
        "from dataclasses import dataclass",
        "from powercontext.prepare.builder import PreparedContextBuilder",
        "from .builder import PreparedContextBuilder",
        "from powercontext.search.fulltext.analyzer import analyze",
        "from snowballstemmer import EnglishStemmer",
    ],
)
def test_the_rule_allows_the_standard_library_and_pure_modules(source):
    module = "powercontext.prepare.replay" if "builder" in source else "powercontext.search"
    assert violations(source, module) == []
