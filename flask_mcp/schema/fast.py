"""Plain-Python checks for the common subset of JSON Schema, compiled once per schema.

jsonschema spends tens of microseconds on a small list; a tool result or argument
that is valid (nearly always) can be confirmed with a few ``type()`` tests instead.
A compiled check answers only "certainly valid" (``True``); ``False`` means "not
sure", and the caller asks jsonschema, which also explains what is wrong. So a check
may be stricter than the schema, never looser.

Supported keywords: ``type``, ``enum``, ``const``, ``anyOf``, ``properties``,
``required``, ``additionalProperties``, ``propertyNames``, ``items`` (one schema), ``$ref`` into the
root's ``$defs``, and annotations (``title``, ``description``, ``default``,
``examples``, ``format``...: the validators built here have no format checker). A
schema with any other keyword, or another ``$schema`` than 2020-12, gets no check.
"""

from __future__ import annotations

import typing as t

Check = t.Callable[[t.Any], bool]

_DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
_ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "format",
        "$comment",
        "deprecated",
        "readOnly",
        "writeOnly",
    }
)
_KEYWORDS = _ANNOTATIONS | {
    "type",
    "enum",
    "const",
    "anyOf",
    "properties",
    "required",
    "additionalProperties",
    "propertyNames",
    "items",
    "$ref",
}
_SCALARS = (str, int, float, bool, type(None))
_PENDING: t.Any = object()


#: Exact types only: JSON data from the decoder or from :mod:`flask_mcp.convert` has no
#: subclasses, and anything else is left to jsonschema. An ``integer`` is an ``int``:
#: the ``1.0`` JSON Schema also counts goes to jsonschema, so that the input specs
#: know when to turn it into the ``int`` a handler declares.
_TYPES: dict[str, Check] = {
    "string": lambda value: type(value) is str,
    "integer": lambda value: type(value) is int,
    "number": lambda value: type(value) is int or type(value) is float,
    "boolean": lambda value: type(value) is bool,
    "null": lambda value: value is None,
    "array": lambda value: type(value) is list,
    "object": lambda value: type(value) is dict,
}


def _always(value: t.Any) -> bool:
    return True


def compile_fast(schema: t.Any) -> Check | None:
    """Compile ``schema`` into a "certainly valid" check, or ``None`` if it is not supported."""
    if not isinstance(schema, dict) or schema.get("$schema", _DRAFT_2020_12) != _DRAFT_2020_12:
        return None
    defs = schema.get("$defs", {})
    if not isinstance(defs, dict):
        return None
    body = {k: v for k, v in schema.items() if k not in ("$schema", "$defs")}
    compiled: dict[str, t.Any] = {}
    check = _compile(body, defs, compiled)
    if check is None or any(c is None for c in compiled.values()):
        return None
    return check


def _compile(schema: t.Any, defs: dict[str, t.Any], compiled: dict[str, t.Any]) -> Check | None:
    if schema is True:
        return _always
    if not isinstance(schema, dict) or set(schema) - _KEYWORDS:
        return None
    checks: list[Check] = []
    for keyword, build in _BUILDERS:
        if keyword in schema:
            check = build(schema, defs, compiled)
            if check is None:
                return None
            checks.append(check)
    object_check = _object(schema, defs, compiled)
    if object_check is None:
        return None
    if object_check is not _always:
        checks.append(object_check)
    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0]
    return lambda value: all(check(value) for check in checks)


def _type(schema: dict[str, t.Any], defs: t.Any, compiled: t.Any) -> Check | None:
    kinds = schema["type"]
    kinds = [kinds] if isinstance(kinds, str) else kinds
    if not isinstance(kinds, list) or not kinds or not all(k in _TYPES for k in kinds):
        return None
    tests = [_TYPES[k] for k in kinds]
    if len(tests) == 1:
        return tests[0]
    return lambda value: any(test(value) for test in tests)


