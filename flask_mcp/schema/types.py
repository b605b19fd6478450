"""JSON Schema from Python type hints, and return values as plain JSON data.

Type hints map to JSON Schema as follows: ``str``, ``int``, ``float`` (``number``),
``bool``, ``None``, ``Optional``/``Union``, ``list``, ``tuple``, ``set``,
``dict[str, X]`` (keys of a string Enum, ``Literal``, ``UUID`` or date are published as
``propertyNames`` and converted), ``Literal``, :class:`~enum.Enum` subclasses, ``TypedDict``,
``NamedTuple``, dataclasses and ``Any``. ``datetime``, ``date`` and ``time`` are
strings of format ``date-time``, ``date`` and ``time`` (ISO 8601), ``UUID`` a string of
format ``uuid``, ``Path`` a string of format ``path``; a ``Decimal`` parameter takes a
number or a numeric string and a ``Decimal`` result is a string (no digit lost).
pydantic models are described by their own JSON Schema (see
:mod:`flask_mcp.schema.from_pydantic`). ``Annotated[X, "text"]`` (or a metadata object with a
``description`` attribute) adds a description, ``Annotated[X, {...}]`` merges JSON Schema
keywords. :mod:`flask_mcp.schema` builds tool input and output specs from them.
Docstrings give descriptions: :func:`param_docs` reads their ``:param`` fields.
"""

from __future__ import annotations

import collections.abc as cabc
import contextlib
import dataclasses
import datetime
import decimal
import enum
import inspect
import pathlib
import re
import sys
import types
import typing as t
import uuid

from ..convert import pydantic_base
from ..convert import to_json
from .from_pydantic import model_schema
from .from_pydantic import model_validator
from .validation import _Convert
from .validation import compile_validator

#: Values to plain JSON: the table of :mod:`flask_mcp.convert`.
_jsonable = to_json
NoneType = type(None)
_SIMPLE: dict[t.Any, str] = {str: "string", bool: "boolean", int: "integer", float: "number"}
_PARAM_DOC = re.compile(r":param\s+(?:[^:]*\s)?(\w+)\s*:(.*)")
UNION_TYPES: tuple[t.Any, ...] = (t.Union, types.UnionType)
_SEQUENCES = (list, cabc.Sequence, cabc.MutableSequence, cabc.Iterable, cabc.Collection)
_SETS = (set, frozenset, cabc.Set, cabc.MutableSet)
_QUALIFIERS = ("Required", "NotRequired", "ReadOnly")
_MAPPINGS = (dict, cabc.Mapping, cabc.MutableMapping)
#: Types sent as strings; ``datetime`` before ``date``, of which it is a subclass.
_STRING_FORMATS: tuple[tuple[type, str], ...] = (
    (datetime.datetime, "date-time"),
    (datetime.date, "date"),
    (datetime.time, "time"),
    (uuid.UUID, "uuid"),
    (pathlib.PurePath, "path"),
)


def _json_type(value: t.Any) -> str | None:
    """The JSON Schema type name of a literal value."""
    if isinstance(value, bool):
        return "boolean"
    for cls, name in ((int, "integer"), (float, "number"), (str, "string")):
        if isinstance(value, cls):
            return name
    return "null" if value is None else None


def _enum_schema(values: list[t.Any]) -> dict[str, t.Any]:
    """An ``enum`` schema, with ``type`` when all values share one."""
    values = [v.value if isinstance(v, enum.Enum) else v for v in values]
    kinds = {_json_type(v) for v in values}
    if len(kinds) == 1 and None not in kinds:
        return {"type": kinds.pop(), "enum": values}
    return {"enum": values}


