"""The conversion of handler results to JSON values: one table, no guessing.

A value a tool, resource or prompt returns reaches the client only through
:func:`to_json`, which converts exactly these types and refuses every other one
with :exc:`Unconvertible` (never a ``repr``):

==========================================  ==========================================
Python                                      JSON
==========================================  ==========================================
``str``, ``int``, ``bool``, ``None``        the same (subclasses become the base type)
``float``                                   a number; NaN and infinities are refused
``dict`` and other mappings                 an object; keys must be ``str``, ``int``,
                                            ``float`` or an Enum with such a value
``list``, ``tuple``, ``set``, ``frozenset``  an array (a ``NamedTuple`` is an object)
dataclass instances                         an object of their fields
:class:`~enum.Enum` members                 their ``value``, converted
``datetime``, ``date``, ``time``            an ISO 8601 string (``isoformat()``)
:class:`~uuid.UUID`                         its canonical string
:class:`~decimal.Decimal`                   a string, so no digit is lost (``"12.50"``);
                                            NaN and infinities are refused
:class:`~pathlib.PurePath`                  its string
pydantic models (when pydantic is used)     ``model_dump(mode="json", by_alias=True)``
==========================================  ==========================================

``bytes`` are refused here: a tool turns them into a binary content block when it
declares a ``mime_type`` (see :func:`flask_mcp.content.to_content_list`), and a
resource into a ``blob``. This module imports nothing outside the standard library
but :mod:`flask_mcp.json_codec` (orjson, when it is installed: the ``orjson``
extra); pydantic is looked up in :data:`sys.modules`, never imported.

A value that is plain JSON already (exact ``dict``, ``list``, ``str``, ``int``,
finite ``float``, ``bool`` and ``None``, string keys) is returned as it is, not
copied: with orjson installed that is found at C speed (a 4 MB result in tens of
milliseconds instead of a second), see :func:`plain_json_bytes`.
"""

from __future__ import annotations

import collections.abc as cabc
import dataclasses
import datetime
import decimal
import enum
import functools
import gc
import itertools
import math
import operator
import pathlib
import re
import sys
import typing as t
import uuid

from .json_codec import loads
from .json_codec import strict_dumps_bytes

#: Types returned as they are.
_PLAIN = frozenset({str, int, bool, type(None)})
#: What to return instead, for the message of :exc:`Unconvertible`.
ACCEPTED = (
    "str, None, content blocks, a ToolResult, JSON values (dict, list, tuple, int, float,"
    " bool), a dataclass, a TypedDict, an Enum, datetime/date/time, UUID, Decimal, Path or a"
    " pydantic model"
)


class Unconvertible(TypeError):
    """A value has no faithful JSON form.

    ``str(exc)`` names the Python type, where it sits inside the returned value, and
    what to return instead.

    :param value: The offending value.
    :param reason: Why it is refused, when that is not just its type: the end of a
        sentence that starts with the type's name.
    """

    def __init__(self, value: t.Any, reason: str | None = None) -> None:
        super().__init__(value)
        self.type_name = type_name(value)
        self.reason = reason
        #: The keys and indexes leading to the value, outermost first.
        self.path: list[t.Any] = []

    def __str__(self) -> str:
        where = f" at {location(self.path)!r}" if self.path else ""
        reason = self.reason or (
            f"cannot be converted to JSON. Return {ACCEPTED} (see docs/results.md)."
        )
        return f"{self.type_name}{where} {reason}"


def type_name(value: t.Any) -> str:
    """The qualified name of a value's type, with its module unless it is a builtin."""
    cls = type(value)
    module = getattr(cls, "__module__", None)
    name = getattr(cls, "__qualname__", cls.__name__)
    return name if module in (None, "builtins") else f"{module}.{name}"


