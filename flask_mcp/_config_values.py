"""Converters of ``MCP_*`` configuration values: each checks a value and returns its type.

:data:`flask_mcp.config.KEYS` names the converter of every key; a converter
raises ``ValueError`` with what the value must be.
"""

from __future__ import annotations

import json
import typing as t
from urllib.parse import urlsplit

from .protocol import CACHE_SCOPES
from .protocol import LOG_LEVELS


def positive_int(value: t.Any) -> int:
    number = int(value)
    if number <= 0:
        raise ValueError("must be a positive integer")
    return number


def optional_seconds(value: t.Any) -> float | None:
    if value in (None, "", 0, "0"):
        return None
    number = float(value)
    if number <= 0:
        raise ValueError("must be a positive number of seconds, or None to disable")
    return number


def seconds(value: t.Any) -> float:
    number = float(value)
    if number <= 0:
        raise ValueError("must be a positive number of seconds")
    return number


def as_bool(value: t.Any) -> bool:
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off", ""):
            return False
        raise ValueError("must be a boolean (true/false)")
    return bool(value)


def optional_bool(value: t.Any) -> bool | None:
    return None if value is None else as_bool(value)


def path(value: t.Any) -> str:
    text = str(value)
    if not text.startswith("/") or (len(text) > 1 and text.endswith("/")):
        raise ValueError("must start with '/' and not end with '/', for example '/mcp'")
    return text


def string_list(value: t.Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",") if part.strip()]
    return tuple(str(item) for item in value)


def log_level(value: t.Any) -> str:
    level = str(value).lower()
    if level not in LOG_LEVELS:
        raise ValueError(f"must be one of {', '.join(LOG_LEVELS)}")
    return level


def non_negative_int(value: t.Any) -> int:
    number = int(value)
    if number < 0:
        raise ValueError("must be an integer >= 0")
    return number


def cache_scope(value: t.Any) -> str:
    scope = str(value).lower()
    if scope not in CACHE_SCOPES:
        raise ValueError(f"must be {' or '.join(map(repr, CACHE_SCOPES))}")
    return scope


def as_str(value: t.Any) -> str:
    return str(value)


def optional_str(value: t.Any) -> str | None:
    return None if value in (None, "") else str(value)


def non_negative_seconds(value: t.Any) -> float:
    number = float(value)
    if number < 0:
        raise ValueError("must be a number of seconds >= 0")
    return number


def scopes(value: t.Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = value.replace(",", " ").split()
    return tuple(dict.fromkeys(str(item) for item in value))


def json_object(value: t.Any) -> dict[str, t.Any]:
    if value in (None, ""):
        return {}
    if isinstance(value, str):
        value = json.loads(value)
    if not isinstance(value, t.Mapping):
        raise ValueError("must be a dict (a JSON object in an environment variable)")
    return dict(value)


def scope_map(value: t.Any) -> dict[str, tuple[str, ...]]:
    return {str(key): scopes(granted) or () for key, granted in json_object(value).items()}


def url(value: t.Any) -> str:
    text = str(value).strip()
    parts = urlsplit(text)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ValueError(
            "must be an absolute http(s) URL with a host, for example 'https://mcp.example.com/mcp'"
        )
    if "#" in text:
        raise ValueError("must not contain a fragment ('#...'); remove it")
    return text


def optional_url(value: t.Any) -> str | None:
    return None if value in (None, "") else url(value)


def url_list(value: t.Any) -> tuple[str, ...] | None:
    items = string_list(value)
    return None if items is None else tuple(url(item) for item in items)