def _class_fields(cls: type) -> tuple[dict[str, t.Any], dict[str, t.Any]] | None:
    """Field hints and defaults of a TypedDict, NamedTuple or dataclass, else ``None``."""
    if t.is_typeddict(cls):
        hints = t.get_type_hints(cls, include_extras=True)
        optional = set(cls.__optional_keys__)  # type: ignore[attr-defined]
        for name, field_hint in hints.items():  # string annotations hide the qualifiers
            qualifier = getattr(t.get_origin(field_hint), "_name", None)
            if qualifier in ("Required", "NotRequired"):
                (optional.discard if qualifier == "Required" else optional.add)(name)
        return hints, {name: dataclasses.MISSING for name in optional}
    if issubclass(cls, tuple) and hasattr(cls, "_fields"):
        hints = t.get_type_hints(cls, include_extras=True)
        return {n: hints.get(n, t.Any) for n in cls._fields}, dict(cls._field_defaults)  # type: ignore[attr-defined]
    if dataclasses.is_dataclass(cls):
        hints = t.get_type_hints(cls, include_extras=True)
        fields = [f for f in dataclasses.fields(cls) if f.init]
        defaults = {
            f.name: f.default
            for f in fields
            if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        }
        return {f.name: hints.get(f.name, t.Any) for f in fields}, defaults
    return None


def _object_schema(
    hints: dict[str, t.Any],
    defaults: dict[str, t.Any],
    docs: dict[str, str],
    seen: tuple[t.Any, ...],
    output: bool = False,
) -> dict[str, t.Any]:
    """An object schema with one property per hint, in order; no default means required."""
    properties: dict[str, t.Any] = {}
    for name, hint in hints.items():
        try:
            prop = type_schema(hint, seen, output)
        except TypeError as e:
            raise TypeError(f"{name!r}: {e}") from None
        if "description" not in prop and docs.get(name):
            prop["description"] = docs[name]
        if name in defaults and defaults[name] is not dataclasses.MISSING:
            with contextlib.suppress(TypeError):  # a non-JSON default is not published
                prop["default"] = _jsonable(defaults[name])
        properties[name] = prop
    schema: dict[str, t.Any] = {"type": "object", "properties": properties}
    required = [name for name in hints if name not in defaults]
    if required:
        schema["required"] = required
    return schema


def _is_qualifier(origin: t.Any) -> bool:
    """Whether ``origin`` is ``Required``, ``NotRequired`` or ``ReadOnly`` (any module)."""
    return getattr(origin, "_name", None) in _QUALIFIERS


