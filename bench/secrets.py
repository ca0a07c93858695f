"""Secrets are never written.

Every API key surfbench uses (and any credential-looking environment variable) is replaced by
``[redacted NAME]`` in results, transcripts, the response cache and error messages.

Model output is redacted too: a key echoed back by a provider's error message or a model must not land
in a table either.
"""

from __future__ import annotations

import os
import re
from typing import Any

_SECRETS: dict[str, str] = {}
_CREDENTIAL_NAME = re.compile(r"(API_KEY|APIKEY|_TOKEN|_SECRET|SECRET_KEY|PASSWORD)$", re.IGNORECASE)
MIN_LENGTH = 8  # shorter values would redact ordinary words


def register(value: str | None, label: str) -> None:
    """Redact ``value`` from now on (in this process and in the processes it starts)."""
    if value and len(value) >= MIN_LENGTH:
        _SECRETS[value] = label


def register_environment() -> None:
    """Treat every environment variable named like a credential (``*_API_KEY``, ``*_TOKEN``, ...) as secret."""
    for name, value in os.environ.items():
        if _CREDENTIAL_NAME.search(name):
            register(value, name)


def redact(text: str) -> str:
    for value, label in _SECRETS.items():
        if value in text:
            text = text.replace(value, f"[redacted {label}]")
    return text


def redact_value(value: Any) -> Any:
    """:func:`redact` through strings, lists, tuples and dicts (keys included)."""
    if not _SECRETS:
        return value
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact_value(k): redact_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(redact_value(v) for v in value)
    return value


register_environment()
