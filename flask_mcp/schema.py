"""Describe and check the JSON data that MCP tools take and return.

A tool publishes an ``inputSchema`` and may publish an ``outputSchema``. The schemas
come from the handler's type hints, from a marshmallow schema, or from a JSON Schema
given as is. An :class:`InputSpec` checks call arguments against its schema and returns
the values to call the handler with; an :class:`OutputSpec` turns the handler's return
value into ``structuredContent``.

Type hints map to JSON Schema as follows: ``str``, ``int``, ``float`` (``number``),
``bool``, ``None``, ``Optional``/``Union``, ``list``, ``tuple``, ``set``,
``dict[str, X]``, ``Literal``, :class:`~enum.Enum` subclasses, ``TypedDict``,
``NamedTuple``, dataclasses and ``Any``. ``Annotated[X, "text"]`` (or a metadata object
with a ``description`` attribute) adds a description, ``Annotated[X, {...}]`` merges JSON
Schema keywords. ``:param name: text`` lines of the docstring describe parameters too.
"""

from __future__ import annotations

import collections.abc as cabc
import contextlib
import dataclasses
import datetime
import decimal
import enum
import inspect
import itertools
import re
import types
import typing as t
import uuid

import jsonschema
import jsonschema.validators
import referencing
from jsonschema.exceptions import best_match
from referencing.exceptions import Unresolvable

if t.TYPE_CHECKING:
    import marshmallow as ma
    from jsonschema.protocols import Validator

_NoneType = type(None)
_DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
_Convert = t.Callable[[t.Any], t.Any]
_SIMPLE: dict[t.Any, str] = {str: "string", bool: "boolean", int: "integer", float: "number"}
_MAX_ERRORS = 10
_PARAM_DOC = re.compile(r":param\s+(?:[^:]*\s)?(\w+)\s*:(.*)")
_UNION_TYPES: tuple[t.Any, ...] = (t.Union, types.UnionType)
_SEQUENCES = (list, cabc.Sequence, cabc.MutableSequence, cabc.Iterable, cabc.Collection)
_SETS = (set, frozenset, cabc.Set, cabc.MutableSet)
_QUALIFIERS = ("Required", "NotRequired", "ReadOnly")
_MAPPINGS = (dict, cabc.Mapping, cabc.MutableMapping)


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


def _check(validator: Validator, instance: t.Any) -> list[str]:
    """List what is wrong with ``instance``; the valid path costs one ``is_valid`` call."""
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
                    what = f"argument {name!r}" if not where else f"property {name!r}"
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
_FAST_ANNOTATIONS = frozenset({"type", "description", "title", "default", "examples"})


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
        self._fast = _fast_object_check(schema)

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
        for name, convert in self._converters.items():
            if name in values:
                try:
                    values[name] = convert(values[name])
                except (TypeError, ValueError) as e:
                    raise ArgumentError(_error_text([f"'{name}': {e}"])) from e
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
) -> dict[str, t.Any]:
    """An object schema with one property per hint, in order; no default means required."""
    properties: dict[str, t.Any] = {}
    for name, hint in hints.items():
        try:
            prop = _type_schema(hint, seen)
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


def _type_schema(hint: t.Any, seen: tuple[t.Any, ...] = ()) -> dict[str, t.Any]:
    """Describe a type hint in JSON Schema; raise :exc:`TypeError` if it cannot be."""
    origin, args = t.get_origin(hint), t.get_args(hint)
    if _is_qualifier(origin):
        return _type_schema(args[0], seen)
    if origin is t.Annotated:
        schema = _type_schema(args[0], seen)
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
    if hint is None or hint is _NoneType:
        return {"type": "null"}
    if hint in _SIMPLE:
        return {"type": _SIMPLE[hint]}
    if origin is t.Literal:
        return _enum_schema(list(args))
    if origin in _UNION_TYPES:
        members = [_type_schema(arg, seen) for arg in args]
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
        if args and (item := _type_schema(args[0], seen)):
            schema["items"] = item
        if container in _SETS:
            schema["uniqueItems"] = True
        return schema
    if container is tuple:
        if not args or (len(args) == 2 and args[1] is Ellipsis):
            return _type_schema(list[args[0]] if args else list, seen)  # type: ignore[valid-type]
        items = [] if args == ((),) else [_type_schema(arg, seen) for arg in args]
        schema = {"type": "array", "minItems": len(items), "maxItems": len(items)}
        return {**schema, "prefixItems": items} if items else schema
    if container in _MAPPINGS:
        schema = {"type": "object"}
        if args:
            if _type_schema(args[0], seen).get("type") != "string":
                raise TypeError(f"JSON object keys are strings; use dict[str, ...], not {hint!r}.")
            if values := _type_schema(args[1], seen):
                schema["additionalProperties"] = values
        return schema
    if isinstance(hint, type) and (fields := _class_fields(hint)) is not None:
        if hint in seen:
            raise TypeError(
                f"{hint.__qualname__} refers to itself; recursive types cannot be described"
                " from type hints. Pass an explicit JSON Schema instead."
            )
        return _object_schema(*fields, {}, (*seen, hint))
    if isinstance(hint, (str, t.ForwardRef)):
        raise TypeError(f"Cannot resolve the forward reference {hint!r}; import the name.")
    raise TypeError(
        f"Cannot describe {hint!r} in JSON Schema. Use str, int, float, bool, list, tuple,"
        " set, dict, Literal, an Enum, a TypedDict, a NamedTuple or a dataclass, annotate it"
        " as typing.Any, or pass an explicit input schema."
    )