def type_schema(
    hint: t.Any, seen: tuple[t.Any, ...] = (), output: bool = False
) -> dict[str, t.Any]:
    """Describe a type hint in JSON Schema; raise :exc:`TypeError` if it cannot be.

    ``output`` describes the type as a result rather than as an argument: it differs
    for ``Decimal`` and pydantic models.
    """
    origin, args = t.get_origin(hint), t.get_args(hint)
    if _is_qualifier(origin):
        return type_schema(args[0], seen, output)
    if origin is t.Annotated:
        schema = type_schema(args[0], seen, output)
        for meta in args[1:]:
            if isinstance(meta, str):
                schema["description"] = meta
            elif isinstance(meta, dict):
                schema.update(meta)
            elif isinstance(getattr(meta, "description", None), str):
                schema["description"] = meta.description
        return schema
    if hint is t.Any or hint is object or hint is inspect.Parameter.empty:
        return {}
    if hint is None or hint is NoneType:
        return {"type": "null"}
    if hint in _SIMPLE:
        return {"type": _SIMPLE[hint]}
    if isinstance(hint, type):
        for cls, fmt in _STRING_FORMATS:
            if issubclass(hint, cls):
                return {"type": "string", "format": fmt}
        if issubclass(hint, decimal.Decimal):
            return {"type": "string"} if output else {"type": ["number", "string"]}
        if _is_pydantic_model(hint):
            return model_schema(hint, output)
    if origin is t.Literal:
        return _enum_schema(list(args))
    if origin in UNION_TYPES:
        members = [type_schema(arg, seen, output) for arg in args]
        if not all(members):
            return {}
        if all(list(m) == ["type"] and isinstance(m["type"], str) for m in members):
            return {"type": [m["type"] for m in members]}
        return {"anyOf": members}
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return _enum_schema([member.value for member in hint])
    container = origin or hint
    if container in _SEQUENCES or container in _SETS:
        schema = {"type": "array"}
        if args and (item := type_schema(args[0], seen, output)):
            schema["items"] = item
        if container in _SETS:
            schema["uniqueItems"] = True
        return schema
    if container is tuple:
        if not args or (len(args) == 2 and args[1] is Ellipsis):
            return type_schema(list[args[0]] if args else list, seen, output)  # type: ignore[valid-type]
        items = [] if args == ((),) else [type_schema(arg, seen, output) for arg in args]
        schema = {"type": "array", "minItems": len(items), "maxItems": len(items)}
        return {**schema, "prefixItems": items} if items else schema
    if container in _MAPPINGS:
        schema = {"type": "object"}
        if args:
            keys = type_schema(args[0], seen, output)
            if keys.get("type") != "string":
                raise TypeError(f"JSON object keys are strings; use dict[str, ...], not {hint!r}.")
            if keys != {"type": "string"}:  # an Enum, a Literal, a UUID...: say which keys
                schema["propertyNames"] = keys
            if values := type_schema(args[1], seen, output):
                schema["additionalProperties"] = values
        return schema
    if isinstance(hint, type) and (fields := _class_fields(hint)) is not None:
        if hint in seen:
            raise TypeError(
                f"{hint.__qualname__} refers to itself; recursive types cannot be described"
                " from type hints. Pass an explicit JSON Schema instead."
            )
        return _object_schema(*fields, {}, (*seen, hint), output)
    if isinstance(hint, (str, t.ForwardRef)):
        raise TypeError(f"Cannot resolve the forward reference {hint!r}; import the name.")
    raise TypeError(
        f"Cannot describe {hint!r} in JSON Schema. Use str, int, float, bool, list, tuple,"
        " set, dict, Literal, an Enum, a TypedDict, a NamedTuple, a dataclass, datetime,"
        " date, time, UUID, Decimal, Path or a pydantic model, annotate it as typing.Any,"
        " or pass an explicit schema."
    )


def _to_int(value: t.Any) -> t.Any:
    """Turn an integral float (``1.0``, an ``integer`` in JSON Schema) into an ``int``."""
    return int(value) if type(value) is float else value


