"""marshmallow schemas as MCP tool schemas: JSON Schema conversion and argument loading.

Loaded only when a tool is declared with a marshmallow schema.
"""

from __future__ import annotations

import collections.abc as cabc
import contextlib
import sys
import typing as t

from ..convert import location
from .types import _enum_schema
from .types import _jsonable
from .validation import ArgumentError
from .validation import InputSpec
from .validation import _as_dict
from .validation import _error_text

if t.TYPE_CHECKING:
    import marshmallow as ma


class _MarshmallowInputSpec(InputSpec):
    """Arguments loaded by a marshmallow schema, which does its own validation."""

    def __init__(self, ma_schema: ma.Schema) -> None:
        super().__init__(_ma_object(ma_schema, load=True))
        self._ma = ma_schema

    def validate(self, arguments: cabc.Mapping[str, t.Any] | None) -> dict[str, t.Any]:
        error_class: type[Exception] = sys.modules["marshmallow"].ValidationError
        try:
            data = self._ma.load(_as_dict(arguments))
        except error_class as e:
            raise ArgumentError(_error_text(_ma_messages(e.messages))) from None  # type: ignore[attr-defined]
        if not isinstance(data, dict):
            raise TypeError(
                f"{type(self._ma).__name__}.load() returned {type(data).__name__}; a tool"
                " input schema must load a dict of arguments, so remove the @post_load hook"
                " that builds an object (or return a dict from it)."
            )
        return data


def _marshmallow_schema(obj: t.Any) -> ma.Schema | None:
    """Return a marshmallow schema instance for a schema class or instance, else ``None``."""
    ma_module = sys.modules.get("marshmallow")  # a schema object means it is imported
    if ma_module is None:
        return None
    if isinstance(obj, type) and issubclass(obj, ma_module.Schema):
        return t.cast("ma.Schema", obj())
    return obj if isinstance(obj, ma_module.Schema) else None


def _ma_field(field: t.Any, load: bool, seen: frozenset[type]) -> dict[str, t.Any]:
    """Describe one marshmallow field in JSON Schema."""
    from marshmallow import fields as mf
    from marshmallow import validate as mv

    schema: dict[str, t.Any]
    if isinstance(field, mf.Pluck):
        schema = _ma_field(field.schema.fields[field.field_name], load, seen)
        schema = {"type": "array", "items": schema} if field.many else schema
    elif isinstance(field, mf.Nested):
        nested = field.schema
        schema = (
            {"type": "object"}
            if type(nested) in seen
            else _ma_object(nested, load=load, seen=seen | {type(nested)})
        )
        schema = {"type": "array", "items": schema} if field.many else schema
    elif isinstance(field, mf.List):
        schema = {"type": "array", "items": _ma_field(field.inner, load, seen)}
    elif isinstance(field, mf.Tuple):
        items = [_ma_field(f, load, seen) for f in field.tuple_fields]
        schema = {"type": "array", "prefixItems": items, "minItems": len(items)}
        schema["maxItems"] = len(items)
    elif isinstance(field, mf.Mapping):
        schema = {"type": "object"}
        if field.value_field is not None:
            schema["additionalProperties"] = _ma_field(field.value_field, load, seen)
    elif isinstance(field, mf.Enum):
        by_value = field.by_value is not False
        schema = _enum_schema([m.value if by_value else m.name for m in field.enum])
    elif isinstance(field, (mf.Email, mf.Url, mf.UUID, mf.IPv4, mf.IPv6)):
        formats = {mf.Email: "email", mf.Url: "uri", mf.UUID: "uuid", mf.IPv4: "ipv4"}
        schema = {"type": "string", "format": formats.get(type(field), "ipv6")}
    elif isinstance(field, (mf.DateTime, mf.Date, mf.Time)):
        kind = "date-time" if isinstance(field, mf.DateTime) else type(field).__name__.lower()
        fmt = field.format
        schema = {"type": "number"} if fmt and fmt.startswith("timestamp") else {"type": "string"}
        if fmt in (None, "iso", "iso8601"):
            schema["format"] = kind
    elif isinstance(field, mf.Boolean):
        schema = {"type": "boolean"}
    elif isinstance(field, mf.Integer):
        schema = {"type": "integer"}
    elif isinstance(field, mf.Decimal) and not load:
        schema = {"type": "string"}  # dumped Decimals are sent as strings (no digit lost)
    elif isinstance(field, (mf.Number, mf.TimeDelta)):
        schema = {"type": "number"}
    elif isinstance(field, (mf.String, mf.IP)):
        schema = {"type": "string"}
    elif isinstance(field, mf.Constant):
        schema = {"const": _jsonable(field.constant)}
    else:  # Raw, Method, Function and custom fields
        schema = {}
    validators: list[t.Any] = list(field.validators)
    and_type: t.Any = getattr(mv, "And", ())  # not in every marshmallow 3 release
    for validator in validators:
        if isinstance(validator, and_type):
            validators.extend(validator.validators)
        elif isinstance(validator, mv.OneOf):
            schema["enum"] = [_jsonable(choice) for choice in validator.choices]
        elif isinstance(validator, mv.Length):
            kind = "Items" if schema.get("type") == "array" else "Length"
            for key, bound in (("min", validator.min), ("max", validator.max)):
                bound = validator.equal if validator.equal is not None else bound
                if bound is not None:
                    schema[f"{key}{kind}"] = bound
        elif isinstance(validator, mv.Range):
            for key, bound, inclusive in (
                ("minimum", validator.min, validator.min_inclusive),
                ("maximum", validator.max, validator.max_inclusive),
            ):
                if bound is not None:
                    schema[key if inclusive else f"exclusive{key.title()}"] = bound
        elif isinstance(validator, mv.Regexp) and isinstance(validator.regex.pattern, str):
            schema["pattern"] = validator.regex.pattern
    if field.allow_none and schema:
        if "enum" in schema:
            schema["enum"] = [*schema["enum"], None]
        if isinstance(schema.get("type"), str):
            schema["type"] = [schema["type"], "null"]
        elif "enum" not in schema:
            schema = {"anyOf": [schema, {"type": "null"}]}
    for key in ("title", "description"):
        if isinstance(field.metadata.get(key), str):
            schema[key] = field.metadata[key]
    default = field.load_default if load else field.dump_default
    if default is not sys.modules["marshmallow"].missing and not callable(default):
        with contextlib.suppress(Exception):  # a default the field cannot serialize
            schema["default"] = _jsonable(field._serialize(default, "", None))
    return schema


