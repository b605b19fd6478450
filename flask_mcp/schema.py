"""Describe and check the JSON data that MCP tools take and return.

A tool publishes an ``inputSchema`` and may publish an ``outputSchema``. The schemas
come from the handler's type hints, from a marshmallow schema, or from a JSON Schema
given as is. An :class:`InputSpec` checks call arguments against its schema and returns
the values to call the handler with; an :class:`OutputSpec` turns the handler's return
value into ``structuredContent``.

How type hints map to JSON Schema is described in :mod:`flask_mcp.schema_types`.
"""

from __future__ import annotations

import collections.abc as cabc
import inspect
import itertools
import typing as t

import jsonschema
import jsonschema.validators
import referencing
from jsonschema.exceptions import best_match
from referencing.exceptions import Unresolvable

from .schema_fast import compile_fast
from .schema_types import ConversionError
from .schema_types import _Convert
from .schema_types import _converter
from .schema_types import _hints
from .schema_types import _hoist_defs
from .schema_types import _name
from .schema_types import _object_schema
from .schema_types import _param_docs

if t.TYPE_CHECKING:
    import marshmallow as ma
    from jsonschema.protocols import Validator

_DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
_MAX_ERRORS = 10


class ArgumentError(Exception):
    """Arguments did not match a tool's input schema.

    ``str(exc)`` names the offending fields, for example
    ``"Invalid arguments: 'a': 'x' is not of type 'integer'"``.
    """


def _path(parts: cabc.Iterable[t.Any]) -> str:
    """Render a location inside a JSON document as ``a.b[0]``."""
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _error_text(messages: list[str]) -> str:
    """Join error messages into the text of an :class:`ArgumentError`."""
    text = "; ".join(messages[:_MAX_ERRORS])
    if len(messages) > _MAX_ERRORS:
        text += f"; and {len(messages) - _MAX_ERRORS} more"
    return f"Invalid arguments: {text}"


def _make_validator(schema: dict[str, t.Any]) -> Validator:
    """Check a JSON Schema and compile a validator for it that never fetches remote refs."""
    if not isinstance(schema, dict):
        raise TypeError(f"A JSON Schema must be a dict, not {type(schema).__name__}.")
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as e:
        where = _path(e.absolute_path) or "the top level"
        raise ValueError(
            f"Invalid JSON Schema at {where}: {e.message}. Fix the schema so it is valid"
            f" {cls.__name__.removesuffix('Validator')} JSON Schema."
        ) from None
    return cls(schema, registry=referencing.Registry())


def _check(validator: Validator, instance: t.Any, top: str = "argument") -> list[str]:
    """List what is wrong with ``instance``; the valid path costs one ``is_valid`` call.

    ``top`` names a missing key of the top-level object (``argument`` or ``property``).
    """
    try:
        if validator.is_valid(instance):
            return []
        errors = list(itertools.islice(validator.iter_errors(instance), 50))
    except Unresolvable as e:
        return [
            f"the schema has a $ref that cannot be resolved ({e}); only references"
            " within the schema document itself are supported"
        ]
    messages: list[str] = []
    for error in errors:
        if error.context:  # anyOf / oneOf: report the most relevant branch's error
            error = best_match([error])
        where = _path(error.absolute_path)
        if error.validator == "required" and isinstance(error.instance, dict):
            for name in error.validator_value:
                if name not in error.instance:
                    what = f"{top} {name!r}" if not where else f"property {name!r}"
                    messages.append(
                        f"'{where}': missing required {what}"
                        if where
                        else f"missing required {what}"
                    )
        else:
            messages.append(f"'{where}': {error.message}" if where else error.message)
    return list(dict.fromkeys(messages))


def _is_integer(value: t.Any) -> bool:
    return (type(value) is int) or (type(value) is float and value.is_integer())


_FAST_TYPES: dict[str, t.Callable[[t.Any], bool]] = {
    "string": lambda value: type(value) is str,
    "integer": _is_integer,
    "number": lambda value: type(value) in (int, float),
    "boolean": lambda value: type(value) is bool,
}
#: Keywords that never fail a value: ``format`` is an annotation for the validators
#: built here (no format checker); the converters parse such strings themselves.
_FAST_ANNOTATIONS = frozenset({"type", "description", "title", "default", "examples", "format"})