def _converter(hint: t.Any, integral: bool = False) -> _Convert | None:
    """A function turning validated JSON for ``hint`` into its Python type, if needed.

    ``integral`` also turns the floats that JSON Schema counts as integers (``1.0``)
    into the ``int`` an ``int`` hint promises: the strict plain-Python checks let only
    exact ``int`` values through, so only values jsonschema validated may hold them.
    """
    origin, args = t.get_origin(hint), t.get_args(hint)
    if origin is t.Annotated or _is_qualifier(origin):
        return _converter(args[0], integral)
    if origin in UNION_TYPES:
        rest = [arg for arg in args if arg is not NoneType]
        if len(rest) == 1:
            inner = _converter(rest[0], integral)
        else:
            convs = [_converter(arg, integral) for arg in rest]
            needed = [c for c in convs if c]
            if not needed or (float in rest and needed == [_to_int]):
                inner = None  # int | float: 1.0 stays the float it may well be
            elif needed == [_to_int]:  # int | str: only the int member turns its float back
                inner = _to_int
            else:
                inner = _union_converter(rest, convs)
        return None if inner is None else (lambda v: None if v is None else inner(v))
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint
    if origin is t.Literal and any(isinstance(arg, enum.Enum) for arg in args):
        members = {arg.value: arg for arg in args if isinstance(arg, enum.Enum)}
        return lambda v: members.get(v, v)  # the schema lists the members' values
    if integral and hint is int:
        return _to_int
    if isinstance(hint, type) and (scalar := scalar_converter(hint)) is not None:
        return scalar
    container = origin or hint
    if container in (tuple, set, frozenset):
        convs = [_converter(arg, integral) for arg in args if arg is not Ellipsis and arg != ()]
        if container is not tuple or not args or len(args) != len(convs):  # homogeneous
            item = convs[0] if convs else None
            return lambda v: container(item(x) for x in v) if item else container(v)
        return lambda v: tuple(c(x) if c else x for c, x in zip(convs, v, strict=False))
    if container in _SEQUENCES and args and (item := _converter(args[0], integral)):
        return lambda v: [item(x) for x in v]
    if container in _MAPPINGS and len(args) == 2:
        key, value = _converter(args[0]), _converter(args[1], integral)
        if key is not None:  # dict[Color, int], dict[UUID, str]: the keys convert too
            return lambda v: {key(k): value(x) if value else x for k, x in v.items()}
        if value is not None:
            return lambda v: {k: value(x) for k, x in v.items()}
    if isinstance(hint, type) and t.is_typeddict(hint):  # stays a dict; its values convert
        keys = _class_fields(hint)
        typed: dict[str, _Convert] = {
            n: conv
            for n, h in (keys[0] if keys else {}).items()
            if (conv := _converter(h, integral))
        }
        if not typed:
            return None
        return lambda v: {k: typed[k](x) if k in typed else x for k, x in v.items()}
    if isinstance(hint, type) and not t.is_typeddict(hint) and (fields := _class_fields(hint)):
        by_name = {name: _converter(field_hint, integral) for name, field_hint in fields[0].items()}
        return lambda v: hint(  # keys that are not fields are dropped, as for arguments
            **{k: c(x) if (c := by_name[k]) else x for k, x in v.items() if k in by_name}
        )
    return None


def _union_converter(members: list[t.Any], convs: list[_Convert | None]) -> _Convert:
    """Convert a union's value as the first member it is, in the union's order.

    A member's JSON Schema picks the candidates (``5`` is not a ``datetime``); a
    candidate whose conversion fails gives way to the next (``"soon"`` is not a
    ``date`` but is a ``str``). When none converts, the first failure is raised.
    """
    checks = [compile_validator(type_schema(member)) for member in members]

    def convert(value: t.Any) -> t.Any:
        failure: Exception | None = None
        for check, conv in zip(checks, convs, strict=True):
            if check(value):
                continue
            if conv is None:
                return value
            try:
                return conv(value)
            except (TypeError, ValueError) as e:
                failure = failure or e
        if failure is not None:
            raise failure
        return value

    return convert


def param_docs(doc: str) -> dict[str, str]:
    """Read ``:param name: text`` fields (with indented continuations) from a docstring.

    ``:param type name: text`` works too. The one docstring parser of tool and
    prompt argument descriptions.
    """
    docs: dict[str, str] = {}
    current = None
    for line in doc.splitlines():
        if match := _PARAM_DOC.match(line.strip()):
            current = match[1]
            docs[current] = match[2].strip()
        elif current and line[:1].isspace() and line.strip():
            docs[current] = f"{docs[current]} {line.strip()}".strip()
        else:
            current = None
    return docs


def resolved_hints(
    fn: t.Callable[..., t.Any],
    sig: inspect.Signature,
    names: t.Mapping[str, t.Any] | None = None,
) -> dict[str, t.Any]:
    """Resolve a callable's type hints, falling back to the signature's annotations.

    ``names`` resolve even when the function's module did not import them (the
    server passes ``Context``, which app factories often import inside a
    function), unless the module defines a name of its own.
    """
    globalns = getattr(fn, "__globals__", {})
    localns = {k: v for k, v in (names or {}).items() if k not in globalns}
    try:
        return t.get_type_hints(fn, localns=localns, include_extras=True)
    except NameError as e:
        raise TypeError(
            f"Cannot resolve the type hints of {_name(fn)}: {e}. Import the names used in"
            " annotations at module level (not only under TYPE_CHECKING)."
        ) from None
    except TypeError:
        hints = {n: p.annotation for n, p in sig.parameters.items() if p.annotation is not p.empty}
        if sig.return_annotation is not sig.empty:
            hints["return"] = sig.return_annotation
        return hints


