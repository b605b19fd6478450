"""A stand-in for the ``Extension`` base of the extension seam, until the seam is merged.

The Skills and Server Card extensions are written against the contract of
``/work/plan/EXTENSION_API.md`` (issue 27): ``flask_mcp.Extension`` with its
``id``, ``capability()``, ``setup(mcp)``, ``init_app(app, mcp)`` and the
``Extension.method(name)`` decorator. This module has the same names and
signatures so that the extensions can be built and tested before the kernel
provides them. When the seam lands, the two imports of it (in
``extensions/skills/extension.py`` and ``extensions/server_card.py``) change to
``from ..kernel.extension import Extension`` and this module goes.
"""

from __future__ import annotations

import re
import typing as t

if t.TYPE_CHECKING:
    from flask import Flask

F = t.TypeVar("F", bound=t.Callable[..., t.Any])

#: ``{vendor-prefix}/{name}``: a reverse-DNS prefix, a slash and a name.
EXTENSION_ID = re.compile(r"^[a-z][a-z0-9-]*(\.[a-z0-9-]+)+/[A-Za-z0-9][A-Za-z0-9._-]*$")


class MethodSpec(t.NamedTuple):
    """What :meth:`Extension.method` records on a handler."""

    name: str
    eras: frozenset[str] | None
    user_code: bool


class Extension:
    """Base class of an extension: its identifier, capability, methods and hooks."""

    #: The extension's identifier, ``"{vendor-prefix}/{name}"``.
    id: t.ClassVar[str] = ""
    #: Extra keyword options this extension adds to ``@mcp.tool(...)``.
    tool_options: t.ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: t.Any) -> None:
        super().__init_subclass__(**kwargs)
        if not EXTENSION_ID.match(cls.id):
            raise TypeError(
                f"{cls.__name__}.id = {cls.id!r} is not an extension identifier: use "
                "'{vendor-prefix}/{name}', for example 'com.example/echo'."
            )

    @staticmethod
    def method(
        name: str, *, eras: t.Iterable[str] | None = None, user_code: bool = False
    ) -> t.Callable[[F], F]:
        """Mark a method of the extension as the handler of the request ``name``."""

        def decorator(fn: F) -> F:
            fn.__mcp_method__ = MethodSpec(  # type: ignore[attr-defined]
                name, None if eras is None else frozenset(eras), user_code
            )
            return fn

        return decorator

    @classmethod
    def methods(cls) -> dict[str, str]:
        """Return the request methods this extension handles, mapped to attribute names."""
        found: dict[str, str] = {}
        for attribute in dir(cls):
            spec = getattr(getattr(cls, attribute, None), "__mcp_method__", None)
            if isinstance(spec, MethodSpec):
                found[spec.name] = attribute
        return found

    def capability(self) -> dict[str, t.Any] | None:
        """Return the settings under ``capabilities.extensions[self.id]`` (None: not declared)."""
        return {}

    def setup(self, mcp: t.Any) -> None:
        """Declare what the extension adds to ``mcp`` (once, from ``mcp.add_extension``)."""

    def init_app(self, app: Flask, mcp: t.Any) -> None:
        """Check the declarations and add routes for ``app`` (from ``MCP.init_app``)."""


__all__ = ["EXTENSION_ID", "Extension", "MethodSpec"]
