"""System checks of the core app."""

import os
from typing import Any

from django.core import checks

# Settings that no longer exist, still read from the environment only to say so.
REMOVED_SETTINGS = {
    "POWERCONTEXT_VECTOR_SEARCH": (
        "vector search always ranks exactly in process on both databases (the database vector"
        " paths were removed: docs/decisions.md); unset it"
    ),
}


def removed_settings(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Warn (``manage.py check``, ``migrate``, ``runserver``) when the environment still sets a
    removed setting: the service runs without it, and the operator should know it has no effect.
    Only the variable's name is reported, not its value."""
    return [
        checks.Warning(
            f"{name} is set but no longer has any effect",
            hint=hint,
            id="powercontext.W001",
        )
        for name, hint in REMOVED_SETTINGS.items()
        if name in os.environ
    ]