def _name(fn: t.Callable[..., t.Any]) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)


def _is_pydantic_model(hint: type) -> bool:
    """Whether ``hint`` is a pydantic model class; pydantic is never imported for this."""
    base = pydantic_base()
    return base is not None and issubclass(hint, base)


def _iso(cls: type[t.Any], label: str, example: str) -> _Convert:
    """A parser of ISO 8601 strings into ``cls`` whose errors show the expected form."""

    def parse(value: str) -> t.Any:
        text = value
        if sys.version_info < (3, 11) and text[-1:] in ("Z", "z"):
            text = f"{text[:-1]}+00:00"  # 3.10's fromisoformat has no "Z"
        try:
            return cls.fromisoformat(text)
        except (TypeError, ValueError):
            raise ValueError(f"{value!r} is not an ISO 8601 {label}, such as {example}") from None

    return parse


def _to_uuid(value: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except (TypeError, ValueError):
        raise ValueError(
            f"{value!r} is not a UUID, such as 123e4567-e89b-12d3-a456-426614174000"
        ) from None


def _to_decimal(value: str | int | float) -> decimal.Decimal:
    try:
        number = decimal.Decimal(value if isinstance(value, (str, int)) else repr(value))
    except (TypeError, ValueError, decimal.InvalidOperation):
        number = None
    if number is None or not number.is_finite():
        raise ValueError(f'{value!r} is not a decimal number, such as 12.50 or "12.50"')
    return number


def scalar_converter(hint: type) -> _Convert | None:
    """The parser of a type sent as a string (or number), or a pydantic model's validation."""
    if issubclass(hint, datetime.datetime):
        return _iso(hint, "date-time", "2024-05-01T12:30:00+00:00")
    if issubclass(hint, datetime.date):
        return _iso(hint, "date", "2024-05-01")
    if issubclass(hint, datetime.time):
        return _iso(hint, "time", "12:30:00")
    if issubclass(hint, uuid.UUID):
        return _to_uuid
    if issubclass(hint, decimal.Decimal):
        return _to_decimal
    if issubclass(hint, pathlib.PurePath):
        path_type = hint

        def to_path(value: str) -> pathlib.PurePath:
            if "\x00" in value:
                raise ValueError("a path cannot contain a NUL character")
            return path_type(value)

        return to_path
    if _is_pydantic_model(hint):
        return model_validator(t.cast("t.Any", hint))
    return None


def _hoist_defs(schema: dict[str, t.Any]) -> dict[str, t.Any]:
    """Move nested ``$defs`` (of pydantic models) to the top, where their ``#/$defs/`` refs point.

    :raises TypeError: two different definitions share a name.
    """
    found: dict[str, t.Any] = dict(schema.get("$defs", {}))

    def walk(node: t.Any, top: bool) -> t.Any:
        if isinstance(node, list):
            return [walk(item, False) for item in node]
        if not isinstance(node, dict):
            return node
        node = {key: walk(value, False) for key, value in node.items()}
        for name, definition in (node.get("$defs", {}) if not top else {}).items():
            if found.setdefault(name, definition) != definition:
                raise TypeError(
                    f"two different types are both named {name!r} in the JSON Schema; rename"
                    " one of the models."
                )
        if not top:
            node.pop("$defs", None)
        return node

    hoisted: dict[str, t.Any] = walk(schema, True)
    if found:
        hoisted["$defs"] = {**found}
    return hoisted


__all__ = [
    "NoneType",
    "UNION_TYPES",
    "param_docs",
    "resolved_hints",
    "scalar_converter",
    "type_schema",
]
