"""Output schemas of tools, and turning return values into ``structuredContent``."""

from __future__ import annotations

import inspect
import typing as t

from .content import ToolResult
from .schema import _make_validator
from .schema_types import _UNION_TYPES
from .schema_types import _hints
from .schema_types import _jsonable
from .schema_types import _NoneType
from .schema_types import _type_schema

if t.TYPE_CHECKING:
    import marshmallow as ma


class OutputSpec:
    """The output schema of a tool and the conversion of results to ``structuredContent``.

    :param schema: The ``outputSchema``; always ``"type": "object"``.
    :param wrapped: Whether a non-object result is wrapped as ``{"result": value}``.
    :param dump: A function applied to results first, such as a marshmallow ``dump``.
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

    def structure(self, value: t.Any) -> dict[str, t.Any]:
        """Turn a handler's return value into ``structuredContent``.

        :raises TypeError: The value cannot be converted to a JSON object.
        """
        data = _jsonable(self._dump(value) if self._dump is not None else value)
        if self.wrapped:
            return {"result": data}
        if not isinstance(data, dict):
            raise TypeError(
                f"The tool's output schema is an object, but it returned"
                f" {type(value).__name__}. Return a dict or the annotated type, or fix the"
                " return annotation or output schema."
            )
        return data

    def __repr__(self) -> str:
        return f"<OutputSpec {self.schema!r}{' wrapped' if self.wrapped else ''}>"


def _wrap(schema: dict[str, t.Any]) -> OutputSpec:
    """An object schema holding a non-object result under ``result``."""
    return OutputSpec(
        {"type": "object", "properties": {"result": schema}, "required": ["result"]},
        wrapped=True,
    )


def output_spec_from_function(fn: t.Callable[..., t.Any]) -> OutputSpec | None:
    """Build the output schema from a function's return annotation.

    A return type is structured when it can be described in JSON Schema: ``int``,
    ``float``, ``bool``, ``list``, ``tuple``, ``dict``, ``Literal``, an Enum, a TypedDict,
    a NamedTuple, a dataclass, or a union of those. Object types are published as they
    are; others are wrapped as ``{"result": value}``. There is no output schema (``None``)
    for a missing annotation, ``None``, ``Any``, ``object``, ``str`` and ``bytes`` (alone
    or with ``None``: plain-text tools are common), or a type that cannot be described,
    such as content objects.
    """
    hint = _hints(fn, inspect.signature(fn)).get("return", inspect.Signature.empty)
    bare = t.get_args(hint)[0] if t.get_origin(hint) is t.Annotated else hint
    members = t.get_args(bare) if t.get_origin(bare) in _UNION_TYPES else (bare,)
    if all(
        m in (str, bytes, None, _NoneType, t.Any, object, inspect.Signature.empty) for m in members
    ):
        return None
    if any(isinstance(m, type) and issubclass(m, ToolResult) for m in members):
        return None  # a complete result: its structuredContent, if any, is the tool's business
    try:
        schema = _type_schema(hint)
    except TypeError:
        return None
    return OutputSpec(schema) if schema.get("type") == "object" else _wrap(schema)


def output_spec_from_schema(schema: dict[str, t.Any] | type[ma.Schema] | ma.Schema) -> OutputSpec:
    """Use a JSON Schema, or a marshmallow schema whose ``dump`` structures results.

    A marshmallow schema with ``many=True`` is wrapped as ``{"result": [...]}``.

    :raises ValueError: A JSON Schema is invalid or does not describe an object.
    """
    from .schema_marshmallow import marshmallow_object_schema
    from .schema_marshmallow import marshmallow_schema

    ma_schema = marshmallow_schema(schema)
    if ma_schema is not None:
        spec = marshmallow_object_schema(ma_schema, load=False)
        if ma_schema.many:
            wrapped = _wrap({"type": "array", "items": spec})
            return OutputSpec(wrapped.schema, wrapped=True, dump=ma_schema.dump)
        return OutputSpec(spec, dump=ma_schema.dump)
    if not isinstance(schema, dict):
        raise TypeError(f"Expected a JSON Schema dict or a marshmallow schema, got {schema!r}.")
    _make_validator(schema)
    if schema.get("type") != "object":
        raise ValueError(
            'MCP requires an output schema with "type": "object"; put the value under a'
            ' property, e.g. {"type": "object", "properties": {"result": ...}}.'
        )
    return OutputSpec(schema)