def _values(allowed: list[t.Any]) -> Check | None:
    """Equality with one of ``allowed`` scalars, of the same type (1 is not True here)."""
    if not all(type(x) in _SCALARS for x in allowed):
        return None
    pairs = [(type(x), x) for x in allowed]
    return lambda value: any(type(value) is kind and value == x for kind, x in pairs)


def _enum(schema: dict[str, t.Any], defs: t.Any, compiled: t.Any) -> Check | None:
    allowed = schema["enum"]
    return _values(allowed) if isinstance(allowed, list) else None


def _const(schema: dict[str, t.Any], defs: t.Any, compiled: t.Any) -> Check | None:
    return _values([schema["const"]])


def _any_of(schema: dict[str, t.Any], defs: t.Any, compiled: t.Any) -> Check | None:
    branches = schema["anyOf"]
    if not isinstance(branches, list) or not branches:
        return None
    checks = [_compile(branch, defs, compiled) for branch in branches]
    if any(check is None for check in checks):
        return None
    return lambda value: any(check(value) for check in checks)  # type: ignore[misc]


def _items(schema: dict[str, t.Any], defs: t.Any, compiled: t.Any) -> Check | None:
    item = _compile(schema["items"], defs, compiled)
    if item is None:
        return None

    def items(value: t.Any) -> bool:
        if type(value) is not list:
            return not isinstance(value, list)  # the keyword applies to arrays only
        for element in value:  # noqa: SIM110 - a loop is faster than all() here
            if not item(element):
                return False
        return True

    return items


def _ref(schema: dict[str, t.Any], defs: dict[str, t.Any], compiled: t.Any) -> Check | None:
    ref = schema["$ref"]
    if not isinstance(ref, str) or not ref.startswith("#/$defs/"):
        return None
    name = ref.removeprefix("#/$defs/")
    if "/" in name or "~" in name or name not in defs:
        return None
    if name not in compiled:
        compiled[name] = _PENDING  # a recursive definition refers to itself lazily
        compiled[name] = _compile(defs[name], defs, compiled)
    return lambda value: bool(compiled[name](value))


def _object(schema: dict[str, t.Any], defs: t.Any, compiled: t.Any) -> Check | None:
    """The check of ``properties``, ``required``, ``additionalProperties`` and
    ``propertyNames`` together."""
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if not isinstance(properties, dict) or not isinstance(required, list):
        return None
    if not all(isinstance(name, str) for name in required):
        return None
    checks = {name: _compile(spec, defs, compiled) for name, spec in properties.items()}
    extra_check = None if extra is False else _compile(extra, defs, compiled)
    if any(check is None for check in checks.values()) or (extra is not False and not extra_check):
        return None
    names_check = _compile(schema.get("propertyNames", True), defs, compiled)
    if names_check is None:
        return None
    if names_check is not _always:
        values_check = _object({**schema, "propertyNames": True}, defs, compiled)
        if values_check is None:
            return None
        return lambda value: (
            not isinstance(value, dict)
            if type(value) is not dict
            else all(map(names_check, value)) and values_check(value)
        )
    if not properties and not required and extra_check is _always:
        return _always
    pairs = list(checks.items())
    names = frozenset(properties)

    def check_object(value: t.Any) -> bool:
        if type(value) is not dict:
            return not isinstance(value, dict)  # the keywords apply to objects only
        for name in required:
            if name not in value:
                return False
        for name, check in pairs:
            if name in value and not check(value[name]):  # type: ignore[misc]
                return False
        if extra_check is _always:
            return True
        for name, item in value.items():
            if name not in names and (extra_check is None or not extra_check(item)):
                return False
        return True

    return check_object


_BUILDERS: tuple[tuple[str, t.Callable[..., Check | None]], ...] = (
    ("type", _type),
    ("enum", _enum),
    ("const", _const),
    ("anyOf", _any_of),
    ("items", _items),
    ("$ref", _ref),
)


__all__ = [
    "Check",
    "compile_fast",
]
