"""Prompt arguments: what ``prompts/list`` shows of them, and their strings as typed values.

MCP sends every prompt argument as a string (``GetPromptRequest.arguments`` is a map
of strings) and a ``PromptArgument`` carries only a name, a title, a description and
``required``: there is no field for a type, in 2025-11-25 as in 2026-07-28. So a
parameter annotated ``int``, ``float``, ``bool``, an Enum, a ``Literal``, a date or
time, ``UUID``, ``Decimal`` or ``Path`` is converted from its string before the
handler runs, and the kind of value it takes is told in the argument's description
(``"Days to cover (an integer)"``), which clients show to the user typing it. An
annotation no string converts to (a list, a dict, a dataclass...) is refused when
the prompt is registered.
"""

from __future__ import annotations

import collections.abc as cabc
import datetime
import decimal
import enum
import inspect
import pathlib
import types
import typing as t
import uuid

from .. import schema as schema_mod
from ..schema.types import resolved_hints
from ..schema.types import scalar_converter

#: Converts one argument string to the parameter's type; raises ``ValueError`` with
#: a sentence saying what was expected.
StringConverter = t.Callable[[str], t.Any]

_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})
_STRING_KINDS: tuple[tuple[type, str], ...] = (
    (datetime.datetime, "an ISO 8601 date-time"),
    (datetime.date, "an ISO 8601 date"),
    (datetime.time, "an ISO 8601 time"),
    (uuid.UUID, "a UUID"),
    (decimal.Decimal, "a decimal number"),
    (pathlib.PurePath, "a path"),
)


class PromptArgumentError(ValueError):
    """An argument string does not convert to its parameter's type."""


def _to_int(value: str) -> int:
    try:
        return int(value.strip())
    except ValueError:
        raise ValueError(f"{value!r} is not an integer") from None


def _to_float(value: str) -> float:
    try:
        number = float(value.strip())
    except ValueError:
        number = None
    if number is None or number != number or number in (float("inf"), float("-inf")):
        raise ValueError(f"{value!r} is not a number")
    return number


def _to_bool(value: str) -> bool:
    word = value.strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise ValueError(f"{value!r} is not true or false")


def _choices(values: cabc.Sequence[t.Any], make: t.Callable[[t.Any], t.Any]) -> StringConverter:
    """Pick the one value whose string form is the argument."""
    by_text = {str(v.value if isinstance(v, enum.Enum) else v): v for v in values}

    def choose(value: str) -> t.Any:
        if value in by_text:
            return make(by_text[value])
        raise ValueError(f"{value!r} is not one of {', '.join(map(repr, by_text))}")

    return choose


def _choice_words(values: cabc.Iterable[t.Any]) -> str:
    return "one of " + ", ".join(str(v.value if isinstance(v, enum.Enum) else v) for v in values)


def string_converter(hint: t.Any) -> tuple[StringConverter | None, str | None]:
    """Return the converter of an argument string to ``hint`` and the words for its kind.

    ``(None, None)`` for a string (or no annotation, or ``Any``): nothing to convert.

    :raises TypeError: no string converts to ``hint``.
    """
    origin, args = t.get_origin(hint), t.get_args(hint)
    if origin is t.Annotated:
        return string_converter(args[0])
    if hint in (str, t.Any, object, inspect.Parameter.empty):
        return None, None
    if origin in (t.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            return string_converter(rest[0])  # an argument left out is the default, not None
        raise TypeError(f"{hint!r} is a union; a prompt argument string converts to one type")
    if origin is t.Literal:
        if all(isinstance(a, (str, int)) and not isinstance(a, bool) for a in args):
            texts = {str(a): a for a in args}
            return _choices(list(texts.values()), lambda v: v), _choice_words(args)
        raise TypeError(f"{hint!r} has values that are not strings or integers")
    if isinstance(hint, type):
        if issubclass(hint, bool):
            return _to_bool, "true or false"
        if issubclass(hint, enum.Enum):
            return _choices(list(hint), lambda member: member), _choice_words(hint)
        if issubclass(hint, int):
            return _to_int, "an integer"
        if issubclass(hint, float):
            return _to_float, "a number"
        if issubclass(hint, str):
            return hint, None
        for cls, words in _STRING_KINDS:
            if issubclass(hint, cls):
                return t.cast(StringConverter, scalar_converter(hint)), words
    raise TypeError(f"no string converts to {hint!r}")


class PromptSignature(t.NamedTuple):
    """What registration learns of a prompt function's parameters."""

    #: The ``PromptArgument`` objects of ``prompts/list``.
    arguments: list[dict[str, t.Any]]
    #: The converters of the parameters that are not plain strings.
    converters: dict[str, StringConverter]


def prompt_signature(
    fn: t.Callable[..., t.Any],
    exclude: t.Collection[str],
    name: str,
    localns: t.Mapping[str, t.Any] | None = None,
) -> PromptSignature:
    """Read a prompt function's parameters, ``:param:`` docs and annotations.

    :param name: the prompt's name, for error messages.
    :raises TypeError: a parameter's annotation cannot be converted from a string, or
        a parameter is positional-only.
    """
    signature = inspect.signature(fn)
    docs = schema_mod.param_docs(inspect.getdoc(fn) or "")
    hints = resolved_hints(fn, signature, localns)
    arguments = []
    converters: dict[str, StringConverter] = {}
    for param_name, param in signature.parameters.items():
        if param_name in exclude or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        if param.kind is param.POSITIONAL_ONLY:
            raise TypeError(
                f"The prompt {name!r} cannot take its positional-only parameter {param_name!r}:"
                " prompt arguments are passed by name. Declare it after the '/', or drop"
                " the '/'."
            )
        hint = hints.get(param_name, param.annotation)
        try:
            convert, kind = string_converter(hint)
        except TypeError as exc:
            raise TypeError(
                f"The prompt {name!r} cannot take its parameter {param_name!r}: {exc}. MCP sends"
                " prompt arguments as strings, so annotate it as str, int, float, bool, an Enum,"
                " a Literal, datetime, date, time, UUID, Decimal or Path, and parse anything else"
                " (such as JSON) in the function."
            ) from None
        argument: dict[str, t.Any] = {"name": param_name}
        description = docs.get(param_name, "").strip()
        if kind is not None and description.endswith("."):
            description = f"{description[:-1]} ({kind})."
        elif kind is not None:
            description = f"{description} ({kind})" if description else kind[:1].upper() + kind[1:]
        if description:
            argument["description"] = description
        argument["required"] = param.default is inspect.Parameter.empty
        arguments.append(argument)
        if convert is not None:
            converters[param_name] = convert
    return PromptSignature(arguments, converters)


def convert_arguments(
    arguments: dict[str, str], converters: t.Mapping[str, StringConverter]
) -> dict[str, t.Any]:
    """Convert the argument strings whose parameters are typed.

    :raises PromptArgumentError: a string does not convert; it names every argument that failed.
    """
    if not converters:
        return arguments
    values = dict(arguments)
    messages = []
    for key, convert in converters.items():
        if key in values:
            try:
                values[key] = convert(values[key])
            except (TypeError, ValueError) as exc:
                messages.append(f"{key!r}: {exc}")
    if messages:
        raise PromptArgumentError("; ".join(messages))
    return values


__all__ = [
    "PromptArgumentError",
    "PromptSignature",
    "StringConverter",
    "convert_arguments",
    "prompt_signature",
    "string_converter",
]
