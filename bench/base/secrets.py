"""Secrets are never written.

Every credential surfbench can know of is replaced by ``[redacted LABEL]`` (the label names where it came
from, never the value) in results, transcripts, run.json, the response cache, Hydra's console lines and
error messages. Model output is redacted too: a key echoed back by a provider's error message or a model
must not land in a table either. What counts as a credential, by value, wherever it comes from:

- the API key of every model config (``api_key_env``), registered when its client is made;
- the value of every environment variable with a credential name (:func:`is_credential_name`), read at
  import, so in every process surfbench starts (joblib and Ray workers inherit the environment);
- the value of every override with a credential name (``+backend_options.auth_token=...``) and the
  password of every URL in an override (``model.api_base=http://user:PASSWORD@host/v1``)
  (:func:`register_overrides`; ``surfbench run`` registers its overrides, and each Hydra job its own);
- the password of every URL in an environment variable (``DATABASE_URL=postgres://app:PASSWORD@db``);
- by pattern, the password of any ``scheme://user:password@host`` in any text redacted, registered or
  not (a URL the model writes, or one in a task prompt). A user name alone (``https://TOKEN@host``) is
  not taken for a password: ``ssh://git@host`` is too common. Such a password is registered as well
  (:func:`register_text`, called by :func:`redact` before it replaces anything), so that the model
  echoing it alone later (``the password is PASSWORD``) is redacted too; the passwords in the URLs of a
  suite's task turns are registered when the suite is loaded, before any model call, since the model
  may echo one before the turn holding its URL is ever written.

Registered values are also redacted in the forms JSON and URLs give them (escaped quotes, backslashes,
``%40``), since results and the cache hold JSON text.

Which values are too common to redact. A registered value is replaced wherever it occurs, in every text,
so a short or common one would corrupt innocent text everywhere (``AUTH_ENABLED=true`` would turn every
JSON ``true`` of every table into a label). Not registered, hence not redacted: values shorter than
:data:`MIN_LENGTH` (4) characters, switch words (``true``, ``off``, ``none``, ...; :data:`COMMON_VALUES`)
and numbers of fewer than 8 digits (``AUTH_TIMEOUT=3600``). A 4-character key is redacted; a 3-character
one is not (no real credential is that short). A password found by pattern in free text (a prompt, a
model's answer, a tool result) is anyone's example, so it is registered only when it has at least
:data:`TEXT_MIN_LENGTH` (6) characters and is not a placeholder (:data:`PLACEHOLDERS`: ``password``,
``secret``, ``****``, ...): ``http://user:test@localhost`` must not turn every ``pytest`` into a label.
Its own URL is redacted by pattern either way.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, unquote

_SECRETS: dict[str, str] = {}
_LOCK = threading.Lock()  # redact() registers as it goes, on the worker threads of a concurrent cell too
MIN_LENGTH = 4
"""Shorter values are not redacted (see the module docstring)."""
TEXT_MIN_LENGTH = 6
"""Shorter passwords found by pattern in free text are redacted only inside their URL."""
PLACEHOLDERS = frozenset(
    {"password", "passwd", "pass", "secret", "token", "admin", "root", "user", "username", "changeme", "example",
     "test", "demo", "guest"}
)  # fmt: skip
"""Passwords of example URLs (``https://user:password@host``), redacted only inside their URL."""

CREDENTIAL_WORDS = frozenset(
    {
        "KEY", "APIKEY", "TOKEN", "SECRET", "SECRETS", "PASSWORD", "PASSWORDS", "PASSWD", "PASS", "PAT",
        "AUTH", "CREDENTIAL", "CREDENTIALS",
    }
)  # fmt: skip
"""A name is a credential's when one of its parts is one of these words (``GITHUB_PAT``, ``SMTP_PASS``)."""
CREDENTIAL_SUFFIXES = ("APIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIALS")
"""... or when a part ends with one of these (``DBPASSWORD``, ``GHTOKEN``): long enough to mean it."""
NOT_THE_CREDENTIAL = frozenset(
    {"ENV", "PATH", "FILE", "DIR", "SOCK", "URL", "HOST", "PORT", "TYPE", "MODE", "METHOD", "ENABLED", "TIMEOUT"}
)
"""A last part saying the value is *about* a credential, not the credential: ``api_key_env`` names a
variable (redacting it would hide which variable is missing), ``HF_TOKEN_PATH`` is a file, ``AUTH_URL``
an address (its password, if any, is still redacted as a URL's), ``SSH_AUTH_SOCK`` a socket."""
COMMON_VALUES = frozenset({"true", "false", "yes", "no", "on", "off", "none", "null", "auto", "enabled", "disabled"})
"""Switch words never redacted, whatever the variable's name."""

_NAME_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# The password of a URL's userinfo. Anchored at "://" and bounded by characters a URL cannot hold
# unescaped (whitespace, quotes, "/", "@"), so a scan is linear even on a megabyte of text without spaces.
_URL_PASSWORD = re.compile(r"(?<=://)([^\s/?#@:\"'<>\\]*):([^\s/?#@\"'<>\\]+)@")
URL_PASSWORD_LABEL = "url password"


def name_parts(name: str) -> list[str]:
    """``name`` split into upper-case words at ``_``, ``.``, ``-`` and camelCase: ``model.apiKey`` -> MODEL API KEY."""
    return [part.upper() for part in _NAME_PART.findall(name)]


def is_credential_name(name: str) -> bool:
    """Whether a variable or override named ``name`` holds a credential.

    Compared by parts, not by substring, to stay faithful to "KEY, TOKEN, SECRET, PASSWORD, PASS, PAT,
    AUTH, CREDENTIAL" without the false positives a substring brings: ``PATH``, ``PYTHONPATH``
    (contain PAT), ``PASSTHROUGH`` (PASS), ``TOKENIZERS_PARALLELISM`` (TOKEN, value ``false``),
    ``KEYBOARD``, ``MAX_TOKENS`` are not credentials; ``GITHUB_PAT``, ``AWS_SECRET_ACCESS_KEY``,
    ``SHORT_API_KEY``, ``MY_SERVICE_TOKEN``, ``DBPASSWORD``, ``apiKey`` are. A last part in
    :data:`NOT_THE_CREDENTIAL` (``api_key_env``, ``SSH_AUTH_SOCK``) says it is not.
    """
    parts = name_parts(name)
    if not parts or parts[-1] in NOT_THE_CREDENTIAL:
        return False
    return any(part in CREDENTIAL_WORDS or part.endswith(CREDENTIAL_SUFFIXES) for part in parts)


def worth_redacting(value: str) -> bool:
    """Whether ``value`` is distinctive enough to be replaced everywhere (see the module docstring)."""
    text = value.strip()
    if len(text) < MIN_LENGTH or text.lower() in COMMON_VALUES:
        return False
    return not (text.isdigit() and len(text) < 8)


def register(value: str | None, label: str) -> None:
    """Redact ``value`` from now on (in this process), in the forms JSON and URLs give it too."""
    if not value or not worth_redacting(value):
        return
    forms = {value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1], quote(value, safe="")}
    with _LOCK:
        for form in forms:
            if worth_redacting(form):
                _SECRETS.setdefault(form, label)  # the first label stays: the api_key_env name is the clearest


