"""Typed form elicitation: ``ctx.elicit(message, Model)`` with a pydantic model or a dataclass.

The form a server may ask for is a restricted JSON Schema (``ElicitRequestFormParams``
in 2025-11-25 and 2026-07-28): an object whose properties are flat primitives
(``PrimitiveSchemaDefinition``): strings (``format`` ``email``, ``uri``, ``date`` or
``date-time``), numbers, integers, booleans, single-select enums of strings
(``enum`` or ``oneOf`` of ``const``/``title``) and multi-select arrays of such enums.

:func:`elicitation_form` turns what a handler passes into that schema and into the
reading of the answer, as the official SDK does:

- a pydantic model or a dataclass: ``T | None`` becomes ``T`` (left out of
  ``required``), enums are inlined, and anything else (a nested model, a list of
  free strings, a union of two types) is refused with :exc:`ElicitationSchemaError`
  naming the field. The answer is an :class:`AcceptedElicitation` whose ``data`` is
  the validated object, a :class:`DeclinedElicitation` or a
  :class:`CancelledElicitation`. Content that does not fit the form raises
  :exc:`ElicitationError` (a :exc:`~flask_mcp.ClientRequestError`, so a tool that
  does not catch it answers with an ``isError`` result naming the fields).
- a JSON Schema dict: checked the same way and sent as is; the answer is the
  ``ElicitResult`` dict (``{"action", "content"?}``), whose accepted content is
  validated against the schema (:exc:`ElicitationError` when it does not fit).
"""

from __future__ import annotations

import dataclasses
import typing as t

from ..convert import pydantic_base
from ..errors import ClientRequestError
from ..schema import ArgumentError
from ..schema import InputSpec
from ..schema import input_spec_from_function
from ..schema import validate_arguments
from ..schema.types import type_schema

T = t.TypeVar("T")

_STRING_FORMATS = frozenset({"email", "uri", "date", "date-time"})
_ANNOTATIONS = frozenset({"title", "description", "default"})
_ALLOWED: dict[str, frozenset[str]] = {
    "string": _ANNOTATIONS | {"minLength", "maxLength", "format", "enum", "enumNames", "oneOf"},
    "number": _ANNOTATIONS | {"minimum", "maximum"},
    "integer": _ANNOTATIONS | {"minimum", "maximum"},
    "boolean": _ANNOTATIONS,
    "array": _ANNOTATIONS | {"minItems", "maxItems", "items"},
}
_WHAT = (
    "a form field is a string (format email, uri, date or date-time), a number, an integer,"
    " a boolean, an enum of strings, or a list of an enum of strings"
)


class ElicitationSchemaError(TypeError):
    """What a handler asked for cannot be an elicitation form (nested, or not a primitive)."""


class ElicitationError(ClientRequestError):
    """The client accepted an elicitation with content that does not fit the form."""


@dataclasses.dataclass(frozen=True)
class AcceptedElicitation(t.Generic[T]):
    """The user filled in the form: ``data`` is the validated model or dataclass."""

    data: T
    action: t.Literal["accept"] = "accept"


@dataclasses.dataclass(frozen=True)
class DeclinedElicitation:
    """The user declined to answer."""

    action: t.Literal["decline"] = "decline"


@dataclasses.dataclass(frozen=True)
class CancelledElicitation:
    """The user dismissed the form without choosing."""

    action: t.Literal["cancel"] = "cancel"


#: What ``ctx.elicit(message, Model)`` returns.
ElicitationResult = t.Union[AcceptedElicitation[T], DeclinedElicitation, CancelledElicitation]  # noqa: UP007


