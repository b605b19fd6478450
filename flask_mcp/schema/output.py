"""Output schemas of tools, and turning return values into ``structuredContent``.

The spec says servers MUST send structured results that conform to the output schema,
so :meth:`OutputSpec.structure` checks every result: flat schemas (the common
``{"result": <scalar>}`` wrapper) with a few ``type`` checks, any other with jsonschema.
"""

from __future__ import annotations

import inspect
import typing as t

from ..content import ToolResult
from ..content import json_text
from ..convert import convert_encoded
from ..convert import converted_json_bytes
from ..convert import plain_json_bytes
from ..json_codec import EncodedJSON
from .fast import compile_fast
from .from_marshmallow import marshmallow_object_schema
from .from_marshmallow import marshmallow_schema
from .types import UNION_TYPES
from .types import NoneType
from .types import _hoist_defs
from .types import _jsonable
from .types import resolved_hints
from .types import type_schema
from .validation import _FAST_ANNOTATIONS
from .validation import _FAST_EXACT
from .validation import _FAST_TYPES
from .validation import _MAX_ERRORS
from .validation import _check
from .validation import _fast_object_check
from .validation import _make_validator

if t.TYPE_CHECKING:
    import marshmallow as ma


#: Scalars :func:`~flask_mcp.convert.to_json` returns as they are (a float is checked first).
_PLAIN_SCALARS = frozenset({str, int, bool, type(None)})
#: The keys of an output schema that accepts any object (``dict[str, Any]``, ``dict``).
_ANY_OBJECT_KEYS = frozenset({"type", "title", "description"})


class OutputError(ValueError):
    """A result does not conform to the tool's output schema.

    ``str(exc)`` names the offending fields, for example
    ``"'result': 'x' is not of type 'integer'"``.
    """


class OutputSpec:
    """The output schema of a tool and the conversion of results to ``structuredContent``.

    :param schema: The ``outputSchema``; always ``"type": "object"``.
    :param wrapped: Whether a non-object result is wrapped as ``{"result": value}``.
    :param dump: A function applied to results first, such as a marshmallow ``dump``.
    :raises ValueError: ``schema`` is not a valid JSON Schema.
    """

    def __init__(
        self,
        schema: dict[str, t.Any],
        *,
        wrapped: bool = False,
        dump: t.Callable[[t.Any], t.Any] | None = None,
    ) -> None:
        self.schema = schema
        self.wrapped = wrapped
        self._dump = dump
        self._validator = _make_validator(schema)
        self._fast = _fast_object_check(schema) or compile_fast(schema)
        #: For ``{"result": <scalar>}``: the check of the bare value (the hot path).
        self._result_check = _fast_result_check(schema) if wrapped else None
        #: The types whose values pass :attr:`_result_check` without calling it.
        self._result_exact: frozenset[type] = (
            _result_exact(schema) if self._result_check is not None else frozenset()
        )
        #: Whether every object conforms: what a result holds cannot change the verdict.
        self._any_object = (
            not wrapped and schema.get("type") == "object" and schema.keys() <= _ANY_OBJECT_KEYS
        )

    def structure(self, value: t.Any) -> dict[str, t.Any]:
        """Turn a handler's return value into ``structuredContent`` and check it.

        :raises ~flask_mcp.convert.Unconvertible: The value has no faithful JSON form.
        :raises OutputError: The value does not conform to the output schema.
        """
        return self._structure(self._dump(value) if self._dump is not None else value, value)

    def _structure(self, dumped: t.Any, value: t.Any) -> dict[str, t.Any]:
        """:meth:`structure` of ``dumped``, the value after the dump function, if any."""
        data = _jsonable(dumped)
        if self.wrapped:
            check = self._result_check
            if check is not None and (type(data) in self._result_exact or check(data)):
                return {"result": data}
            data = {"result": data}
        elif not isinstance(data, dict):
            raise OutputError(
                f"the output schema is an object, but the tool returned"
                f" {type(value).__name__}. Return a dict or the annotated type, or fix the"
                " return annotation or output schema."
            )
        return self.check(data)

    def structure_with_text(self, value: t.Any) -> tuple[dict[str, t.Any], str]:
        """Return :meth:`structure`'s ``structuredContent`` and its JSON text.

        A result that is plain JSON already is neither converted nor encoded twice:
        the bytes that proved it plain (see :func:`~flask_mcp.convert.plain_json_bytes`)
        are the text, and the ``structuredContent`` is an
        :class:`~flask_mcp.json_codec.EncodedJSON` (a shallow copy carrying them),
        whose response is written with those bytes. When the schema accepts any object
        (``dict[str, Any]``), a ``dict`` result is not walked: orjson's strict bytes are
        those of its conversion (:func:`~flask_mcp.convert.converted_json_bytes`), its
        items cannot change the verdict, and the ``EncodedJSON`` converts the copy that
        middleware or an interceptor gets.

        :raises ~flask_mcp.convert.Unconvertible: The value has no faithful JSON form.
        :raises OutputError: The value does not conform to the output schema.
        """
        data = self._dump(value) if self._dump is not None else value
        cls = type(data)
        check = self._result_check
        if (
            check is not None
            and cls in _PLAIN_SCALARS
            and (cls in self._result_exact or check(data))
        ):  # the hot path
            structured = {"result": data}
            return structured, json_text(structured)
        if cls is dict and self._any_object:
            found = converted_json_bytes(data)
            if found is None:  # what plain_json_bytes would refuse as well
                structured = self._structure(data, value)
                return structured, json_text(structured)
            written, plain = found
            converted = EncodedJSON(self.check(data), written, None if plain else convert_encoded)
            return converted, written.decode("utf-8")
        encoded = plain_json_bytes(data) if cls is dict or cls is list else None
        if encoded is None or (not self.wrapped and type(data) is not dict):
            structured = self._structure(data, value)
            return structured, json_text(structured)
        if self.wrapped:
            data = {"result": data}
            encoded = b'{"result":' + encoded + b"}"
        # checked as a plain dict, then carried with its bytes: the answer holds them
        return EncodedJSON(self.check(data), encoded), encoded.decode("utf-8")

    def check(self, data: t.Any) -> dict[str, t.Any]:
        """Check JSON data (already converted) against the output schema and return it.

        :raises OutputError: ``data`` does not conform to the schema.
        """
        if self._fast is not None and self._fast(data):
            return t.cast(dict[str, t.Any], data)
        messages = _check(self._validator, data, top="property")
        if messages:
            text = "; ".join(messages[:_MAX_ERRORS])
            if len(messages) > _MAX_ERRORS:
                text += f"; and {len(messages) - _MAX_ERRORS} more"
            raise OutputError(text)
        return t.cast(dict[str, t.Any], data)

    def __repr__(self) -> str:
        return f"<OutputSpec {self.schema!r}{' wrapped' if self.wrapped else ''}>"


