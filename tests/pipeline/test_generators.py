"""The generator registry (POWERCONTEXT_GENERATOR)."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured

from powercontext.pipeline import generators
from powercontext.pipeline.rules import RulesGenerator


def test_rules_is_the_default_and_off_means_no_generator(settings: Any) -> None:
    assert isinstance(generators.configured_generator(), RulesGenerator) and generators.enabled()
    settings.POWERCONTEXT_GENERATOR = "off"
    assert generators.configured_generator() is None and not generators.enabled()


def test_openai_selected_but_missing_is_a_clear_configuration_error(monkeypatch: Any) -> None:
    monkeypatch.setitem(sys.modules, generators.OPENAI_MODULE, None)  # import fails like a missing module

    with pytest.raises(ImproperlyConfigured, match="openai"):
        generators.generator_for("openai")


def test_openai_is_imported_lazily_by_name(monkeypatch: Any) -> None:
    module = types.ModuleType(generators.OPENAI_MODULE)
    sentinel = RulesGenerator()
    module.create_generator = lambda: sentinel  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, generators.OPENAI_MODULE, module)

    assert generators.generator_for("openai") is sentinel


def test_an_unknown_name_is_refused() -> None:
    with pytest.raises(ImproperlyConfigured):
        generators.generator_for("gpt")


def test_openai_is_built_from_its_settings(settings: Any) -> None:
    from powercontext.pipeline.generators.openai import OpenAIGenerator

    settings.POWERCONTEXT_GENERATOR = "openai"
    settings.POWERCONTEXT_OPENAI_BASE_URL = "http://127.0.0.1:9/v1/"
    settings.POWERCONTEXT_OPENAI_MODEL = "local-model"
    settings.POWERCONTEXT_OPENAI_API_KEY = "not-a-real-key"
    settings.POWERCONTEXT_OPENAI_TIMEOUT = 3.0

    generator = generators.configured_generator()

    assert isinstance(generator, OpenAIGenerator)
    assert (generator.base_url, generator.model, generator.timeout) == (
        "http://127.0.0.1:9/v1",
        "local-model",
        3.0,
    )
    assert "not-a-real-key" not in repr(generator)