class ElicitationForm(t.Generic[T]):
    """The ``requestedSchema`` of a form and the reading of its answer.

    :param schema: the flat ``requestedSchema``.
    :param load: turns accepted content into the object; ``None`` keeps the raw answer,
        whose accepted content is then checked against ``schema``.
    """

    def __init__(
        self, schema: dict[str, t.Any], load: t.Callable[[dict[str, t.Any]], T] | None
    ) -> None:
        self.schema = schema
        self._load = load
        self._spec = InputSpec(schema) if load is None else None

    def result(self, answer: dict[str, t.Any]) -> t.Any:
        """Read the client's ``ElicitResult``.

        :raises ElicitationError: accepted without content, or with content that does
            not fit the form.
        """
        if self._load is None:
            if self._spec is not None and answer.get("action") == "accept":
                content = answer.get("content")
                try:
                    validate_arguments(self._spec, {} if content is None else content)
                except ArgumentError as exc:
                    raise ElicitationError(
                        f"The answer to the form does not fit the requested schema: {exc}"
                    ) from None
            return answer
        action = answer.get("action")
        if action == "decline":
            return DeclinedElicitation()
        if action == "cancel":
            return CancelledElicitation()
        content = answer.get("content")
        if action != "accept" or not isinstance(content, dict):
            raise ElicitationError(
                f"The client answered the elicitation with action {action!r} and content"
                f" {content!r}; an accepted form carries its content as an object."
            )
        return AcceptedElicitation(self._load(content))


def elicitation_form(requested: t.Any) -> ElicitationForm[t.Any]:
    """Build the form for a JSON Schema dict, a pydantic model class or a dataclass.

    :raises ElicitationSchemaError: it cannot be expressed as an elicitation form.
    """
    if isinstance(requested, dict):
        return ElicitationForm(check_form_schema(dict(requested), "the requested schema"), None)
    base = pydantic_base()
    if isinstance(requested, type) and base is not None and issubclass(requested, base):
        return _pydantic_form(requested)
    if isinstance(requested, type) and dataclasses.is_dataclass(requested):
        return _dataclass_form(requested)
    raise ElicitationSchemaError(
        f"ctx.elicit() takes a pydantic model class, a dataclass or a JSON Schema dict,"
        f" not {requested!r}."
    )


def _pydantic_form(model: t.Any) -> ElicitationForm[t.Any]:
    name = model.__qualname__
    rendered = model.model_json_schema()
    schema = _flatten_object(rendered, rendered.get("$defs", {}), name)

    def load(content: dict[str, t.Any]) -> t.Any:
        error_class = __import__("pydantic").ValidationError
        try:
            return model.model_validate(content)
        except error_class as exc:
            problems = "; ".join(
                f"'{'.'.join(map(str, e['loc']))}': {e['msg']}" for e in exc.errors()
            )
            raise ElicitationError(
                f"The answer to the form does not fit {name}: {problems}."
            ) from None

    return ElicitationForm(schema, load)


def _dataclass_form(cls: type[t.Any]) -> ElicitationForm[t.Any]:
    name = cls.__qualname__
    try:
        rendered = type_schema(cls)
    except TypeError as exc:
        raise ElicitationSchemaError(f"{name} cannot be an elicitation form: {exc}") from None
    schema = _flatten_object(rendered, rendered.get("$defs", {}), name)
    spec = input_spec_from_function(cls)  # the dataclass's fields, validated and converted

    def load(content: dict[str, t.Any]) -> t.Any:
        try:
            return cls(**validate_arguments(spec, content))
        except ArgumentError as exc:
            raise ElicitationError(f"The answer to the form does not fit {name}: {exc}") from None

    return ElicitationForm(schema, load)


def _flatten_object(
    rendered: dict[str, t.Any], defs: dict[str, t.Any], name: str
) -> dict[str, t.Any]:
    """The flat ``requestedSchema`` of a rendered object schema."""
    properties = {
        field: _flatten(prop, defs, f"{name}.{field}")
        for field, prop in (rendered.get("properties") or {}).items()
    }
    schema: dict[str, t.Any] = {"type": "object", "properties": properties}
    if rendered.get("required"):
        schema["required"] = list(rendered["required"])
    return check_form_schema(schema, name)


