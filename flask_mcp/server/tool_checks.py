"""Checks of a tool's signature at registration: what it publishes, and what cannot work.

- A parameter without a type annotation publishes ``{}`` (any JSON value) in the
  ``inputSchema``: clients and models cannot tell what to send. It warns with
  :class:`~flask_mcp.RegistrationWarning`.
- A return annotation that cannot be described in JSON Schema gives no
  ``outputSchema``. The spec makes the output schema optional (a tool without one
  returns unstructured content), so an annotation whose values can still be sent (a
  ``dict`` subclass, a ``Mapping``, a ``Protocol``) warns. A class whose instances
  :func:`~flask_mcp.convert.to_json` refuses (a plain class) would make every call
  fail with "cannot be sent": it is refused at registration with ``TypeError``.
"""

from __future__ import annotations

import collections.abc as cabc
import dataclasses
import datetime
import decimal
import enum
import inspect
import pathlib
import sys
import typing as t
import uuid
import warnings

from .. import content as content_mod
from ..convert import ACCEPTED
from ..convert import pydantic_base
from ..errors import RegistrationWarning
from ..schema.types import UNION_TYPES
from ..schema.types import NoneType
from ..schema.types import resolved_hints

#: Classes whose instances the result conversion accepts (as JSON or as content).
_SENDABLE: tuple[type, ...] = (
    str,
    int,
    float,
    bool,
    cabc.Mapping,
    list,
    tuple,
    set,
    frozenset,
    enum.Enum,
    datetime.date,
    datetime.time,
    uuid.UUID,
    decimal.Decimal,
    pathlib.PurePath,
    bytes,
    bytearray,
    memoryview,
    content_mod.ToolResult,
)


def _never_sendable(hint: t.Any) -> bool:
    """Whether ``hint`` is a class none of whose instances a tool result can carry."""
    if not isinstance(hint, type) or hint is object:
        return False
    if dataclasses.is_dataclass(hint) or issubclass(hint, _SENDABLE):
        return False
    base = pydantic_base()
    return base is None or not issubclass(hint, base)


def _mentions_binary(hint: t.Any) -> bool:
    """Whether ``hint`` is or holds ``bytes``, ``bytearray`` or ``memoryview``."""
    if isinstance(hint, type) and issubclass(hint, (bytes, bytearray, memoryview)):
        return True
    return any(_mentions_binary(arg) for arg in t.get_args(hint))


def check_tool(
    fn: t.Callable[..., t.Any],
    name: str,
    *,
    exclude: t.Collection[str],
    derived_input: bool,
    has_output: bool,
    localns: t.Mapping[str, t.Any],
) -> None:
    """Warn about what a tool's signature publishes by accident; refuse what cannot work.

    :param derived_input: whether the ``inputSchema`` comes from the signature.
    :param has_output: whether the tool has an ``outputSchema`` (or asked for none).
    :raises TypeError: the return annotation is a class no result can carry.
    """
    signature = inspect.signature(fn)
    if derived_input:
        untyped = [
            p
            for n, p in signature.parameters.items()
            if n not in exclude and p.annotation is inspect.Parameter.empty
        ]
        if untyped:
            names = ", ".join(p.name for p in untyped)
            warnings.warn(
                f"The tool {name!r} ({_where(fn)}) has parameters without a type annotation"
                f" ({names}): the inputSchema publishes {{}} for them (any JSON value), so"
                f" clients and models cannot tell what to send. Annotate them, such as"
                f" `{untyped[0].name}: str`, or `{untyped[0].name}: typing.Any` to accept any"
                " JSON value on purpose.",
                RegistrationWarning,
                stacklevel=_user_stacklevel(),
            )
    if has_output:
        return
    hint = resolved_hints(fn, signature, localns).get("return", inspect.Signature.empty)
    bare = t.get_args(hint)[0] if t.get_origin(hint) is t.Annotated else hint
    members = t.get_args(bare) if t.get_origin(bare) in UNION_TYPES else (bare,)
    trivial = (str, bytes, None, NoneType, t.Any, object, inspect.Signature.empty)
    if (
        all(m in trivial for m in members)
        or any(isinstance(m, type) and issubclass(m, content_mod.ToolResult) for m in members)
        or _mentions_binary(hint)  # binary content blocks, with the tool's mime_type
    ):
        return
    if all(m in trivial or _never_sendable(m) for m in members):
        shown = ", ".join(getattr(m, "__qualname__", repr(m)) for m in members if m not in trivial)
        raise TypeError(
            f"The tool {name!r} ({_where(fn)}) is annotated to return {shown}, which a tool"
            f" result cannot carry: every call would fail. Make it a dataclass, a TypedDict or"
            f" a pydantic model, or convert it in the function and return one of: {ACCEPTED}."
        )
    warnings.warn(
        f"The tool {name!r} ({_where(fn)}) has a return annotation, {hint!r}, that cannot be"
        " described in JSON Schema, so it publishes no outputSchema and returns unstructured"
        " content. Annotate a describable type (dict[str, ...], a TypedDict, a dataclass, a"
        " pydantic model), pass output_schema=, or structured_output=False to say no schema"
        " is meant.",
        RegistrationWarning,
        stacklevel=_user_stacklevel(),
    )


def _user_stacklevel() -> int:
    """The ``stacklevel`` that points a warning at the first frame outside Flask-MCP."""
    package = pathlib.Path(__file__).resolve().parent.parent
    frame = sys._getframe(1)  # the caller of this function: the frame that warns
    level = 1
    while frame is not None and pathlib.Path(frame.f_code.co_filename).is_relative_to(package):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level


def _where(fn: t.Callable[..., t.Any]) -> str:
    """``module.qualname`` of a function, to find it."""
    module = getattr(fn, "__module__", None) or "?"
    return f"{module}.{getattr(fn, '__qualname__', repr(fn))}"


__all__ = ["check_tool"]
