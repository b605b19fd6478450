"""Input specs: the ``inputSchema`` of a tool and the check of its call arguments.

The schema comes from the handler's signature and type hints, from a marshmallow
schema, or from a JSON Schema given as is.
"""

from __future__ import annotations

import collections.abc as cabc
import inspect
import typing as t

from ..convert import location
from .from_marshmallow import input_spec_from_marshmallow as _from_marshmallow
from .from_marshmallow import marshmallow_schema
from .types import _converter
from .types import _hoist_defs
from .types import _name
from .types import _object_schema
from .types import param_docs
from .types import resolved_hints
from .validation import ArgumentError
from .validation import ConversionError
from .validation import InputSpec
from .validation import _as_dict
from .validation import _Convert
from .validation import _error_text

if t.TYPE_CHECKING:
    import marshmallow as ma


class _FunctionInputSpec(InputSpec):
    """Arguments for a function: unknown keys are dropped, values converted to hints."""

    def __init__(
        self,
        schema: dict[str, t.Any],
        names: cabc.Iterable[str],
        converters: dict[str, _Convert],
        checked_converters: dict[str, _Convert] | None = None,
    ) -> None:
        super().__init__(schema)
        self._names = frozenset(names)
        self._converters = converters
        #: The converters of arguments jsonschema validated: they also turn the integral
        #: floats it accepts as integers (``1.0``) into ints, which the fast check refuses.
        self._checked_converters = converters if checked_converters is None else checked_converters

    def validate(self, arguments: cabc.Mapping[str, t.Any] | None) -> dict[str, t.Any]:
        if not isinstance(arguments, dict):
            arguments = _as_dict(arguments)
        names = self._names
        if arguments.keys() <= names:  # no unknown key to drop: a copy is all it takes
            values = dict(arguments)
        else:
            values = {k: v for k, v in arguments.items() if k in names}
        fast = self._fast
        converters = self._converters
        if fast is None or not fast(values):  # the common flat schema holds: no more calls
            self._raise_if_invalid(values)
            converters = self._checked_converters
        messages: list[str] = []
        for name, convert in converters.items():
            if name in values:
                try:
                    values[name] = convert(values[name])
                except ConversionError as e:
                    messages += [
                        f"'{location((name, *where))}': {text}" for where, text in e.errors
                    ]
                except (TypeError, ValueError) as e:
                    messages.append(f"'{name}': {e}")
        if messages:
            raise ArgumentError(_error_text(messages))
        return values


def input_spec_from_json_schema(schema: dict[str, t.Any]) -> InputSpec:
    """Use a JSON Schema as given; it is published unchanged and arguments pass unchanged.

    The validator class follows ``$schema`` (2020-12 by default). ``$ref`` resolves only
    within the document: a remote reference fails validation, it is never fetched.

    :raises ValueError: The schema is invalid or does not describe an object.
    """
    spec = InputSpec(schema)
    if schema.get("type") != "object":
        raise ValueError(
            f'A tool input schema must have "type": "object" at the top level, got'
            f' {schema.get("type")!r}. Put the arguments under "properties" of an object.'
        )
    return spec


def input_spec_from_function(
    fn: t.Callable[..., t.Any],
    *,
    exclude: t.Collection[str] = (),
    localns: t.Mapping[str, t.Any] | None = None,
) -> InputSpec:
    """Build the input schema from a function's signature, type hints and docstring.

    Properties follow signature order; parameters without defaults are required, and
    JSON-representable defaults are published as ``default``. On validation, keys that
    are not parameters are dropped (clients sometimes send extras), parameters left out
    keep their defaults, and values are converted to their hints: ints (JSON Schema
    counts ``1.0`` as an integer; the handler gets ``1``), Enum members (also those of
    a ``Literal``), tuples, sets, dataclasses, NamedTuples, datetime/date/time (ISO
    8601), UUID, Decimal, Path and pydantic models (validated by the model). TypedDict
    values stay dicts. A union's value becomes the first member it is. A value that
    cannot be converted is an :class:`ArgumentError` naming the field.

    :param fn: The handler.
    :param exclude: Parameters to leave out, such as the injected context.
    :param localns: Names that annotations may use without the handler's module
        importing them (the server passes ``Context``); the module's own names win.
    :raises TypeError: The signature has ``*args``, ``**kwargs`` or positional-only
        parameters, or a hint that cannot be described in JSON Schema.
    """
    sig = inspect.signature(fn)
    hints = resolved_hints(fn, sig, localns)
    params: dict[str, t.Any] = {}
    defaults: dict[str, t.Any] = {}
    for name, param in sig.parameters.items():
        if name in exclude:
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise TypeError(
                f"{_name(fn)} has the {param.kind.description} parameter {param}; a tool's"
                " arguments are named, so declare each one as a regular parameter."
            )
        params[name] = hints.get(name, t.Any)
        if param.default is not param.empty:
            defaults[name] = param.default
    try:
        schema = _object_schema(params, defaults, param_docs(inspect.getdoc(fn) or ""), ())
    except TypeError as e:
        raise TypeError(f"Cannot build the input schema of {_name(fn)}: parameter {e}") from None
    try:
        schema = _hoist_defs(schema)
    except TypeError as e:
        raise TypeError(f"Cannot build the input schema of {_name(fn)}: {e}") from None
    converters = {n: c for n, h in params.items() if (c := _converter(h)) is not None}
    checked = {n: c for n, h in params.items() if (c := _converter(h, True)) is not None}
    return _FunctionInputSpec(schema, params, converters, checked)


def input_spec(
    source: dict[str, t.Any] | type[ma.Schema] | ma.Schema | InputSpec | None,
    fn: t.Callable[..., t.Any],
    *,
    exclude: t.Collection[str] = (),
    localns: t.Mapping[str, t.Any] | None = None,
) -> InputSpec:
    """Build an input spec from whatever a tool was registered with.

    :param source: ``None`` to use ``fn``'s signature, a JSON Schema dict, a marshmallow
        schema class or instance, or a ready :class:`InputSpec`.
    :param fn: The handler, used when ``source`` is ``None``.
    :param exclude: Parameters of ``fn`` to leave out, such as the injected context.
    :param localns: Names annotations may use unimported (see :func:`input_spec_from_function`).
    """
    if source is None:
        return input_spec_from_function(fn, exclude=exclude, localns=localns)
    if isinstance(source, InputSpec):
        return source
    if isinstance(source, dict):
        return input_spec_from_json_schema(source)
    if marshmallow_schema(source) is not None:
        return _from_marshmallow(source)
    raise TypeError(
        f"Unsupported input schema {source!r}: pass a JSON Schema dict, a marshmallow"
        " Schema class or instance, or nothing to derive it from the function signature."
    )


def input_spec_from_marshmallow(schema: type[ma.Schema] | ma.Schema) -> InputSpec:
    """Use a marshmallow schema: its fields give the JSON Schema and its ``load`` validates.

    The tool receives the loaded dict as one argument.
    """
    return _from_marshmallow(schema)


__all__ = [
    "input_spec",
    "input_spec_from_function",
    "input_spec_from_json_schema",
    "input_spec_from_marshmallow",
]