def _flatten(prop: dict[str, t.Any], defs: dict[str, t.Any], where: str) -> dict[str, t.Any]:
    """Inline ``$ref`` (enums), make ``T | None`` a plain ``T`` and drop ``None`` defaults."""
    prop = dict(prop)
    ref = prop.pop("$ref", None)
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        prop = {**defs.get(ref.rsplit("/", 1)[1], {}), **prop}
    for key in ("anyOf", "oneOf"):
        members = prop.get(key)
        if isinstance(members, list) and any(m == {"type": "null"} for m in members):
            rest = [m for m in members if m != {"type": "null"}]
            del prop[key]
            if len(rest) == 1:
                prop = {**_flatten(rest[0], defs, where), **prop}
            else:
                prop[key] = rest
    kinds = prop.get("type")
    if isinstance(kinds, list) and "null" in kinds:
        kinds = [k for k in kinds if k != "null"]
        prop["type"] = kinds[0] if len(kinds) == 1 else kinds
    if "default" in prop and prop["default"] is None:
        del prop["default"]
    items = prop.get("items")
    if isinstance(items, dict):
        prop["items"] = _flatten(items, defs, where)
    return prop


def _check_enum_items(items: t.Any) -> bool:
    if not isinstance(items, dict):
        return False
    if items.get("type") == "string" and _strings(items.get("enum")):
        return set(items) <= {"type", "enum"}
    return _titled(items.get("anyOf")) and set(items) == {"anyOf"}


def _strings(values: t.Any) -> bool:
    return isinstance(values, list) and bool(values) and all(isinstance(v, str) for v in values)


def _titled(options: t.Any) -> bool:
    return (
        isinstance(options, list)
        and bool(options)
        and all(
            isinstance(o, dict)
            and isinstance(o.get("const"), str)
            and isinstance(o.get("title"), str)
            and set(o) == {"const", "title"}
            for o in options
        )
    )


def _field_problem(prop: t.Any) -> str | None:
    """Why ``prop`` is not a ``PrimitiveSchemaDefinition``, or ``None`` when it is one."""
    if not isinstance(prop, dict):
        return "it is not a schema object"
    kind = prop.get("type")
    if not isinstance(kind, str) or kind not in _ALLOWED:
        return f"its type is {kind!r}"
    extra = set(prop) - _ALLOWED[kind] - {"type"}
    if extra:
        return f"it has {', '.join(sorted(extra))}"
    if kind == "string":
        if "format" in prop and prop["format"] not in _STRING_FORMATS:
            return f"its format {prop['format']!r} is not email, uri, date or date-time"
        if "enum" in prop and not _strings(prop["enum"]):
            return "its enum values are not all strings"
        if "oneOf" in prop and not _titled(prop["oneOf"]):
            return "its oneOf is not a list of {const, title} strings"
    if kind == "array" and not _check_enum_items(prop.get("items")):
        return "its items are not an enum of strings"
    return None


def check_form_schema(schema: dict[str, t.Any], name: str) -> dict[str, t.Any]:
    """Check that ``schema`` is a flat elicitation form; return it.

    :raises ElicitationSchemaError: naming the first field that is not a flat primitive.
    """
    if schema.get("type") != "object" or not isinstance(schema.get("properties"), dict):
        raise ElicitationSchemaError(
            f"{name} cannot be an elicitation form: it must be an object schema with"
            ' "properties" ({"type": "object", "properties": {...}}).'
        )
    for field, prop in schema["properties"].items():
        problem = _field_problem(prop)
        if problem is not None:
            raise ElicitationSchemaError(
                f"{name} cannot be an elicitation form: the field {field!r} renders as"
                f" {prop!r}, and {problem}. MCP forms are flat: {_WHAT}. Ask for nested data"
                " in several forms, or as a string you parse."
            )
    return schema


__all__ = [
    "AcceptedElicitation",
    "CancelledElicitation",
    "DeclinedElicitation",
    "ElicitationError",
    "ElicitationForm",
    "ElicitationResult",
    "ElicitationSchemaError",
    "check_form_schema",
    "elicitation_form",
]
