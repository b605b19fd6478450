"""Command-line ``key=value`` arguments, converted with a tool's input schema.

``flask mcp call add a=1 b=2`` sends ``{"a": 1, "b": 2}`` because the schema
of ``add`` says both are integers. Numbers, booleans and ``null`` are parsed,
objects and arrays are read as JSON, strings are taken as they are; a value
that does not fit names the argument and what it should look like.
"""

from __future__ import annotations

import math
import typing as t

import click

from .. import json_codec

#: Spellings of a boolean on the command line.
TRUE = frozenset({"true", "1", "yes", "y", "on"})
FALSE = frozenset({"false", "0", "no", "n", "off"})
EXAMPLES = {
    "integer": "an integer, e.g. 3",
    "number": "a number, e.g. 2.5",
    "boolean": "true or false",
    "object": 'a JSON object, e.g. \'{"key": "value"}\'',
    "array": "a JSON array, e.g. '[1, 2]'",
    "null": "null",
    "string": "text",
}


def split_pairs(pairs: t.Sequence[str], what: str) -> dict[str, str]:
    """Split ``key=value`` words into a dict.

    :param what: names the thing the arguments are for, in messages.
    :raises click.UsageError: a word has no ``=`` or no key, or a key repeats.
    """
    values: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.UsageError(
                f"Argument {pair!r} of {what} is not KEY=VALUE: write it as name=value "
                "(quote values holding spaces)."
            )
        if key in values:
            raise click.UsageError(f"Argument {key!r} of {what} is given twice.")
        values[key] = value
    return values


def _types(schema: t.Any) -> list[str]:
    """The JSON types a property schema allows, most specific first (``[]``: anything)."""
    if not isinstance(schema, dict):
        return []
    found: list[str] = []
    kind = schema.get("type")
    if isinstance(kind, str):
        found.append(kind)
    elif isinstance(kind, list):
        found.extend(k for k in kind if isinstance(k, str))
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in schema.get(key) or ():
            found.extend(k for k in _types(sub) if k not in found)
    if not found and "enum" in schema:
        found = sorted({_json_type(v) for v in schema["enum"]})
    if not found and "const" in schema:
        found = [_json_type(schema["const"])]
    order = ["null", "boolean", "integer", "number", "object", "array", "string"]
    return sorted(set(found), key=lambda k: order.index(k) if k in order else len(order))


def _json_type(value: t.Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return "string"


def _loads(text: str) -> t.Any:
    """Decode ``text`` as strict JSON, as a request body is read: no ``NaN`` or ``Infinity``.

    :raises ValueError: it is not JSON, or is nested too deeply to decode.
    """
    try:
        return json_codec.loads(text)
    except RecursionError:
        raise ValueError("it is nested too deeply") from None


def _as(kind: str, text: str) -> t.Any:
    """Return ``text`` as a value of JSON type ``kind``; raise ``ValueError`` if it is not one."""
    if kind == "string":
        return text
    if kind == "boolean":
        if text.lower() in TRUE:
            return True
        if text.lower() in FALSE:
            return False
        raise ValueError
    if kind == "null":
        if text == "null":
            return None
        raise ValueError
    value = _loads(text)
    if kind == "integer":
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif kind == "number":
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            return value
    elif (
        kind == "object" and isinstance(value, dict) or kind == "array" and isinstance(value, list)
    ):
        return value
    raise ValueError


def convert_value(name: str, text: str, schema: t.Any) -> t.Any:
    """Convert one argument's text with its property schema.

    :raises click.BadParameter: the text fits none of the schema's types; the
        message names the argument and shows what it should look like.
    """
    kinds = _types(schema)
    if not kinds:  # the schema does not say: JSON if it parses, else the text
        try:
            return _loads(text)
        except ValueError:
            return text
    for kind in kinds:
        try:
            return _as(kind, text)
        except ValueError:
            continue
    wanted = " or ".join(EXAMPLES.get(kind, kind) for kind in kinds)
    raise click.BadParameter(f"argument {name!r} must be {wanted}, not {text!r}.")


def convert_arguments(
    schema: dict[str, t.Any],
    pairs: t.Sequence[str],
    *,
    what: str,
    base: dict[str, t.Any] | None = None,
) -> dict[str, t.Any]:
    """Return the arguments of ``key=value`` words, converted with an input ``schema``.

    :param what: names the tool in messages (``"tool 'add'"``).
    :param base: arguments given as JSON (``--json``); the words override them.
    :raises click.UsageError: a word is malformed, names an argument the schema
        does not have (when it lists its properties), or a required one is missing.
    :raises click.BadParameter: a value does not fit its argument's type.
    """
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    assert isinstance(properties, dict)
    extra = schema.get("additionalProperties")
    closed = extra is False or (bool(properties) and not extra)
    arguments = dict(base or {})
    for key, text in split_pairs(pairs, what).items():
        if key not in properties:
            if closed:
                known = ", ".join(properties) or "no arguments"
                raise click.UsageError(f"Unknown argument {key!r} for {what}; it takes: {known}.")
            arguments[key] = convert_value(key, text, {})
            continue
        arguments[key] = convert_value(key, text, properties[key])
    required = schema.get("required") if isinstance(schema.get("required"), list) else []
    assert isinstance(required, list)
    missing = [name for name in required if name not in arguments]
    if missing:
        names = ", ".join(repr(name) for name in missing)
        example = " ".join(f"{name}=VALUE" for name in missing)
        raise click.UsageError(f"Missing argument {names} of {what}: add {example}.")
    return arguments


def load_json_object(text: str | None, option: str) -> dict[str, t.Any]:
    """Parse the JSON object given to ``option`` (``{}`` when there is none).

    :raises click.BadParameter: it is not valid JSON or not an object.
    """
    if text is None:
        return {}
    try:
        value = _loads(text)
    except ValueError as exc:
        raise click.BadParameter(f"is not valid JSON ({exc}).", param_hint=option) from None
    if not isinstance(value, dict):
        raise click.BadParameter("must be a JSON object, e.g. '{\"a\": 1}'.", param_hint=option)
    return value


__all__ = ["convert_arguments", "convert_value", "load_json_object", "split_pairs"]