def _ma_object(
    ma_schema: ma.Schema, *, load: bool, seen: frozenset[type] = frozenset()
) -> dict[str, t.Any]:
    """Describe a marshmallow schema instance as a JSON Schema object."""
    seen = seen | {type(ma_schema)}
    properties: dict[str, t.Any] = {}
    required: list[str] = []
    for name, field in ma_schema.fields.items():
        if field.dump_only if load else field.load_only:
            continue
        key = field.data_key or name
        properties[key] = _ma_field(field, load, seen)
        if load and field.required:
            required.append(key)
    schema: dict[str, t.Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    if load and ma_schema.unknown == "raise":
        schema["additionalProperties"] = False
    return schema


def _ma_messages(messages: t.Any, path: tuple[t.Any, ...] = ()) -> list[str]:
    """Flatten marshmallow's nested error messages into ``'a.b': message`` strings."""
    if isinstance(messages, dict):
        return [
            m
            for key, value in messages.items()
            for m in _ma_messages(value, path if key == "_schema" else (*path, key))
        ]
    if isinstance(messages, list):
        return [m for item in messages for m in _ma_messages(item, path)]
    return [f"'{location(path)}': {messages}" if path else str(messages)]


def input_spec_from_marshmallow(schema: type[ma.Schema] | ma.Schema) -> InputSpec:
    """Build the input schema from a marshmallow schema; validation is ``schema.load``.

    Unknown keys are handled as the schema's ``unknown`` option says (``RAISE`` by
    default, which is published as ``"additionalProperties": false``).

    :raises TypeError: ``schema`` is not a marshmallow schema, or has ``many=True``.
    """
    instance = _marshmallow_schema(schema)
    if instance is None:
        raise TypeError(f"Expected a marshmallow Schema class or instance, got {schema!r}.")
    if instance.many:
        raise TypeError("A tool takes one object of arguments; use a schema without many=True.")
    return _MarshmallowInputSpec(instance)


def marshmallow_schema(obj: t.Any) -> ma.Schema | None:
    """Return a marshmallow schema instance for ``obj`` (class or instance), else ``None``."""
    return _marshmallow_schema(obj)


def marshmallow_object_schema(ma_schema: ma.Schema, *, load: bool) -> dict[str, t.Any]:
    """Return the JSON Schema of a marshmallow schema, for loading or for dumping."""
    return _ma_object(ma_schema, load=load)


__all__ = [
    "input_spec_from_marshmallow",
    "marshmallow_object_schema",
    "marshmallow_schema",
]