def _fast_result_check(schema: dict[str, t.Any]) -> t.Callable[[t.Any], bool] | None:
    """The plain-Python check of a wrapped scalar (``{"type": "integer"}``...), if it is one."""
    if _fast_object_check(schema) is None or schema.get("required") != ["result"]:
        return None
    result = schema["properties"]["result"]
    if set(result) - _FAST_ANNOTATIONS:
        return None
    return _FAST_TYPES.get(result.get("type"))


def _result_exact(schema: dict[str, t.Any]) -> frozenset[type]:
    """The types of a wrapped scalar that always pass :func:`_fast_result_check`'s check."""
    return _FAST_EXACT[schema["properties"]["result"]["type"]]


def _wrap(schema: dict[str, t.Any]) -> dict[str, t.Any]:
    """An object schema holding a non-object result under ``result``."""
    return {"type": "object", "properties": {"result": schema}, "required": ["result"]}


def output_spec_from_function(
    fn: t.Callable[..., t.Any], *, localns: t.Mapping[str, t.Any] | None = None
) -> OutputSpec | None:
    """Build the output schema from a function's return annotation.

    A return type is structured when it can be described in JSON Schema: ``int``,
    ``float``, ``bool``, ``list``, ``tuple``, ``dict``, ``Literal``, an Enum, a TypedDict,
    a NamedTuple, a dataclass, datetime/date/time, UUID, Decimal, Path, a pydantic model,
    or a union of those. Object types are published as they
    are; others are wrapped as ``{"result": value}``. There is no output schema (``None``)
    for a missing annotation, ``None``, ``Any``, ``object``, ``str`` and ``bytes`` (alone
    or with ``None``: plain-text tools are common), or a type that cannot be described,
    such as content objects. ``localns`` are names annotations may use unimported.
    """
    hint = resolved_hints(fn, inspect.signature(fn), localns).get("return", inspect.Signature.empty)
    bare = t.get_args(hint)[0] if t.get_origin(hint) is t.Annotated else hint
    members = t.get_args(bare) if t.get_origin(bare) in UNION_TYPES else (bare,)
    if all(
        m in (str, bytes, None, NoneType, t.Any, object, inspect.Signature.empty) for m in members
    ):
        return None
    if any(isinstance(m, type) and issubclass(m, ToolResult) for m in members):
        return None  # a complete result: its structuredContent, if any, is the tool's business
    try:
        schema = type_schema(hint, output=True)
    except TypeError:
        return None
    if schema.get("type") == "object":
        return OutputSpec(_hoist_defs(schema))
    return OutputSpec(_hoist_defs(_wrap(schema)), wrapped=True)


def output_spec_from_schema(schema: dict[str, t.Any] | type[ma.Schema] | ma.Schema) -> OutputSpec:
    """Use a JSON Schema, or a marshmallow schema whose ``dump`` structures results.

    A marshmallow schema with ``many=True`` is wrapped as ``{"result": [...]}``.

    :raises ValueError: A JSON Schema is invalid or does not describe an object.
    """
    ma_schema = marshmallow_schema(schema)
    if ma_schema is not None:
        spec = marshmallow_object_schema(ma_schema, load=False)
        if ma_schema.many:
            wrapped = _wrap({"type": "array", "items": spec})
            return OutputSpec(wrapped, wrapped=True, dump=ma_schema.dump)
        return OutputSpec(spec, dump=ma_schema.dump)
    if not isinstance(schema, dict):
        raise TypeError(f"Expected a JSON Schema dict or a marshmallow schema, got {schema!r}.")
    _make_validator(schema)  # an invalid schema is reported before a wrong type
    if schema.get("type") != "object":
        raise ValueError(
            'MCP requires an output schema with "type": "object"; put the value under a'
            ' property, e.g. {"type": "object", "properties": {"result": ...}}.'
        )
    return OutputSpec(schema)


__all__ = ["OutputError", "OutputSpec", "output_spec_from_function", "output_spec_from_schema"]