def _fast_object_check(schema: dict[str, t.Any]) -> t.Callable[[t.Any], bool] | None:
    """Compile a plain-Python check for flat object schemas, or ``None`` for any other.

    Most tools take a few scalars; checking them with ``isinstance`` costs a
    fraction of a jsonschema run. The check only answers "certainly valid";
    anything else goes to jsonschema, which also explains what is wrong.
    """
    if set(schema) - {"type", "properties", "required", "description", "title", "$schema"}:
        return None
    if schema.get("type") != "object" or schema.get("$schema") not in (None, _DRAFT_2020_12):
        return None
    properties = schema.get("properties", {})
    required = tuple(schema.get("required", ()))
    if not isinstance(properties, dict) or not all(isinstance(n, str) for n in required):
        return None
    checks: list[tuple[str, t.Callable[[t.Any], bool]]] = []
    for name, spec in properties.items():
        if not isinstance(spec, dict) or set(spec) - _FAST_ANNOTATIONS:
            return None
        kind = spec.get("type")
        check = _FAST_TYPES.get(kind) if isinstance(kind, str) else None
        if check is None:
            return None
        checks.append((name, check))

    def fast(arguments: t.Any) -> bool:
        if type(arguments) is not dict:
            return False
        for name in required:
            if name not in arguments:
                return False
        for name, check in checks:  # noqa: SIM110 - a loop is faster than all() here
            if name in arguments and not check(arguments[name]):
                return False
        return True

    return fast


def compile_validator(schema: dict[str, t.Any]) -> t.Callable[[t.Any], list[str]]:
    """Compile a JSON Schema into a function listing what is wrong with a value.

    The returned function gives an empty list for a valid value. The validator class
    follows ``$schema`` (2020-12 by default) and ``$ref`` resolves only within the
    document. Raises :exc:`ValueError` if the schema itself is invalid.
    """
    validator = _make_validator(schema)
    return lambda instance: _check(validator, instance)


def _as_dict(arguments: cabc.Mapping[str, t.Any] | None) -> dict[str, t.Any]:
    """Accept missing arguments as empty and refuse anything that is not an object."""
    if arguments is None:
        return {}
    if not isinstance(arguments, cabc.Mapping):
        raise ArgumentError(
            f"Invalid arguments: expected a JSON object, got {type(arguments).__name__}"
        )
    return dict(arguments)


class InputSpec:
    """The input schema of a tool and the check of call arguments against it.

    This base class validates against ``schema`` and returns the arguments as given.

    :param schema: The JSON Schema published as the tool's ``inputSchema``.
    """

    def __init__(self, schema: dict[str, t.Any]) -> None:
        self.schema = schema
        self._validator = _make_validator(schema)
        self._fast = _fast_object_check(schema) or compile_fast(schema)

    def _raise_if_invalid(self, arguments: t.Any) -> None:
        if self._fast is not None and self._fast(arguments):
            return  # the common flat schema holds; jsonschema explains failures only
        messages = _check(self._validator, arguments)
        if messages:
            raise ArgumentError(_error_text(messages))

    def validate(self, arguments: cabc.Mapping[str, t.Any] | None) -> dict[str, t.Any]:
        """Validate arguments and return the values to call the handler with.

        :param arguments: The ``arguments`` of a ``tools/call`` request; ``None`` is
            treated as an empty object.
        :raises ArgumentError: The arguments do not match the schema.
        """
        if not isinstance(arguments, dict):
            arguments = _as_dict(arguments)
        self._raise_if_invalid(arguments)
        return arguments

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.schema!r}>"