def location(path: t.Iterable[t.Any]) -> str:
    """Render a location inside a value (keys and list indexes) as ``a.b[0]``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def pydantic_base() -> type | None:
    """``pydantic.BaseModel`` if pydantic is already imported, else ``None`` (never imports it)."""
    module = sys.modules.get("pydantic.main")
    return getattr(module, "BaseModel", None) if module is not None else None


def _key(key: t.Any) -> str:
    """Convert a mapping key to a JSON object key."""
    if type(key) is str:
        return key
    if isinstance(key, enum.Enum):
        key = key.value
    if isinstance(key, str):
        return str.__str__(key)
    if isinstance(key, (int, float)) and not isinstance(key, bool):
        return str(key)
    raise Unconvertible(
        key, "is not a valid JSON object key: keys must be str, int, float or an Enum of those."
    )


def _finite(value: float | decimal.Decimal) -> None:
    if not (value.is_finite() if isinstance(value, decimal.Decimal) else math.isfinite(value)):
        raise Unconvertible(value, f"is {value}, which JSON cannot hold; return None or a string.")


#: The types of plain JSON.
_PLAIN_JSON = frozenset({dict, list, str, int, float, bool, type(None)})
#: Tell whether every type an iterable yields is a plain JSON type.
_is_plain_type_of_all = _PLAIN_JSON.issuperset
#: Find ``null`` in JSON bytes: the regular expression engine's literal search scans
#: 4 MB in 1.4 ms where ``b"null" in data`` takes 2 ms.
_find_null = re.compile(b"null").search
#: orjson refuses deeper nesting, so the walk never goes further.
_MAX_DEPTH = 256


def plain_json_bytes(value: t.Any) -> bytes | None:
    """Return the compact UTF-8 JSON of ``value`` if it is plain JSON already, else ``None``.

    Plain JSON is what :func:`to_json` would return unchanged: exact ``dict`` (string
    keys), ``list``, ``str``, ``int``, finite ``float``, ``bool`` and ``None``, with no
    lone surrogate and integers within 64 bits. ``None`` also when orjson is not
    installed: the caller converts (or encodes) the value the slow way.

    orjson checks most of it while it encodes; what it would accept besides (tuples,
    Enum members, UUIDs) is found by :func:`_only_plain_types`, and NaN or infinity
    (written as ``null``) by looking at the floats only when ``null`` occurs.
    """
    # orjson refuses (None) what is not plain JSON, but for tuples, Enum members, UUIDs
    # and NaN or infinite floats (written as null): the rest of the check is below.
    encoded = strict_dumps_bytes(value)
    if encoded is not None and _only_plain_types(
        value, check_floats=_find_null(encoded) is not None
    ):
        return encoded
    return None


def converted_json_bytes(value: t.Any) -> tuple[bytes, bool] | None:
    """Return the compact UTF-8 JSON of :func:`to_json`'s conversion of ``value``, written
    from ``value`` itself, and whether ``value`` is plain JSON; ``None`` when orjson cannot
    write it so.

    orjson's strict mode (see :func:`~flask_mcp.json_codec.strict_dumps_bytes`) refuses
    what :func:`to_json` would convert to something else (subclasses, dates, dataclasses,
    non-string keys...) and writes the few other types it takes as :func:`to_json`
    converts them: a tuple as an array, an Enum member as its value, a UUID as its
    canonical string. So when the bytes hold no ``null`` they are right, and ``value``
    is not walked (``False``: it may hold those types; convert what is handed on with
    :func:`convert_encoded`). ``null`` may stand for NaN or an infinity, which
    :func:`to_json` refuses: then ``value`` is walked as :func:`plain_json_bytes` does
    (``True``), and ``None`` unless it is plain JSON. ``None`` too when orjson is not
    installed or refuses ``value``. An ``orjson.Fragment``, which :func:`to_json`
    refuses, is written as the JSON it holds where ``value`` is not walked (and
    :func:`convert_encoded` hands on that JSON).
    """
    encoded = strict_dumps_bytes(value)
    if encoded is None:
        return None
    if _find_null(encoded) is None:
        return encoded, False
    return (encoded, True) if _only_plain_types(value, check_floats=True) else None


def convert_encoded(value: t.Any, written: bytes | None = None) -> t.Any:
    """:func:`to_json` of a value :func:`converted_json_bytes` wrote, without encoding it again.

    Its floats are finite (its bytes hold no ``null``), so only the walk of the types
    tells whether it is returned itself or converted. The one thing orjson wrote that
    the table refuses is an ``orjson.Fragment`` (bytes written as they are, which
    cannot be read back from it): then the copy is ``written`` decoded, the JSON the
    client got, so that middleware sees what was sent.

    :param written: the bytes :func:`converted_json_bytes` returned for ``value``.
    :raises Unconvertible: ``value`` holds a Fragment and ``written`` is ``None``.
    """
    if (type(value) is dict or type(value) is list) and _only_plain_types(
        value, check_floats=False
    ):
        return value
    try:
        return _convert(value)
    except Unconvertible:
        if written is None:
            raise
        return loads(written)


#: Tell whether a type is exactly ``float`` (a C call, for :func:`_floats_finite`).
_is_float_type = functools.partial(operator.is_, float)


def _floats_finite(level: list[t.Any]) -> bool:
    """Tell whether every float of ``level`` is finite, in C loops (no Python call per item)."""
    floats = itertools.compress(level, map(_is_float_type, map(type, level)))
    return all(map(math.isfinite, floats))


def _only_plain_types(value: t.Any, *, check_floats: bool) -> bool:
    """Tell whether everything inside ``value`` (an exact dict or list) has a plain JSON type.

    One level of nesting at a time, in C loops: :func:`gc.get_referents` lists the
    keys and items of every container of the level (strings and numbers have none),
    and the set of their types must hold only plain JSON types.
    """
    level: list[t.Any] = [value]
    for _ in range(_MAX_DEPTH):
        level = gc.get_referents(*level)
        if not level:
            return True
        if not _is_plain_type_of_all(map(type, level)):  # no set built: stops at the first
            return False
        if check_floats and not _floats_finite(level):
            return False
    return False


def to_json(value: t.Any) -> t.Any:
    """Convert ``value`` to plain JSON data (dict, list, str, int, float, bool, None).

    A dict or list that is plain JSON already is returned itself (no copy); any
    other value is converted to new objects.

    :raises Unconvertible: ``value`` or something inside it is not in the table of
        this module.
    """
    cls = type(value)
    if cls in _PLAIN:
        return value
    if (cls is dict or cls is list) and plain_json_bytes(value) is not None:
        return value
    return _convert(value)


def _convert(value: t.Any) -> t.Any:
    """Convert ``value`` by the table, copying every container."""
    cls = type(value)
    if cls in _PLAIN:
        return value
    if cls is float:
        _finite(value)
        return value
    if cls is dict or cls is list or cls is tuple:
        return _container(value)
    return _other(value)


def _container(value: t.Any) -> t.Any:
    """Convert a mapping or a sequence, noting where a refused item sits."""
    if isinstance(value, cabc.Mapping):
        out: dict[str, t.Any] = {}
        for key, item in value.items():
            name = _key(key)
            try:
                out[name] = _convert(item)
            except Unconvertible as exc:
                exc.path.insert(0, name)
                raise
        if len(out) != len(value):
            raise Unconvertible(
                value, "has two keys that become the same JSON key; make the keys distinct."
            )
        return out
    items = []
    for index, item in enumerate(value):
        try:
            items.append(_convert(item))
        except Unconvertible as exc:
            exc.path.insert(0, index)
            raise
    return items


def _other(value: t.Any) -> t.Any:
    """Convert everything but the exact builtin types :func:`to_json` handles first."""
    if isinstance(value, enum.Enum):
        return _convert(value.value)
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        _finite(value)
        return float(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return _container(fields)
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return _container(value._asdict())
    if isinstance(value, (cabc.Mapping, list, tuple, set, frozenset)):
        return _container(value)
    if isinstance(value, (datetime.date, datetime.time)):  # datetime is a date
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, decimal.Decimal):
        _finite(value)
        return str(value)
    if isinstance(value, pathlib.PurePath):
        return str(value)
    base = pydantic_base()
    if base is not None and isinstance(value, base):
        return value.model_dump(mode="json", by_alias=True)  # type: ignore[attr-defined]
    if isinstance(value, (bytes, bytearray, memoryview)):
        raise Unconvertible(
            value,
            "cannot be converted to JSON: encode them (base64) into a string, or return them"
            " as the whole result of a tool declared with mime_type=.",
        )
    raise Unconvertible(value)


__all__ = [
    "ACCEPTED",
    "Unconvertible",
    "convert_encoded",
    "converted_json_bytes",
    "location",
    "plain_json_bytes",
    "pydantic_base",
    "to_json",
    "type_name",
]