def _converter(hint: t.Any) -> _Convert | None:
    """A function turning validated JSON for ``hint`` into its Python type, if needed."""
    origin, args = t.get_origin(hint), t.get_args(hint)
    if origin is t.Annotated or _is_qualifier(origin):
        return _converter(args[0])
    if origin in _UNION_TYPES:
        rest = [arg for arg in args if arg is not _NoneType]
        inner = _converter(rest[0]) if len(rest) == 1 else None
        return None if inner is None else (lambda v: None if v is None else inner(v))
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint
    container = origin or hint
    if container in (tuple, set, frozenset):
        convs = [_converter(arg) for arg in args if arg is not Ellipsis and arg != ()]
        if container is not tuple or not args or len(args) != len(convs):  # homogeneous
            item = convs[0] if convs else None
            return lambda v: container(item(x) for x in v) if item else container(v)
        return lambda v: tuple(c(x) if c else x for c, x in zip(convs, v, strict=False))
    if container in _SEQUENCES and args and (item := _converter(args[0])):
        return lambda v: [item(x) for x in v]
    if container in _MAPPINGS and len(args) == 2 and (value := _converter(args[1])):
        return lambda v: {k: value(x) for k, x in v.items()}
    if isinstance(hint, type) and not t.is_typeddict(hint) and (fields := _class_fields(hint)):
        by_name = {name: _converter(field_hint) for name, field_hint in fields[0].items()}
        return lambda v: hint(  # keys that are not fields are dropped, as for arguments
            **{k: c(x) if (c := by_name[k]) else x for k, x in v.items() if k in by_name}
        )
    return None


def _param_docs(doc: str) -> dict[str, str]:
    """Read ``:param name: text`` lines (with indented continuations) from a docstring."""
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


def _hints(fn: t.Callable[..., t.Any], sig: inspect.Signature) -> dict[str, t.Any]:
    """Resolve a callable's type hints, falling back to the signature's annotations.

    ``Context`` resolves even when it was imported inside a function (app
    factories often do), unless the module defines its own ``Context``.
    """
    from .context import Context

    globalns = getattr(fn, "__globals__", {})
    localns = {} if "Context" in globalns else {"Context": Context}
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


def input_spec_from_function(
    fn: t.Callable[..., t.Any], *, exclude: t.Collection[str] = ()
) -> InputSpec:
    """Build the input schema from a function's signature, type hints and docstring.

    Properties follow signature order; parameters without defaults are required, and
    JSON-representable defaults are published as ``default``. On validation, keys that
    are not parameters are dropped (clients sometimes send extras), parameters left out
    keep their defaults, and values are converted to their hints: Enum members, tuples,
    sets, dataclasses and NamedTuples. TypedDict values stay dicts.

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


def _jsonable(value: t.Any) -> t.Any:
    """Convert a value to plain JSON types (dict, list, str, int, float, bool, None)."""
    if value is None or type(value) in (str, int, float, bool):
        return value
    if isinstance(value, enum.Enum):
        return _jsonable(value.value)
    if isinstance(value, (str, int, float)):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return {k: _jsonable(v) for k, v in value._asdict().items()}
    if isinstance(value, cabc.Mapping):
        return {_key(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, decimal.Decimal):
        return float(value)
    raise TypeError(
        f"Cannot convert {type(value).__name__} to JSON. Return JSON types (dict, list, str,"
        " int, float, bool, None), a dataclass, a TypedDict, a NamedTuple or an Enum."
    )


def _key(key: t.Any) -> str:
    """Convert a mapping key to a JSON object key."""
    key = key.value if isinstance(key, enum.Enum) else key
    if isinstance(key, str):
        return key
    if isinstance(key, (int, float)) and not isinstance(key, bool):
        return str(key)
    raise TypeError(f"JSON object keys must be strings, not {type(key).__name__}.")


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