class _FunctionInputSpec(InputSpec):
    """Arguments for a function: unknown keys are dropped, values converted to hints."""

    def __init__(
        self, schema: dict[str, t.Any], names: cabc.Iterable[str], converters: dict[str, _Convert]
    ) -> None:
        super().__init__(schema)
        self._names = frozenset(names)
        self._converters = converters

    def validate(self, arguments: cabc.Mapping[str, t.Any] | None) -> dict[str, t.Any]:
        if not isinstance(arguments, dict):
            arguments = _as_dict(arguments)
        names = self._names
        values = {k: v for k, v in arguments.items() if k in names}
        self._raise_if_invalid(values)
        messages: list[str] = []
        for name, convert in self._converters.items():
            if name in values:
                try:
                    values[name] = convert(values[name])
                except ConversionError as e:
                    messages += [f"'{_path((name, *where))}': {text}" for where, text in e.errors]
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
    fn: t.Callable[..., t.Any], *, exclude: t.Collection[str] = ()
) -> InputSpec:
    """Build the input schema from a function's signature, type hints and docstring.

    Properties follow signature order; parameters without defaults are required, and
    JSON-representable defaults are published as ``default``. On validation, keys that
    are not parameters are dropped (clients sometimes send extras), parameters left out
    keep their defaults, and values are converted to their hints: Enum members, tuples,
    sets, dataclasses, NamedTuples, datetime/date/time (ISO 8601), UUID, Decimal, Path
    and pydantic models (validated by the model). TypedDict values stay dicts. A value
    that cannot be converted is an :class:`ArgumentError` naming the field.

    :param fn: The handler.
    :param exclude: Parameters to leave out, such as the injected context.
    :raises TypeError: The signature has ``*args``, ``**kwargs`` or positional-only
        parameters, or a hint that cannot be described in JSON Schema.
    """
    sig = inspect.signature(fn)
    hints = _hints(fn, sig)
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
        schema = _object_schema(params, defaults, _param_docs(inspect.getdoc(fn) or ""), ())
    except TypeError as e:
        raise TypeError(f"Cannot build the input schema of {_name(fn)}: parameter {e}") from None
    try:
        schema = _hoist_defs(schema)
    except TypeError as e:
        raise TypeError(f"Cannot build the input schema of {_name(fn)}: {e}") from None
    converters = {n: c for n, h in params.items() if (c := _converter(h)) is not None}
    return _FunctionInputSpec(schema, params, converters)


def input_spec(
    source: dict[str, t.Any] | type[ma.Schema] | ma.Schema | InputSpec | None,
    fn: t.Callable[..., t.Any],
    *,
    exclude: t.Collection[str] = (),
) -> InputSpec:
    """Build an input spec from whatever a tool was registered with.

    :param source: ``None`` to use ``fn``'s signature, a JSON Schema dict, a marshmallow
        schema class or instance, or a ready :class:`InputSpec`.
    :param fn: The handler, used when ``source`` is ``None``.
    :param exclude: Parameters of ``fn`` to leave out, such as the injected context.
    """
    if source is None:
        return input_spec_from_function(fn, exclude=exclude)
    if isinstance(source, InputSpec):
        return source
    if isinstance(source, dict):
        return input_spec_from_json_schema(source)
    from .schema_marshmallow import input_spec_from_marshmallow
    from .schema_marshmallow import marshmallow_schema

    if marshmallow_schema(source) is not None:
        return input_spec_from_marshmallow(source)
    raise TypeError(
        f"Unsupported input schema {source!r}: pass a JSON Schema dict, a marshmallow"
        " Schema class or instance, or nothing to derive it from the function signature."
    )


def input_spec_from_marshmallow(schema: type[ma.Schema] | ma.Schema) -> InputSpec:
    """Use a marshmallow schema: its fields give the JSON Schema and its ``load`` validates.

    The tool receives the loaded dict as one argument.
    """
    from .schema_marshmallow import input_spec_from_marshmallow as build

    return build(schema)


# Output specs live in their own module; they are part of this module's API.
from .schema_output import OutputSpec  # noqa: E402
from .schema_output import output_spec_from_function  # noqa: E402
from .schema_output import output_spec_from_schema  # noqa: E402

__all__ = [
    "ArgumentError",
    "InputSpec",
    "OutputSpec",
    "compile_validator",
    "input_spec",
    "input_spec_from_function",
    "input_spec_from_json_schema",
    "input_spec_from_marshmallow",
    "output_spec_from_function",
    "output_spec_from_schema",
]