def register_text(text: str, label: str = URL_PASSWORD_LABEL) -> None:
    """Redact from now on, alone too, the password of every ``scheme://user:password@host`` in ``text``.

    For free text (a task's turns, model output, a tool result): placeholders and passwords shorter
    than :data:`TEXT_MIN_LENGTH` are left to the pattern (see the module docstring).
    """
    for password in url_passwords(text):
        text_form = password.strip()
        if len(text_form) >= TEXT_MIN_LENGTH and text_form.lower() not in PLACEHOLDERS and len(set(text_form)) > 1:
            register(password, label)


def url_passwords(text: str) -> list[str]:
    """The passwords of the ``scheme://user:password@host`` URLs in ``text`` (as written, and decoded)."""
    found = [m.group(2) for m in _URL_PASSWORD.finditer(text)] if "://" in text else []
    return found + [unquote(p) for p in found if unquote(p) != p]


def register_url_passwords(value: str, name: str) -> None:
    """Treat as secret the password of every ``scheme://user:password@host`` in the setting ``name``'s value.

    A setting is not free text: unlike :func:`register_text` a short password is registered too.
    """
    for password in url_passwords(value):
        register(password, f"{name} password")


def register_environment(environ: dict[str, str] | None = None) -> None:
    """Treat as secret every credential-named environment variable and every URL password in one."""
    for name, value in (os.environ if environ is None else environ).items():
        if is_credential_name(name):
            register(value, name)
        register_url_passwords(value, name)


def register_overrides(overrides: Iterable[str]) -> None:
    """Treat as secret the values of Hydra overrides with a credential key and every URL password in one.

    ``+model.api_key='sk-...'``, ``++backend_options.auth_token=...`` (each value of a sweep
    ``key=a,b`` too), ``model.api_base=http://user:PASSWORD@host/v1``. Plain text parsing, not Hydra's
    grammar: an override Hydra will refuse as malformed must be redacted in Hydra's error message too.
    """
    for override in overrides:
        key, sep, value = override.lstrip("+~").partition("=")
        if not sep:
            continue
        value = _unquoted(value.strip())
        if is_credential_name(key):
            for piece in (value, *value.split(",")):
                register(_unquoted(piece.strip()), key)
        register_url_passwords(value, key)


def _unquoted(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def redact(text: str) -> str:
    """``text`` with every registered secret and every URL password replaced by ``[redacted LABEL]``.

    The URL passwords of ``text`` are registered first (:func:`register_text`): redacted alone here and
    in every later text.
    """
    if "://" in text:
        register_text(text, URL_PASSWORD_LABEL)
    with _LOCK:
        known = dict(_SECRETS)
    present = [value for value in known if value in text]
    if present:
        # one pass, longest first: a secret inside another (a password inside its URL) and a label
        # holding a secret's text are never replaced twice
        pattern = re.compile("|".join(re.escape(v) for v in sorted(present, key=len, reverse=True)))
        text = pattern.sub(lambda m: f"[redacted {known[m.group()]}]", text)
    if "://" in text:
        text = _URL_PASSWORD.sub(lambda m: f"{m.group(1)}:[redacted {URL_PASSWORD_LABEL}]@", text)
    return text


def redact_value(value: Any) -> Any:
    """:func:`redact` through strings, lists, tuples and dicts (keys included)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact_value(k): redact_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(redact_value(v) for v in value)
    return value


class RedactingFormatter(logging.Formatter):
    """A log formatter that redacts: Hydra's launchers log every job's overrides (configs/config.yaml)."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


register_environment()
