"""Validating JSON data against JSON Schema: the checks behind input and output specs.

A schema is validated in the dialect its ``$schema`` declares (2020-12 without one);
a dialect outside :data:`DIALECTS` is refused, never read as another one. Validators
never fetch remote ``$ref`` targets. Flat object schemas (the common tool
input) are checked with plain ``type()`` tests; anything else goes to jsonschema, which
also explains what is wrong.
"""

from __future__ import annotations

import collections.abc as cabc
import itertools
import typing as t

import jsonschema
import jsonschema.validators
import referencing
from jsonschema.exceptions import best_match
from referencing.exceptions import Unresolvable

from ..convert import location
from .fast import compile_fast

if t.TYPE_CHECKING:
    from jsonschema.protocols import Validator

_DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
_MAX_ERRORS = 10
#: The longest message of one error: jsonschema's quote the value whole (a client's
#: megabyte string); the middle of a longer one is cut, its start and end kept.
_MAX_MESSAGE = 400
#: The JSON Schema dialects a ``$schema`` may declare, by their meta-schema URIs (a
#: trailing ``#`` is allowed); a schema without ``$schema`` is 2020-12.
DIALECTS = (
    _DRAFT_2020_12,
    "https://json-schema.org/draft/2019-09/schema",
    "http://json-schema.org/draft-07/schema",
    "http://json-schema.org/draft-06/schema",
    "http://json-schema.org/draft-04/schema",
    "http://json-schema.org/draft-03/schema",
)


#: Converts a validated JSON value to the Python type a handler expects.
_Convert = t.Callable[[t.Any], t.Any]


class ConversionError(ValueError):
    """A validated argument could not become its Python type, with the failing fields.

    :param errors: ``(path, message)`` pairs; the path is relative to the argument.
    """

    def __init__(self, errors: list[tuple[tuple[t.Any, ...], str]]) -> None:
        super().__init__("; ".join(message for _, message in errors))
        self.errors = errors


#: What is wrong with a value nested more deeply than validation can follow.
TOO_DEEP = (
    "the value is nested too deeply to check (too many levels of arrays and objects); "
    "send a flatter value"
)


class ArgumentError(Exception):
    """Arguments did not match a tool's input schema.

    ``str(exc)`` names the offending fields, for example
    ``"Invalid arguments: 'a': 'x' is not of type 'integer'"``.
    """


def _error_text(messages: list[str]) -> str:
    """Join error messages into the text of an :class:`ArgumentError`."""
    text = "; ".join(_clipped(message) for message in messages[:_MAX_ERRORS])
    if len(messages) > _MAX_ERRORS:
        text += f"; and {len(messages) - _MAX_ERRORS} more"
    return f"Invalid arguments: {text}"


def _make_validator(schema: dict[str, t.Any]) -> Validator:
    """Check a JSON Schema and compile a validator for it that never fetches remote refs."""
    if not isinstance(schema, dict):
        raise TypeError(f"A JSON Schema must be a dict, not {type(schema).__name__}.")
    cls = _dialect(schema)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as e:
        where = location(e.absolute_path) or "the top level"
        raise ValueError(
            f"Invalid JSON Schema at {where}: {e.message}. Fix the schema so it is valid"
            f" {cls.__name__.removesuffix('Validator')} JSON Schema."
        ) from None
    return cls(schema, registry=referencing.Registry())


def _dialect(schema: dict[str, t.Any]) -> type[Validator]:
    """Return the validator class of the dialect ``schema`` declares (2020-12 by default).

    :raises ValueError: ``$schema`` names a dialect outside :data:`DIALECTS`: the schema
        would otherwise be read by the rules of another dialect.
    """
    declared = schema.get("$schema", _DRAFT_2020_12)
    if isinstance(declared, str) and declared.removesuffix("#") in DIALECTS:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        return t.cast("type[Validator]", cls)
    raise ValueError(
        f'Unsupported JSON Schema dialect {declared!r} in "$schema": declare one of '
        f'{", ".join(DIALECTS)}, or leave "$schema" out for 2020-12.'
    )


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
    except RecursionError:  # the client's JSON, parsed, is deeper than the checks recurse
        return [TOO_DEEP]
    messages: list[str] = []
    for error in errors:
        if error.context:  # anyOf / oneOf: report the most relevant branch's error
            error = best_match([error])
        where = location(error.absolute_path)
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
    return list(dict.fromkeys(_clipped(message) for message in messages))


def _clipped(message: str) -> str:
    """Return ``message``, its middle cut when it is longer than :data:`_MAX_MESSAGE`."""
    if len(message) <= _MAX_MESSAGE:
        return message
    half = (_MAX_MESSAGE - 5) // 2
    return f"{message[:half]} ... {message[-half:]}"


#: The plain-Python checks of flat schemas. An ``integer`` is an exact ``int``: the
#: ``1.0`` that JSON Schema also counts goes to jsonschema (see :mod:`.fast`).
_FAST_TYPES: dict[str, t.Callable[[t.Any], bool]] = {
    "string": lambda value: type(value) is str,
    "integer": lambda value: type(value) is int,
    "number": lambda value: type(value) in (int, float),
    "boolean": lambda value: type(value) is bool,
}
#: The Python types whose values always pass each check of :data:`_FAST_TYPES`: a set
#: lookup settles them without calling the check.
_FAST_EXACT: dict[str, frozenset[type]] = {
    "string": frozenset({str}),
    "integer": frozenset({int}),
    "number": frozenset({int, float}),
    "boolean": frozenset({bool}),
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
    checks: list[tuple[str, frozenset[type], t.Callable[[t.Any], bool]]] = []
    for name, spec in properties.items():
        if not isinstance(spec, dict) or set(spec) - _FAST_ANNOTATIONS:
            return None
        kind = spec.get("type")
        check = _FAST_TYPES.get(kind) if isinstance(kind, str) else None
        if check is None:
            return None
        checks.append((name, _FAST_EXACT[t.cast(str, kind)], check))
    needed = frozenset(required)

    def fast(arguments: t.Any) -> bool:
        if type(arguments) is not dict or not needed <= arguments.keys():
            return False
        for name, exact, check in checks:
            if name in arguments:
                value = arguments[name]
                if type(value) not in exact and not check(value):
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


def validate_arguments(spec: InputSpec, arguments: t.Any) -> dict[str, t.Any]:
    """Return ``spec.validate(arguments)``, refusing arguments too deep to validate.

    Arguments nested less deeply than the JSON parser refuses may still be deeper than
    the checks and conversions can recurse (a recursive ``$ref``, the ``repr`` in a
    message): that is the client's input, refused as arguments, not an internal error.

    :raises ArgumentError: the arguments do not match the schema, or are too deep.
    """
    try:
        return spec.validate(arguments)
    except RecursionError as exc:
        raise argument_error(exc) from None


def argument_error(error: ArgumentError | RecursionError) -> ArgumentError:
    """Return the :class:`ArgumentError` of a failed ``spec.validate()``: ``error`` itself,
    or, for arguments deeper than the checks can recurse, one saying so."""
    if isinstance(error, RecursionError):
        return ArgumentError(_error_text([TOO_DEEP]))
    return error


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


__all__ = [
    "ArgumentError",
    "ConversionError",
    "DIALECTS",
    "InputSpec",
    "argument_error",
    "compile_validator",
    "validate_arguments",
]
