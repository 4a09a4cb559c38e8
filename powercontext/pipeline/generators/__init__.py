"""The generator registry, selected by ``POWERCONTEXT_GENERATOR``: ``rules`` (the default),
``off`` and ``openai``.

``openai`` lives in ``powercontext.pipeline.generators.openai`` and is imported lazily, by name,
only when selected; the module must expose ``create_generator() -> Generator`` (reading its own
settings). Selected but missing or broken, it is a configuration error, never a silent fallback.
"""

from __future__ import annotations

import importlib

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from powercontext.pipeline.generation import Generator
from powercontext.pipeline.rules import RulesGenerator

OPENAI_MODULE = "powercontext.pipeline.generators.openai"


def generator_name() -> str:
    return str(settings.POWERCONTEXT_GENERATOR)


def enabled() -> bool:
    """Whether the pipeline extracts anything at all (capabilities report this)."""
    return generator_name() != "off"


def generator_for(name: str) -> Generator | None:
    """The generator called ``name`` (None for ``off``). Raises ``ImproperlyConfigured`` for an
    unknown name or an ``openai`` module that is missing or has no ``create_generator``."""
    if name == "rules":
        return RulesGenerator()
    if name == "off":
        return None
    if name == "openai":
        try:
            module = importlib.import_module(OPENAI_MODULE)
        except ModuleNotFoundError as exc:
            if exc.name != OPENAI_MODULE:
                raise
            raise ImproperlyConfigured(
                "POWERCONTEXT_GENERATOR=openai, but this build has no OpenAI-compatible generator "
                f"({OPENAI_MODULE} is missing). Use rules or off."
            ) from None
        create = getattr(module, "create_generator", None)
        if create is None:
            raise ImproperlyConfigured(f"{OPENAI_MODULE} does not define create_generator().")
        generator: Generator = create()
        return generator
    raise ImproperlyConfigured(f"Unknown POWERCONTEXT_GENERATOR {name!r}: use rules, openai or off.")


def configured_generator() -> Generator | None:
    return generator_for(generator_name())
